package sdk

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"

	pb "github.com/bulwark-iac/bulwark/sdk/proto/providerv1"
)

// recorder is a fake Provider that records every call it receives and
// behaves as its fields say: err is returned by every method but GetSchema,
// panicWith makes every method but GetSchema panic, schemaErr and
// schemaPanic break GetSchema.
type recorder struct {
	mu    sync.Mutex
	calls []string
	reqs  []any

	err         error
	panicWith   any
	diags       Diagnostics // returned in every response
	schemaErr   error
	schemaPanic bool
}

func (r *recorder) record(method string, req any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, method)
	r.reqs = append(r.reqs, req)
}

// Calls returns the methods called, in order.
func (r *recorder) Calls() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.calls...)
}

// count returns how many times method was called.
func (r *recorder) count(method string) int {
	n := 0
	for _, c := range r.Calls() {
		if c == method {
			n++
		}
	}
	return n
}

// last returns the last request method received.
func (r *recorder) last(method string) any {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := len(r.calls) - 1; i >= 0; i-- {
		if r.calls[i] == method {
			return r.reqs[i]
		}
	}
	return nil
}

func (r *recorder) misbehave() error {
	if r.panicWith != nil {
		panic(r.panicWith)
	}
	return r.err
}

func (r *recorder) GetSchema(_ context.Context, req *GetSchemaRequest) (*GetSchemaResponse, error) {
	r.record("GetSchema", req)
	if r.schemaPanic {
		panic("schema panic")
	}
	if r.schemaErr != nil {
		return nil, r.schemaErr
	}
	return &GetSchemaResponse{ProviderName: "fake", ProviderVersion: "0.0.1", ResourceTypes: []ResourceType{bucketType}}, nil
}

func (r *recorder) Configure(_ context.Context, req *ConfigureRequest) (*ConfigureResponse, error) {
	r.record("Configure", req)
	if err := r.misbehave(); err != nil {
		return nil, err
	}
	return &ConfigureResponse{Diagnostics: r.diags}, nil
}

func (r *recorder) ValidateResource(_ context.Context, req *ValidateResourceRequest) (*ValidateResourceResponse, error) {
	r.record("ValidateResource", req)
	if err := r.misbehave(); err != nil {
		return nil, err
	}
	return &ValidateResourceResponse{Diagnostics: r.diags}, nil
}

func (r *recorder) Read(_ context.Context, req *ReadRequest) (*ReadResponse, error) {
	r.record("Read", req)
	if err := r.misbehave(); err != nil {
		return nil, err
	}
	return &ReadResponse{Exists: true, ID: "id-" + req.Name, Attributes: Attributes{"name": req.Name}, Diagnostics: r.diags}, nil
}

func (r *recorder) Create(_ context.Context, req *CreateRequest) (*CreateResponse, error) {
	r.record("Create", req)
	if err := r.misbehave(); err != nil {
		return nil, err
	}
	return &CreateResponse{ID: "id-" + req.Name, Attributes: Attributes{"arn": "arn:" + req.Name}, Diagnostics: r.diags}, nil
}

func (r *recorder) Update(_ context.Context, req *UpdateRequest) (*UpdateResponse, error) {
	r.record("Update", req)
	if err := r.misbehave(); err != nil {
		return nil, err
	}
	return &UpdateResponse{Attributes: Attributes{"arn": "arn:" + req.Name}, Diagnostics: r.diags}, nil
}

func (r *recorder) Delete(_ context.Context, req *DeleteRequest) (*DeleteResponse, error) {
	r.record("Delete", req)
	if err := r.misbehave(); err != nil {
		return nil, err
	}
	return &DeleteResponse{Diagnostics: r.diags}, nil
}

