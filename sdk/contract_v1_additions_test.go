package sdk

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// keyed is a provider that uses the additions to v1: it reports keys,
// refuses taken identities with a conflict, describes its config and
// implements Importer.
type keyed struct {
	recorder
	imports, batches, validations int
	createBatches                 [][]string // the keys each CreateMany carried
}

// CreateMany answers each Create on its own: the one named "bad" fails
// alone, the others are made (ID "id-" and the name, the key in the
// attributes).
func (k *keyed) CreateMany(_ context.Context, req *CreateManyRequest) (*CreateManyResponse, error) {
	var keys []string
	out := &CreateManyResponse{}
	for _, r := range req.Creates {
		keys = append(keys, r.IdempotencyKey)
		if r.Name == "bad" {
			out.Results = append(out.Results, &CreateResponse{Diagnostics: Diagnostics{Errorf("cannot create bad")}})
			continue
		}
		out.Results = append(out.Results, &CreateResponse{ID: "id-" + r.Name, Attributes: Attributes{"key": r.IdempotencyKey}})
	}
	k.createBatches = append(k.createBatches, keys)
	return out, nil
}

// ValidateMany refuses the resource named "bad", and sees only what the
// schema accepts.
func (k *keyed) ValidateMany(_ context.Context, req *ValidateManyRequest) (*ValidateManyResponse, error) {
	k.validations++
	out := &ValidateManyResponse{}
	for _, r := range req.Resources {
		var ds Diagnostics
		if r.Name == "bad" {
			ds = Diagnostics{AttributeErrorf([]string{"name"}, "bad is not a good name")}
		}
		out.Results = append(out.Results, &ValidateResourceResponse{Diagnostics: ds})
	}
	return out, nil
}

func (k *keyed) GetSchema(ctx context.Context, req *GetSchemaRequest) (*GetSchemaResponse, error) {
	s, err := k.recorder.GetSchema(ctx, req)
	if err != nil {
		return nil, err
	}
	s.Capabilities = Capabilities{IdempotencyKeys: true, DeleteChecksKey: true}
	s.ProviderConfig = []Attribute{{Name: "token", Type: TypeString, Sensitive: true}, {Name: "region", Type: TypeString, Required: true}}
	return s, nil
}

func (k *keyed) Read(_ context.Context, req *ReadRequest) (*ReadResponse, error) {
	k.record("Read", req)
	return &ReadResponse{Exists: true, ID: "id-" + req.Name, IdempotencyKey: "bulwark:alpha:L:K1"}, nil
}

func (k *keyed) Create(_ context.Context, req *CreateRequest) (*CreateResponse, error) {
	k.record("Create", req)
	return &CreateResponse{Diagnostics: Diagnostics{Conflict(fmt.Sprintf("bucket %s already exists", req.Name), "bulwark:alpha:L:K1")}}, nil
}

func (k *keyed) Import(_ context.Context, req *ImportRequest) (*ImportResponse, error) {
	k.imports++
	return &ImportResponse{Exists: true, ID: req.ID, Attributes: Attributes{"name": req.Name}, IdempotencyKey: "k0"}, nil
}

// ReadMany answers each read as Read does, failing the one named "bad".
func (k *keyed) ReadMany(ctx context.Context, req *ReadManyRequest) (*ReadManyResponse, error) {
	k.batches++
	out := &ReadManyResponse{}
	for _, r := range req.Reads {
		if r.Name == "bad" {
			out.Results = append(out.Results, &ReadResponse{Diagnostics: Diagnostics{Errorf("cannot read bad")}})
			continue
		}
		rr, _ := k.Read(ctx, r)
		out.Results = append(out.Results, rr)
	}
	return out, nil
}