func dyn(t *testing.T, a Attributes) *pb.DynamicValue {
	t.Helper()
	v, err := toDynamic(a)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// onlyError returns the single error diagnostic of ds, failing otherwise.
func onlyError(t *testing.T, ds []*pb.Diagnostic) *pb.Diagnostic {
	t.Helper()
	var errs []*pb.Diagnostic
	for _, d := range ds {
		if d.GetSeverity() != pb.Diagnostic_SEVERITY_WARNING {
			errs = append(errs, d)
		}
	}
	if len(errs) != 1 {
		t.Fatalf("want exactly one error diagnostic, got %v", ds)
	}
	if errs[0].GetSeverity() != pb.Diagnostic_SEVERITY_ERROR {
		t.Errorf("severity %v, want SEVERITY_ERROR", errs[0].GetSeverity())
	}
	return errs[0]
}

var goodConfig = Attributes{"name": "b", "id_hint": "h"}

func TestServerDeleteProtection(t *testing.T) {
	tests := []struct {
		name       string
		protection pb.Protection
		reaches    bool
	}{
		{"protected is refused", pb.Protection_PROTECTION_PROTECTED, false},
		{"durable reaches the provider", pb.Protection_PROTECTION_DURABLE, true},
		{"ephemeral reaches the provider", pb.Protection_PROTECTION_EPHEMERAL, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recorder{}
			s := newServer(rec)
			resp, err := s.Delete(context.Background(), &pb.Delete_Request{
				Type: "bucket", Name: "vault", Id: "id-1", Protection: tt.protection,
				Attributes: dyn(t, Attributes{"arn": "x"}),
			})
			if err != nil {
				t.Fatalf("Delete returned a transport error %v; refusals travel as diagnostics", err)
			}
			if got := rec.count("Delete"); got != map[bool]int{true: 1, false: 0}[tt.reaches] {
				t.Fatalf("provider Delete called %d times (calls %v)", got, rec.Calls())
			}
			if !tt.reaches {
				d := onlyError(t, resp.GetDiagnostics())
				want := ErrProtectedDelete("bucket", "vault")
				if d.GetSummary() != want.Summary || d.GetDetail() != want.Detail {
					t.Errorf("diagnostic %q/%q, want %q/%q", d.GetSummary(), d.GetDetail(), want.Summary, want.Detail)
				}
				if !strings.Contains(d.GetSummary(), "vault") || !strings.Contains(d.GetSummary(), "protected") {
					t.Errorf("summary %q does not name the resource and its level", d.GetSummary())
				}
				if len(rec.Calls()) != 0 {
					t.Errorf("the provider saw %v for a refused delete", rec.Calls())
				}
				return
			}
			if len(resp.GetDiagnostics()) != 0 {
				t.Errorf("unexpected diagnostics %v", resp.GetDiagnostics())
			}
			got := rec.last("Delete").(*DeleteRequest)
			want := &DeleteRequest{Type: "bucket", Name: "vault", ID: "id-1", Attributes: Attributes{"arn": "x"}, Protection: fromProtection(tt.protection)}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("provider got %+v, want %+v", got, want)
			}
		})
	}
}

// A protected Delete is refused even when the request is otherwise broken or
// the provider would panic or error: the refusal comes first.
func TestServerDeleteProtectedWhateverElse(t *testing.T) {
	tests := []struct {
		name string
		rec  *recorder
		req  *pb.Delete_Request
	}{
		{"bad attributes", &recorder{}, &pb.Delete_Request{Type: "bucket", Name: "a", Attributes: &pb.DynamicValue{Json: []byte("{")}, Protection: pb.Protection_PROTECTION_PROTECTED}},
		{"unknown type", &recorder{}, &pb.Delete_Request{Type: "nope", Name: "a", Protection: pb.Protection_PROTECTION_PROTECTED}},
		{"panicking provider", &recorder{panicWith: "x"}, &pb.Delete_Request{Type: "bucket", Name: "a", Protection: pb.Protection_PROTECTION_PROTECTED}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := newServer(tt.rec).Delete(context.Background(), tt.req)
			if err != nil {
				t.Fatal(err)
			}
			d := onlyError(t, resp.GetDiagnostics())
			if !strings.Contains(d.GetSummary(), "refused to delete protected") {
				t.Errorf("summary %q", d.GetSummary())
			}
			if n := len(tt.rec.Calls()); n != 0 {
				t.Errorf("provider called: %v", tt.rec.Calls())
			}
		})
	}
}

// Every method that takes a config checks it against the schema first: the
// provider never sees a config with an unknown attribute.
func TestServerChecksConfigBeforeProvider(t *testing.T) {
	bad := Attributes{"name": "b", "id_hint": "h", "colour": "red"}
	type call func(s *server, cfg *pb.DynamicValue) ([]*pb.Diagnostic, error)
	methods := []struct {
		method string
		call   call
	}{
		{"ValidateResource", func(s *server, cfg *pb.DynamicValue) ([]*pb.Diagnostic, error) {
			r, err := s.ValidateResource(context.Background(), &pb.ValidateResource_Request{Type: "bucket", Name: "b", Config: cfg})
			return r.GetDiagnostics(), err
		}},
		{"Create", func(s *server, cfg *pb.DynamicValue) ([]*pb.Diagnostic, error) {
			r, err := s.Create(context.Background(), &pb.Create_Request{Type: "bucket", Name: "b", Config: cfg, IdempotencyKey: "k"})
			return r.GetDiagnostics(), err
		}},
		{"Update", func(s *server, cfg *pb.DynamicValue) ([]*pb.Diagnostic, error) {
			r, err := s.Update(context.Background(), &pb.Update_Request{Type: "bucket", Name: "b", Id: "i", Config: cfg})
			return r.GetDiagnostics(), err
		}},
	}
	cases := []struct {
		name string
		cfg  *pb.DynamicValue
		path []string
		text string
	}{
		{"unknown attribute", dyn(t, bad), []string{"colour"}, `unknown attribute "colour"`},
		{"missing required", dyn(t, Attributes{"id_hint": "h"}), []string{"name"}, "missing required"},
		{"wrong type", dyn(t, Attributes{"name": 1.0, "id_hint": "h"}), []string{"name"}, "must be a string"},
		{"computed set", dyn(t, Attributes{"name": "b", "id_hint": "h", "arn": "x"}), []string{"arn"}, "computed"},
		{"undecodable config", &pb.DynamicValue{Json: []byte("{nope")}, nil, "decode attributes"},
	}
	for _, m := range methods {
		for _, c := range cases {
			t.Run(m.method+"/"+c.name, func(t *testing.T) {
				rec := &recorder{}
				ds, err := m.call(newServer(rec), c.cfg)
				if err != nil {
					t.Fatal(err)
				}
				d := onlyError(t, ds)
				if !reflect.DeepEqual(d.GetAttributePath(), c.path) {
					t.Errorf("attribute path %v, want %v", d.GetAttributePath(), c.path)
				}
				if !strings.Contains(d.GetSummary(), c.text) {
					t.Errorf("summary %q does not contain %q", d.GetSummary(), c.text)
				}
				if rec.count(m.method) != 0 {
					t.Errorf("provider %s was called with a bad config (calls %v)", m.method, rec.Calls())
				}
			})
		}
		t.Run(m.method+"/unknown type", func(t *testing.T) {
			rec := &recorder{}
			s := newServer(rec)
			var ds []*pb.Diagnostic
			var err error
			switch m.method {
			case "ValidateResource":
				var r *pb.ValidateResource_Response
				r, err = s.ValidateResource(context.Background(), &pb.ValidateResource_Request{Type: "buckt", Name: "b", Config: dyn(t, goodConfig)})
				ds = r.GetDiagnostics()
			case "Create":
				var r *pb.Create_Response
				r, err = s.Create(context.Background(), &pb.Create_Request{Type: "buckt", Name: "b", Config: dyn(t, goodConfig), IdempotencyKey: "k"})
				ds = r.GetDiagnostics()
			case "Update":
				var r *pb.Update_Response
				r, err = s.Update(context.Background(), &pb.Update_Request{Type: "buckt", Name: "b", Config: dyn(t, goodConfig)})
				ds = r.GetDiagnostics()
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := onlyError(t, ds); !strings.Contains(d.GetSummary(), `unknown resource type "buckt"`) {
				t.Errorf("summary %q", d.GetSummary())
			}
			if rec.count(m.method) != 0 {
				t.Errorf("provider %s called for an unknown type", m.method)
			}
		})
		t.Run(m.method+"/good config reaches provider", func(t *testing.T) {
			rec := &recorder{}
			ds, err := m.call(newServer(rec), dyn(t, goodConfig))
			if err != nil || len(ds) != 0 {
				t.Fatalf("good config: %v, %v", ds, err)
			}
			if rec.count(m.method) != 1 {
				t.Errorf("provider %s called %d times", m.method, rec.count(m.method))
			}
		})
	}
}

func TestServerSchemaReadOnce(t *testing.T) {
	rec := &recorder{}
	s := newServer(rec)
	for i := 0; i < 3; i++ {
		if _, err := s.ValidateResource(context.Background(), &pb.ValidateResource_Request{Type: "bucket", Name: "b", Config: dyn(t, goodConfig)}); err != nil {
			t.Fatal(err)
		}
	}
	if n := rec.count("GetSchema"); n != 1 {
		t.Errorf("GetSchema called %d times for three checks, want 1 (cached)", n)
	}
}

func TestServerBrokenSchemaRefusesConfigMethods(t *testing.T) {
	for _, rec := range []*recorder{{schemaErr: errors.New("no schema today")}, {schemaPanic: true}} {
		s := newServer(rec)
		r, err := s.Create(context.Background(), &pb.Create_Request{Type: "bucket", Name: "b", Config: dyn(t, goodConfig), IdempotencyKey: "k"})
		if err != nil {
			t.Fatal(err)
		}
		if !fromDiagnostics(r.GetDiagnostics()).HasError() {
			t.Errorf("Create went ahead without a schema: %v", r.GetDiagnostics())
		}
		if rec.count("Create") != 0 {
			t.Errorf("provider Create called without a schema")
		}
	}
}

func TestServerCreateNeedsIdempotencyKey(t *testing.T) {
	rec := &recorder{}
	r, err := newServer(rec).Create(context.Background(), &pb.Create_Request{Type: "bucket", Name: "b", Config: dyn(t, goodConfig)})
	if err != nil {
		t.Fatal(err)
	}
	d := onlyError(t, r.GetDiagnostics())
	if !strings.Contains(d.GetSummary(), "idempotency key") {
		t.Errorf("summary %q does not mention the idempotency key", d.GetSummary())
	}
	if rec.count("Create") != 0 {
		t.Errorf("provider Create called without an idempotency key")
	}
	if r.GetId() != "" {
		t.Errorf("refused create returned id %q", r.GetId())
	}
}

func TestServerCreatePassesRequest(t *testing.T) {
	rec := &recorder{}
	r, err := newServer(rec).Create(context.Background(), &pb.Create_Request{
		Type: "bucket", Name: "b", Config: dyn(t, goodConfig), IdempotencyKey: "op_1/step_2", Protection: pb.Protection_PROTECTION_DURABLE,
	})
	if err != nil || len(r.GetDiagnostics()) != 0 {
		t.Fatalf("create: %v %v", r.GetDiagnostics(), err)
	}
	want := &CreateRequest{Type: "bucket", Name: "b", Config: goodConfig, IdempotencyKey: "op_1/step_2", Protection: ProtectionDurable}
	if got := rec.last("Create"); !reflect.DeepEqual(got, want) {
		t.Errorf("provider got %+v, want %+v", got, want)
	}
	attrs, _ := fromDynamic(r.GetAttributes())
	if r.GetId() != "id-b" || !reflect.DeepEqual(attrs, Attributes{"arn": "arn:b"}) {
		t.Errorf("response id %q attrs %v", r.GetId(), attrs)
	}
}

// rpcs calls each method of s once with a valid request and returns the
// diagnostics of each.
func rpcs(t *testing.T, s *server) map[string][]*pb.Diagnostic {
	t.Helper()
	ctx := context.Background()
	out := map[string][]*pb.Diagnostic{}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("transport error %v: failures must travel as diagnostics", err)
		}
	}
	c, err := s.Configure(ctx, &pb.Configure_Request{Config: dyn(t, Attributes{"region": "x"})})
	must(err)
	out["Configure"] = c.GetDiagnostics()
	v, err := s.ValidateResource(ctx, &pb.ValidateResource_Request{Type: "bucket", Name: "b", Config: dyn(t, goodConfig)})
	must(err)
	out["ValidateResource"] = v.GetDiagnostics()
	r, err := s.Read(ctx, &pb.Read_Request{Type: "bucket", Name: "b", Id: "i"})
	must(err)
	out["Read"] = r.GetDiagnostics()
	cr, err := s.Create(ctx, &pb.Create_Request{Type: "bucket", Name: "b", Config: dyn(t, goodConfig), IdempotencyKey: "k"})
	must(err)
	out["Create"] = cr.GetDiagnostics()
	u, err := s.Update(ctx, &pb.Update_Request{Type: "bucket", Name: "b", Id: "i", Config: dyn(t, goodConfig)})
	must(err)
	out["Update"] = u.GetDiagnostics()
	d, err := s.Delete(ctx, &pb.Delete_Request{Type: "bucket", Name: "b", Id: "i", Protection: pb.Protection_PROTECTION_EPHEMERAL})
	must(err)
	out["Delete"] = d.GetDiagnostics()
	return out
}