// The additions travel over the real transport: capabilities (Import and
// ReadMany detected by Serve, not declared), the provider's config schema, the key on
// Read, a conflict code on Create, ReadOnly on Configure.
func TestGRPCContractAdditions(t *testing.T) {
	impl := &keyed{}
	host := dispense(t, impl)
	ctx := context.Background()

	s, err := host.GetSchema(ctx, &GetSchemaRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if want := (Capabilities{IdempotencyKeys: true, Import: true, ReadMany: true, ValidateMany: true, CreateMany: true, CreateReadsBack: true, DeleteReadsBack: true, DeleteChecksKey: true}); s.Capabilities != want {
		t.Errorf("capabilities %+v, want %+v", s.Capabilities, want)
	}
	if len(s.ProviderConfig) != 2 || !s.ProviderConfig[0].Sensitive || !s.ProviderConfig[1].Required || s.ProviderConfig[0].Type != TypeString {
		t.Errorf("provider config %+v", s.ProviderConfig)
	}

	if _, err := host.Configure(ctx, &ConfigureRequest{DataDir: "/d", ReadOnly: true}); err != nil {
		t.Fatal(err)
	}
	if got := impl.last("Configure").(*ConfigureRequest); !got.ReadOnly {
		t.Errorf("configure got %+v, want ReadOnly", got)
	}

	r, err := host.Read(ctx, &ReadRequest{Type: "bucket", Name: "b"})
	if err != nil || r.IdempotencyKey != "bulwark:alpha:L:K1" {
		t.Errorf("read %+v %v: want the key", r, err)
	}

	cr, err := host.Create(ctx, &CreateRequest{Type: "bucket", Name: "b", Config: goodConfig, IdempotencyKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	if !IsConflict(cr.Diagnostics.Err()) || !strings.Contains(cr.Diagnostics.Error(), "bulwark:alpha:L:K1") {
		t.Errorf("create diagnostics %v: want a conflict naming the owner key", cr.Diagnostics)
	}

	imp := host.(Importer)
	ir, err := imp.Import(ctx, &ImportRequest{Type: "bucket", Name: "b", ID: "given"})
	if err != nil || !ir.Exists || ir.ID != "given" || ir.IdempotencyKey != "k0" || impl.imports != 1 {
		t.Errorf("import %+v %v (provider called %d times)", ir, err, impl.imports)
	}
	ir, err = imp.Import(ctx, &ImportRequest{Type: "bucket", Name: "b"})
	if err != nil || !ir.Diagnostics.HasError() || impl.imports != 1 {
		t.Errorf("import without an id: %+v %v; want refused before the provider", ir, err)
	}

	checkReadMany(t, host)
	if impl.batches != 1 {
		t.Errorf("ReadMany reached the provider's ReadMany %d times, want once", impl.batches)
	}
	checkValidateMany(t, host)
	if impl.validations != 1 {
		t.Errorf("ValidateMany reached the provider's ValidateMany %d times, want once", impl.validations)
	}
	checkCreateMany(t, host, true)
	if want := [][]string{{"ka", "kbad", "kd"}}; !reflect.DeepEqual(impl.createBatches, want) {
		t.Errorf("the provider's CreateMany was called with keys %v, want %v: what Serve refuses never reaches it", impl.createBatches, want)
	}
}

// checkCreateMany creates a, bad (the provider refuses it), c (a config
// the schema refuses), a's key again and d in one CreateMany: one result
// each, in order, each failure alone. A provider with CreateMany (batch)
// makes a and d with the key in the attributes; the recorder, through
// single Creates, without.
func checkCreateMany(t *testing.T, host Provider, batch bool) {
	t.Helper()
	resp, err := host.(BatchCreator).CreateMany(context.Background(), &CreateManyRequest{Creates: []*CreateRequest{
		{Type: "bucket", Name: "a", Config: goodConfig, IdempotencyKey: "ka"},
		{Type: "bucket", Name: "bad", Config: goodConfig, IdempotencyKey: "kbad"},
		{Type: "bucket", Name: "c", Config: Attributes{"name": "c", "no_such_attribute": 1}, IdempotencyKey: "kc"},
		{Type: "bucket", Name: "a2", Config: goodConfig, IdempotencyKey: "ka"},
		{Type: "bucket", Name: "d", Config: goodConfig, IdempotencyKey: "kd"},
		{Type: "bucket", Name: "e", Config: goodConfig},
	}})
	if err != nil || resp.Diagnostics.HasError() || len(resp.Results) != 6 {
		t.Fatalf("CreateMany: %v %+v", err, resp)
	}
	for i, want := range []string{"", "cannot create bad", "no_such_attribute", `idempotency key "ka" is also that of request 0`, "", "no idempotency key"} {
		r := resp.Results[i]
		if want == "" {
			name := []string{"a", "", "", "", "d"}[i]
			if r.Diagnostics.HasError() || r.ID != "id-"+name {
				t.Errorf("result %d = %+v, want %s made", i, r, name)
			}
			if batch && r.Attributes["key"] != "k"+name {
				t.Errorf("result %d = %+v, want its own key's", i, r)
			}
			continue
		}
		if want == "cannot create bad" && !batch {
			if r.Diagnostics.HasError() {
				t.Errorf("result %d = %+v: the recorder makes bad", i, r)
			}
			continue
		}
		if !r.Diagnostics.HasError() || !strings.Contains(r.Diagnostics.Error(), want) {
			t.Errorf("result %d = %+v, want its own error %q", i, r, want)
		}
	}
}

// checkValidateMany validates a, bad and one with an attribute the schema
// lacks in one ValidateMany: one result each, in order.
func checkValidateMany(t *testing.T, host Provider) {
	t.Helper()
	resp, err := host.(BatchValidator).ValidateMany(context.Background(), &ValidateManyRequest{Resources: []*ValidateResourceRequest{
		{Type: "bucket", Name: "a", Config: goodConfig},
		{Type: "bucket", Name: "bad", Config: goodConfig},
		{Type: "bucket", Name: "c", Config: Attributes{"name": "c", "no_such_attribute": 1}},
	}})
	if err != nil || resp.Diagnostics.HasError() || len(resp.Results) != 3 {
		t.Fatalf("ValidateMany: %v %+v", err, resp)
	}
	if resp.Results[0].Diagnostics.HasError() || !resp.Results[1].Diagnostics.HasError() || !resp.Results[2].Diagnostics.HasError() {
		t.Errorf("ValidateMany results %+v %+v %+v: want a alone valid", resp.Results[0], resp.Results[1], resp.Results[2])
	}
}

// checkReadMany reads a, bad and c in one ReadMany: one result each, in
// order, the failing one failing alone.
func checkReadMany(t *testing.T, host Provider) {
	t.Helper()
	resp, err := host.(BatchReader).ReadMany(context.Background(), &ReadManyRequest{Reads: []*ReadRequest{
		{Type: "bucket", Name: "a"}, {Type: "bucket", Name: "bad"}, {Type: "bucket", Name: "c", ID: "id-c"},
	}})
	if err != nil || resp.Diagnostics.HasError() {
		t.Fatalf("ReadMany: %v %v", err, resp)
	}
	if len(resp.Results) != 3 {
		t.Fatalf("ReadMany answered %d results, want 3", len(resp.Results))
	}
	for i, name := range []string{"a", "bad", "c"} {
		r := resp.Results[i]
		if name == "bad" {
			if !r.Diagnostics.HasError() {
				t.Errorf("result %d (%s) = %+v, want its error", i, name, r)
			}
			continue
		}
		if r.Diagnostics.HasError() || !r.Exists || r.ID != "id-"+name {
			t.Errorf("result %d (%s) = %+v", i, name, r)
		}
	}
}

// A provider written before the additions keeps working: no capabilities
// but the ones Serve answers for every provider (the read-backs, through
// its Read), and Import (which a host may still call) is a Read by id.
func TestGRPCOlderProviderIsConservative(t *testing.T) {
	rec := &recorder{}
	host := dispense(t, rec)
	ctx := context.Background()
	s, err := host.GetSchema(ctx, &GetSchemaRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Capabilities != (Capabilities{CreateReadsBack: true, DeleteReadsBack: true}) || s.ProviderConfig != nil {
		t.Errorf("an older provider reports capabilities %+v, config %+v", s.Capabilities, s.ProviderConfig)
	}
	ir, err := host.(Importer).Import(ctx, &ImportRequest{Type: "bucket", Name: "b", ID: "i"})
	if err != nil || !ir.Exists || ir.ID != "id-b" {
		t.Fatalf("import fallback %+v %v", ir, err)
	}
	if got := rec.last("Read"); !reflect.DeepEqual(got, &ReadRequest{Type: "bucket", Name: "b", ID: "i"}) {
		t.Errorf("fallback read %+v", got)
	}
	checkValidateMany(t, &refuseBad{host})
	// CreateMany, which a host calls only with the capability, is one
	// Create after the other, with the checks of Create.
	checkCreateMany(t, host, false)
	if got := rec.count("Create"); got != 3 {
		t.Errorf("CreateMany through Create reached the provider %d times, want 3 (a, bad, d)", got)
	}
	// ReadMany, which a host may still call, is one Read after the other.
	resp, err := host.(BatchReader).ReadMany(ctx, &ReadManyRequest{Reads: []*ReadRequest{{Type: "bucket", Name: "x"}, {Type: "bucket", Name: "y"}}})
	if err != nil || len(resp.Results) != 2 || resp.Results[0].ID != "id-x" || resp.Results[1].ID != "id-y" {
		t.Fatalf("ReadMany fallback %+v %v", resp, err)
	}
}

// A panic reaches the host as one line; the stack trace stays in the log.
func TestPanicIsOneLine(t *testing.T) {
	host := dispense(t, &recorder{panicWith: "multi\nline\tvalue"})
	r, err := host.Read(context.Background(), &ReadRequest{Type: "bucket", Name: "b"})
	if err != nil {
		t.Fatal(err)
	}
	msg := r.Diagnostics.Error()
	if strings.Contains(msg, "\n") || strings.Contains(msg, "goroutine") || !strings.Contains(msg, "provider panicked: multi line value") {
		t.Errorf("panic diagnostic %q: want one line without the trace", msg)
	}
}

func TestIsConflict(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"plain", fmt.Errorf("x"), false},
		{"diagnostic", Conflict("taken", ""), true},
		{"wrapped diagnostics", fmt.Errorf("create: %w", Diagnostics{Errorf("other"), Conflict("taken", "k")}), true},
		{"a warning is not", Diagnostics{{Severity: SeverityWarning, Code: CodeConflict}}, false},
		{"another code", Diagnostics{{Severity: SeverityError, Code: "other"}}, false},
	}
	for _, tt := range tests {
		if got := IsConflict(tt.err); got != tt.want {
			t.Errorf("%s: IsConflict = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// refuseBad answers ValidateMany through ValidateMany of an older provider
// (one ValidateResource after the other), refusing "bad" as keyed does.
type refuseBad struct{ Provider }

func (r *refuseBad) ValidateMany(ctx context.Context, req *ValidateManyRequest) (*ValidateManyResponse, error) {
	resp, err := r.Provider.(BatchValidator).ValidateMany(ctx, req)
	if err == nil && len(resp.Results) == len(req.Resources) {
		for i, v := range req.Resources {
			if v.Name == "bad" && !resp.Results[i].Diagnostics.HasError() {
				resp.Results[i].Diagnostics = Diagnostics{Errorf("bad")}
			}
		}
	}
	return resp, err
}