func TestServerProviderFailuresBecomeDiagnostics(t *testing.T) {
	tests := []struct {
		name string
		rec  *recorder
		path []string
		text string
	}{
		{"panic", &recorder{panicWith: "kaboom"}, nil, "provider panicked: kaboom"},
		{"panic with an error value", &recorder{panicWith: errors.New("nil map")}, nil, "provider panicked: nil map"},
		{"plain error", &recorder{err: errors.New("quota exceeded")}, nil, "quota exceeded"},
		{"error that is a diagnostic keeps its path", &recorder{err: AttributeErrorf([]string{"size"}, "too big")}, []string{"size"}, "too big"},
		{"diagnostics in the response", &recorder{diags: Diagnostics{Errorf("no such zone")}}, nil, "no such zone"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := rpcs(t, newServer(tt.rec))
			for method, ds := range got {
				d := onlyError(t, ds)
				if !strings.Contains(d.GetSummary(), tt.text) {
					t.Errorf("%s: summary %q does not contain %q", method, d.GetSummary(), tt.text)
				}
				if !reflect.DeepEqual(d.GetAttributePath(), tt.path) {
					t.Errorf("%s: path %v, want %v", method, d.GetAttributePath(), tt.path)
				}
				if tt.rec.count(method) != 1 {
					t.Errorf("%s: provider called %d times", method, tt.rec.count(method))
				}
			}
			if len(got) != 6 {
				t.Errorf("checked %d methods", len(got))
			}
		})
	}
}

func TestServerWarningsPassThrough(t *testing.T) {
	rec := &recorder{diags: Diagnostics{{Severity: SeverityWarning, Summary: "deprecated"}}}
	for method, ds := range rpcs(t, newServer(rec)) {
		got := fromDiagnostics(ds)
		if got.HasError() || len(got) != 1 || got[0].Summary != "deprecated" {
			t.Errorf("%s: diagnostics %v, want the one warning", method, got)
		}
	}
}

func TestServerGetSchema(t *testing.T) {
	tests := []struct {
		name    string
		rec     *recorder
		want    string // provider name
		errText string // an error diagnostic containing this, or none
	}{
		{"ok", &recorder{}, "fake", ""},
		{"error", &recorder{schemaErr: errors.New("cannot")}, "", "cannot"},
		{"panic", &recorder{schemaPanic: true}, "", "provider panicked: schema panic"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := newServer(tt.rec).GetSchema(context.Background(), &pb.GetSchema_Request{})
			if err != nil {
				t.Fatal(err)
			}
			if r.GetProviderName() != tt.want {
				t.Errorf("provider name %q, want %q", r.GetProviderName(), tt.want)
			}
			if tt.errText == "" {
				if len(r.GetDiagnostics()) != 0 || len(r.GetResourceTypes()) != 1 {
					t.Errorf("schema %v", r)
				}
				return
			}
			if d := onlyError(t, r.GetDiagnostics()); !strings.Contains(d.GetSummary(), tt.errText) {
				t.Errorf("summary %q", d.GetSummary())
			}
		})
	}
}

// The zero request (every field unset) must not crash any method.
func TestServerZeroRequests(t *testing.T) {
	s := newServer(&recorder{})
	ctx := context.Background()
	if _, err := s.Configure(ctx, &pb.Configure_Request{}); err != nil {
		t.Error(err)
	}
	if r, _ := s.ValidateResource(ctx, &pb.ValidateResource_Request{}); !fromDiagnostics(r.GetDiagnostics()).HasError() {
		t.Error("ValidateResource of no type passed")
	}
	if _, err := s.Read(ctx, &pb.Read_Request{}); err != nil {
		t.Error(err)
	}
	if r, _ := s.Create(ctx, &pb.Create_Request{}); !fromDiagnostics(r.GetDiagnostics()).HasError() {
		t.Error("Create of nothing passed")
	}
	if r, _ := s.Update(ctx, &pb.Update_Request{}); !fromDiagnostics(r.GetDiagnostics()).HasError() {
		t.Error("Update of nothing passed")
	}
	if _, err := s.Delete(ctx, &pb.Delete_Request{}); err != nil {
		t.Error(err)
	}
}
