package mockprovider_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bulwark-iac/bulwark/plugins/mock/mockprovider"
	"github.com/bulwark-iac/bulwark/sdk"
)

// allTypes returns the six resource types both providers manage.
func allTypes() []string {
	return []string{"s3_bucket", "dynamodb_table", "network", "compute", "load_balancer", "generic"}
}

// configured returns a mock configured with cfg on dir.
func configured(t *testing.T, dir string, cfg sdk.Attributes, opts ...mockprovider.Option) sdk.Provider {
	t.Helper()
	p := mockprovider.New(opts...)
	resp, err := p.Configure(context.Background(), &sdk.ConfigureRequest{Config: cfg, DataDir: dir})
	if err != nil {
		t.Fatalf("Configure: %v", err)
	}
	if resp.Diagnostics.HasError() {
		t.Fatalf("Configure: %v", resp.Diagnostics)
	}
	return p
}

// closeProvider ends p as sdk.Serve does when the host disconnects.
func closeProvider(t *testing.T, p sdk.Provider) {
	t.Helper()
	if err := p.(sdk.Closer).Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

func create(t *testing.T, p sdk.Provider, typ, name, key string, cfg sdk.Attributes) *sdk.CreateResponse {
	t.Helper()
	resp, err := p.Create(context.Background(), &sdk.CreateRequest{Type: typ, Name: name, Config: cfg, IdempotencyKey: key})
	if err != nil {
		t.Fatalf("Create %s %s: %v", typ, name, err)
	}
	if resp.Diagnostics.HasError() {
		t.Fatalf("Create %s %s: %v", typ, name, resp.Diagnostics)
	}
	return resp
}

func read(t *testing.T, p sdk.Provider, req *sdk.ReadRequest) *sdk.ReadResponse {
	t.Helper()
	resp, err := p.Read(context.Background(), req)
	if err != nil {
		t.Fatalf("Read %+v: %v", req, err)
	}
	if resp.Diagnostics.HasError() {
		t.Fatalf("Read %+v: %v", req, resp.Diagnostics)
	}
	return resp
}

func worldResources(t *testing.T, dir string) int {
	t.Helper()
	p := configured(t, dir, nil)
	n := 0
	for _, typ := range allTypes() {
		for _, name := range []string{"a", "b", "compute", "network", "storage", "x"} {
			if read(t, p, &sdk.ReadRequest{Type: typ, Name: name}).Exists {
				n++
			}
		}
	}
	return n
}

func TestSchema(t *testing.T) {
	resp, err := mockprovider.New().GetSchema(context.Background(), &sdk.GetSchemaRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if resp.ProviderName != "mock" || resp.ProviderVersion != "0.1.0" {
		t.Fatalf("name/version = %s/%s", resp.ProviderName, resp.ProviderVersion)
	}
	if !resp.Capabilities.IdempotencyKeys {
		t.Error("the IdempotencyKeys capability is not declared")
	}
	cfgKeys := map[string]sdk.AttributeType{}
	for _, a := range resp.ProviderConfig {
		cfgKeys[a.Name] = a.Type
		if a.Sensitive != (a.Name == "token") || a.Required || a.Computed {
			t.Errorf("provider config %s = %+v", a.Name, a)
		}
	}
	if want := map[string]sdk.AttributeType{
		"fail_create": sdk.TypeList, "crash_create": sdk.TypeList, "fail_delete": sdk.TypeMap, "keep_delete": sdk.TypeList,
		"latency_ms": sdk.TypeNumber, "rate_limit": sdk.TypeNumber, "world": sdk.TypeString, "token": sdk.TypeString,
	}; !reflect.DeepEqual(cfgKeys, want) {
		t.Errorf("provider config schema %v, want %v", cfgKeys, want)
	}
	type want struct {
		typ      sdk.AttributeType
		forceNew bool
		computed bool
	}
	common := map[string]want{
		"secret":     {sdk.TypeString, false, false},
		"size":       {sdk.TypeNumber, false, false},
		"zone":       {sdk.TypeString, true, false},
		"tags":       {sdk.TypeMap, false, false},
		"created_at": {sdk.TypeString, false, true},
		"arn":        {sdk.TypeString, false, true},
	}
	extra := map[string]map[string]want{
		"s3_bucket":      {"bucket": {sdk.TypeString, true, false}},
		"dynamodb_table": {"table": {sdk.TypeString, true, false}, "hash_key": {sdk.TypeString, true, false}},
	}
	if len(resp.ResourceTypes) != len(allTypes()) {
		t.Fatalf("got %d types, want %d", len(resp.ResourceTypes), len(allTypes()))
	}
	for _, typ := range allTypes() {
		rt, ok := resp.ResourceType(typ)
		if !ok {
			t.Fatalf("type %s missing", typ)
		}
		ws := map[string]want{}
		for k, v := range common {
			ws[k] = v
		}
		for k, v := range extra[typ] {
			ws[k] = v
		}
		if len(rt.Attributes) != len(ws) {
			t.Errorf("%s: %d attributes, want %d", typ, len(rt.Attributes), len(ws))
		}
		for name, w := range ws {
			a, ok := rt.Attribute(name)
			if !ok || a.Type != w.typ || a.ForceNew != w.forceNew || a.Computed != w.computed || a.Required || a.Sensitive != (name == "secret") {
				t.Errorf("%s.%s = %+v, want %+v", typ, name, a, w)
			}
		}
	}
}

func TestCreateThenRead(t *testing.T) {
	cases := []struct {
		typ string
		cfg sdk.Attributes
	}{
		{"s3_bucket", sdk.Attributes{"bucket": "my-bucket", "size": 3.0}},
		{"dynamodb_table", sdk.Attributes{"table": "t", "hash_key": "pk", "zone": "z1"}},
		{"network", sdk.Attributes{"size": 1}},
		{"compute", nil},
		{"load_balancer", sdk.Attributes{"zone": "z2"}},
		{"generic", sdk.Attributes{}},
	}
	dir := t.TempDir()
	p := configured(t, dir, nil)
	for _, c := range cases {
		t.Run(c.typ, func(t *testing.T) {
			key := "op_1/" + c.typ
			cr := create(t, p, c.typ, "x", key, c.cfg)
			if !regexp.MustCompile(`^mock-` + c.typ + `-x-[0-9a-f]{8}$`).MatchString(cr.ID) {
				t.Errorf("id %q has the wrong form", cr.ID)
			}
			for k, v := range c.cfg {
				if fmt.Sprint(cr.Attributes[k]) != fmt.Sprint(v) {
					t.Errorf("attribute %s = %v, want %v", k, cr.Attributes[k], v)
				}
			}
			if _, err := time.Parse(time.RFC3339Nano, fmt.Sprint(cr.Attributes["created_at"])); err != nil {
				t.Errorf("created_at: %v", err)
			}
			if want := "mock:" + c.typ + ":x:" + cr.ID; cr.Attributes["arn"] != want {
				t.Errorf("arn = %v, want %s", cr.Attributes["arn"], want)
			}
			for _, req := range []*sdk.ReadRequest{
				{Type: c.typ, Name: "x", ID: cr.ID},
				{Type: c.typ, Name: "x", IdempotencyKey: key},
				{Type: c.typ, Name: "x", Config: c.cfg}, // by identity: type, name and zone
			} {
				rr := read(t, p, req)
				if !rr.Exists || rr.ID != cr.ID || !reflect.DeepEqual(rr.Attributes, cr.Attributes) {
					t.Errorf("Read %+v = %+v, want %s %v", req, rr, cr.ID, cr.Attributes)
				}
			}
		})
	}
	// A second instance on the same data folder (the next run) sees them,
	// from the log while the first has not ended, and from the world file
	// once it has.
	p2 := configured(t, dir, nil)
	if rr := read(t, p2, &sdk.ReadRequest{Type: "compute", Name: "x"}); !rr.Exists {
		t.Error("a fresh instance does not see the world")
	}
	fi, err := os.Stat(filepath.Join(dir, mockprovider.LogFile))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("log file mode = %v, want 0600", fi.Mode().Perm())
	}
	closeProvider(t, p)
	if _, err := os.Stat(filepath.Join(dir, mockprovider.LogFile)); !os.IsNotExist(err) {
		t.Errorf("the log outlived Close: %v", err)
	}
	if rr := read(t, configured(t, dir, nil), &sdk.ReadRequest{Type: "compute", Name: "x"}); !rr.Exists {
		t.Error("after Close a fresh instance does not see the world")
	}
	if rr := read(t, p2, &sdk.ReadRequest{Type: "network", Name: "x"}); !rr.Exists {
		t.Error("after the other's Close an instance does not see the world")
	}
	fi, err = os.Stat(filepath.Join(dir, mockprovider.WorldFile))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("world file mode = %v, want 0600", fi.Mode().Perm())
	}
}

func TestCreateIdempotent(t *testing.T) {
	dir := t.TempDir()
	p := configured(t, dir, nil)
	first := create(t, p, "network", "network", "k1", sdk.Attributes{"size": 1})
	second := create(t, p, "network", "network", "k1", sdk.Attributes{"size": 1})
	if first.ID != second.ID {
		t.Fatalf("same key made %s and %s", first.ID, second.ID)
	}
	// Same key from many goroutines at once: still one resource.
	var wg sync.WaitGroup
	ids := make([]string, 16)
	errs := make([]error, 16)
	for i := range ids {
		wg.Go(func() {
			resp, err := p.Create(context.Background(), &sdk.CreateRequest{Type: "compute", Name: "compute", IdempotencyKey: "k2"})
			if err == nil {
				ids[i] = resp.ID
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i := range ids {
		if errs[i] != nil || ids[i] != ids[0] {
			t.Fatalf("concurrent create %d: id %q err %v, want %q", i, ids[i], errs[i], ids[0])
		}
	}
	if n := worldResources(t, dir); n != 2 {
		t.Fatalf("world holds %d resources, want 2", n)
	}
	// A fresh instance (the next run) honours the key too.
	third := create(t, configured(t, dir, nil), "network", "network", "k1", nil)
	if third.ID != first.ID {
		t.Fatalf("after restart the key made %s, want %s", third.ID, first.ID)
	}
	// Another key for the same (type, name) is a conflict, not a duplicate.
	if _, err := p.Create(context.Background(), &sdk.CreateRequest{Type: "network", Name: "network", IdempotencyKey: "k3"}); !sdk.IsConflict(err) || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("create under another key: %v, want a conflict", err)
	}
	// A key reused for another resource is refused.
	if _, err := p.Create(context.Background(), &sdk.CreateRequest{Type: "generic", Name: "a", IdempotencyKey: "k1"}); err == nil {
		t.Fatal("a key reused for another resource was accepted")
	}
}

func TestConcurrentCreatesAndDeletes(t *testing.T) {
	dir := t.TempDir()
	p := configured(t, dir, sdk.Attributes{"latency_ms": 1})
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 24 {
		wg.Go(func() {
			ctx := context.Background()
			name := fmt.Sprintf("r%d", i)
			cr, err := p.Create(ctx, &sdk.CreateRequest{Type: "generic", Name: name, IdempotencyKey: "k-" + name})
			if err != nil {
				errs <- err
				return
			}
			if rr, err := p.Read(ctx, &sdk.ReadRequest{ID: cr.ID}); err != nil || !rr.Exists {
				errs <- fmt.Errorf("read %s: %v %v", name, rr, err)
				return
			}
			if i%2 == 0 {
				if _, err := p.Delete(ctx, &sdk.DeleteRequest{Type: "generic", Name: name, ID: cr.ID}); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for i := range 24 {
		rr := read(t, p, &sdk.ReadRequest{Type: "generic", Name: fmt.Sprintf("r%d", i)})
		if rr.Exists != (i%2 == 1) {
			t.Errorf("r%d exists = %v", i, rr.Exists)
		}
	}
}

func TestReadAbsent(t *testing.T) {
	p := configured(t, t.TempDir(), nil)
	create(t, p, "generic", "a", "k-a", nil)
	for _, req := range []*sdk.ReadRequest{
		{Type: "generic", Name: "b"},
		{Type: "generic", Name: "a", ID: "mock-generic-a-00000000"},
		{Type: "generic", Name: "a", IdempotencyKey: "no-such-key"},
	} {
		if rr := read(t, p, req); rr.Exists || rr.ID != "" {
			t.Errorf("Read %+v = %+v, want absent", req, rr)
		}
	}
}

func TestDelete(t *testing.T) {
	p := configured(t, t.TempDir(), nil)
	cr := create(t, p, "s3_bucket", "storage", "k", nil)
	cases := []struct {
		name string
		req  *sdk.DeleteRequest
	}{
		{"existing", &sdk.DeleteRequest{Type: "s3_bucket", Name: "storage", ID: cr.ID}},
		{"already gone", &sdk.DeleteRequest{Type: "s3_bucket", Name: "storage", ID: cr.ID}},
		{"never existed", &sdk.DeleteRequest{Type: "network", Name: "nothing", ID: "mock-network-nothing-12345678"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := p.Delete(context.Background(), c.req); err != nil {
				t.Fatalf("Delete: %v", err)
			}
			if rr := read(t, p, &sdk.ReadRequest{Type: c.req.Type, Name: c.req.Name, ID: c.req.ID}); rr.Exists {
				t.Fatal("still exists")
			}
		})
	}
	// Without an id nothing is deleted by name: it may be another stack's.
	other := create(t, p, "network", "shared", "k-other", nil)
	if _, err := p.Delete(context.Background(), &sdk.DeleteRequest{Type: "network", Name: "shared"}); err == nil || !strings.Contains(err.Error(), "no id") {
		t.Fatalf("Delete without an id: %v, want refused", err)
	}
	if !read(t, p, &sdk.ReadRequest{ID: other.ID}).Exists {
		t.Fatal("a Delete without an id deleted by name")
	}
	// Defence in depth: a protected Delete is refused even in-process.
	cr = create(t, p, "dynamodb_table", "db", "k-db", nil)
	if _, err := p.Delete(context.Background(), &sdk.DeleteRequest{Type: "dynamodb_table", Name: "db", ID: cr.ID, Protection: sdk.ProtectionProtected}); err == nil {
		t.Fatal("protected delete succeeded")
	}
	if !read(t, p, &sdk.ReadRequest{ID: cr.ID}).Exists {
		t.Fatal("protected resource deleted")
	}
}

// keep_delete answers a Delete of the names it lists ok and leaves the
// resource in place (a Read by id still finds it); other names are
// deleted, and an armed fail_delete counter still fails the call first.
func TestKeepDelete(t *testing.T) {
	p := configured(t, t.TempDir(), sdk.Attributes{"keep_delete": []any{"worker"}, "fail_delete": map[string]any{"worker[a]": 1}})
	kept := create(t, p, "compute", "worker[a]", "k1", nil)
	gone := create(t, p, "network", "net", "k2", nil)
	del := func(typ, name, id string) error {
		_, err := p.Delete(context.Background(), &sdk.DeleteRequest{Type: typ, Name: name, ID: id})
		return err
	}
	if err := del("compute", "worker[a]", kept.ID); err == nil || !strings.Contains(err.Error(), "injected failure") {
		t.Fatalf("first Delete: %v, want the armed fail_delete", err)
	}
	for i := range 2 {
		if err := del("compute", "worker[a]", kept.ID); err != nil {
			t.Fatalf("Delete %d of a kept name: %v, want ok", i, err)
		}
		if !read(t, p, &sdk.ReadRequest{Type: "compute", Name: "worker[a]", ID: kept.ID}).Exists {
			t.Fatalf("Delete %d of a kept name removed it", i)
		}
	}
	if err := del("network", "net", gone.ID); err != nil {
		t.Fatal(err)
	}
	if read(t, p, &sdk.ReadRequest{Type: "network", Name: "net", ID: gone.ID}).Exists {
		t.Fatal("a name keep_delete does not list was left in place")
	}
}

func TestUpdate(t *testing.T) {
	p := configured(t, t.TempDir(), nil)
	cr := create(t, p, "dynamodb_table", "db", "k", sdk.Attributes{"size": 1, "zone": "z1", "table": "t"})
	cases := []struct {
		name    string
		cfg     sdk.Attributes
		badAttr string // "" when the update must succeed
	}{
		{"size in place", sdk.Attributes{"size": 5, "zone": "z1", "table": "t"}, ""},
		{"size removed", sdk.Attributes{"zone": "z1", "table": "t"}, ""},
		{"zone is force_new", sdk.Attributes{"size": 5, "zone": "z2", "table": "t"}, "zone"},
		{"table is force_new", sdk.Attributes{"zone": "z1", "table": "u"}, "table"},
		{"hash_key is force_new", sdk.Attributes{"zone": "z1", "table": "t", "hash_key": "pk"}, "hash_key"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp, err := p.Update(context.Background(), &sdk.UpdateRequest{Type: "dynamodb_table", Name: "db", ID: cr.ID, PriorAttributes: cr.Attributes, Config: c.cfg})
			if err != nil {
				t.Fatalf("Update: %v", err)
			}
			if c.badAttr != "" {
				if !resp.Diagnostics.HasError() || len(resp.Diagnostics[0].AttributePath) != 1 || resp.Diagnostics[0].AttributePath[0] != c.badAttr {
					t.Fatalf("diagnostics %+v, want an error on %s", resp.Diagnostics, c.badAttr)
				}
				return
			}
			if resp.Diagnostics.HasError() {
				t.Fatal(resp.Diagnostics)
			}
			rr := read(t, p, &sdk.ReadRequest{Type: "dynamodb_table", Name: "db", Config: c.cfg})
			if rr.ID != cr.ID {
				t.Fatalf("id changed: %s -> %s", cr.ID, rr.ID)
			}
			if fmt.Sprint(rr.Attributes["size"]) != fmt.Sprint(c.cfg["size"]) && !(c.cfg["size"] == nil && rr.Attributes["size"] == nil) {
				t.Fatalf("size = %v, want %v", rr.Attributes["size"], c.cfg["size"])
			}
			if rr.Attributes["created_at"] != cr.Attributes["created_at"] {
				t.Fatal("created_at changed")
			}
		})
	}
	if _, err := p.Update(context.Background(), &sdk.UpdateRequest{Type: "generic", Name: "ghost", ID: "mock-generic-ghost-00000000"}); err == nil {
		t.Fatal("update of an absent resource succeeded")
	}
}

func TestConfigureRejects(t *testing.T) {
	cases := []struct {
		cfg  sdk.Attributes
		path []string
	}{
		{sdk.Attributes{"fail_creat": []any{"x"}}, []string{"fail_creat"}},
		{sdk.Attributes{"region": "us-east-1"}, []string{"region"}},
		{sdk.Attributes{"fail_create": "compute"}, []string{"fail_create"}},
		{sdk.Attributes{"crash_create": []any{1}}, []string{"crash_create"}},
		{sdk.Attributes{"keep_delete": "compute"}, []string{"keep_delete"}},
		{sdk.Attributes{"fail_delete": []any{"network"}}, []string{"fail_delete"}},
		{sdk.Attributes{"fail_delete": map[string]any{"network": -1}}, []string{"fail_delete", "network"}},
		{sdk.Attributes{"latency_ms": "5"}, []string{"latency_ms"}},
		{sdk.Attributes{"latency_ms": 1.5}, []string{"latency_ms"}},
		{sdk.Attributes{"rate_limit": -1}, []string{"rate_limit"}},
		{sdk.Attributes{"rate_limit": "50"}, []string{"rate_limit"}},
		{sdk.Attributes{"world": 3}, []string{"world"}},
		{sdk.Attributes{"world": ""}, []string{"world"}},
		{sdk.Attributes{"token": 12345}, []string{"token"}},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.path, "."), func(t *testing.T) {
			resp, err := mockprovider.New().Configure(context.Background(), &sdk.ConfigureRequest{Config: c.cfg, DataDir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			if len(resp.Diagnostics) != 1 || !resp.Diagnostics.HasError() || !reflect.DeepEqual(resp.Diagnostics[0].AttributePath, c.path) {
				t.Fatalf("diagnostics %+v, want one error at %v", resp.Diagnostics, c.path)
			}
		})
	}
	// Every known key with a good value, in Go's own types, is accepted.
	configured(t, t.TempDir(), sdk.Attributes{
		"fail_create": []string{"a"}, "crash_create": []any{"b"}, "keep_delete": []string{"d"},
		"fail_delete": map[string]int{"c": 2}, "latency_ms": 0, "rate_limit": 50,
		"world": filepath.Join(t.TempDir(), "w"), "token": "t0k3n",
	})
}

// Read reports the key each resource was created under, whichever way it
// finds it, in this run and the next.
func TestReadReportsKey(t *testing.T) {
	dir := t.TempDir()
	p := configured(t, dir, nil)
	cr := create(t, p, "s3_bucket", "storage", "bulwark:st:01J:01K", sdk.Attributes{"bucket": "b"})
	for _, req := range []*sdk.ReadRequest{
		{Type: "s3_bucket", Name: "storage", ID: cr.ID},
		{Type: "s3_bucket", Name: "storage", IdempotencyKey: "bulwark:st:01J:01K"},
		{Type: "s3_bucket", Name: "storage"},
	} {
		for _, q := range []sdk.Provider{p, configured(t, dir, nil)} {
			if rr := read(t, q, req); !rr.Exists || rr.IdempotencyKey != "bulwark:st:01J:01K" {
				t.Errorf("Read %+v = %+v, want the key", req, rr)
			}
		}
	}
}

// A Create whose (type, name) is taken under another key, or
// by a resource that carries none (one put in a shared world by hand), fails
// with a conflict naming the owner's key and leaves the resource as it was.
func TestCreateConflict(t *testing.T) {
	world := t.TempDir()
	alpha := configured(t, t.TempDir(), sdk.Attributes{"world": world})
	beta := configured(t, t.TempDir(), sdk.Attributes{"world": world})
	cr := create(t, alpha, "dynamodb_table", "database", "bulwark:alpha:L1:K1", sdk.Attributes{"table": "t", "size": 1})

	_, err := beta.Create(context.Background(), &sdk.CreateRequest{Type: "dynamodb_table", Name: "database", IdempotencyKey: "bulwark:beta:L2:K2", Config: sdk.Attributes{"table": "t", "size": 9}})
	if !sdk.IsConflict(err) {
		t.Fatalf("Create of a taken identity: %v, want a conflict", err)
	}
	if !strings.Contains(err.Error(), "bulwark:alpha:L1:K1") {
		t.Errorf("the conflict does not name the owner's key: %v", err)
	}
	rr := read(t, beta, &sdk.ReadRequest{Type: "dynamodb_table", Name: "database"})
	if rr.ID != cr.ID || rr.IdempotencyKey != "bulwark:alpha:L1:K1" || rr.Attributes["size"] != 1.0 {
		t.Fatalf("after the conflict the resource is %+v, want it untouched", rr)
	}
	if rr := read(t, beta, &sdk.ReadRequest{Type: "dynamodb_table", Name: "database", IdempotencyKey: "bulwark:beta:L2:K2"}); rr.Exists {
		t.Fatalf("the conflicting key finds %+v", rr)
	}
	// The owner's retry with its own key is still idempotent.
	if again := create(t, alpha, "dynamodb_table", "database", "bulwark:alpha:L1:K1", sdk.Attributes{"table": "t", "size": 1}); again.ID != cr.ID {
		t.Fatalf("the owner's retry made %s, want %s", again.ID, cr.ID)
	}

	// A resource with no key at all (made out of band) conflicts too.
	closeProvider(t, alpha)
	b, err := os.ReadFile(filepath.Join(world, mockprovider.WorldFile))
	if err != nil {
		t.Fatal(err)
	}
	b = []byte(strings.Replace(string(b), `"resources": [`, `"resources": [{"id": "oob-1", "type": "network", "name": "net", "idempotency_key": "", "attributes": {}},`, 1))
	if err := os.WriteFile(filepath.Join(world, mockprovider.WorldFile), b, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = beta.Create(context.Background(), &sdk.CreateRequest{Type: "network", Name: "net", IdempotencyKey: "bulwark:beta:L2:K3"})
	if !sdk.IsConflict(err) || !strings.Contains(err.Error(), "not created by bulwark") {
		t.Fatalf("Create over an out-of-band resource: %v, want a conflict saying bulwark did not make it", err)
	}
	if rr := read(t, beta, &sdk.ReadRequest{Type: "network", Name: "net"}); rr.ID != "oob-1" || rr.IdempotencyKey != "" {
		t.Fatalf("the out-of-band resource is now %+v", rr)
	}
}

// snapshot returns every entry below dir: path -> mode and content.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) && path == dir {
				return filepath.SkipAll
			}
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		v := fi.Mode().String()
		if fi.Mode().IsRegular() {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			v += " " + string(b)
		}
		out[path] = v
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// A read-only session (a plan) writes nothing anywhere: not
// the fail_delete counters a changed config would re-arm, not a world
// folder that does not exist yet; and it refuses every change.
func TestReadOnlySession(t *testing.T) {
	data := t.TempDir()
	cr := create(t, configured(t, data, sdk.Attributes{"fail_delete": map[string]any{"network": 1}}), "network", "network", "k", nil)
	missing := filepath.Join(t.TempDir(), "not", "yet")
	for name, cfg := range map[string]sdk.Attributes{
		"counters re-armed": {"fail_delete": map[string]any{"network": 2}},
		"counters dropped":  nil,
		"world not made":    {"world": missing},
	} {
		t.Run(name, func(t *testing.T) {
			before := snapshot(t, filepath.Dir(data))
			p := mockprovider.New()
			resp, err := p.Configure(context.Background(), &sdk.ConfigureRequest{Config: cfg, DataDir: data, ReadOnly: true})
			if err != nil || resp.Diagnostics.HasError() {
				t.Fatalf("Configure: %v %v", err, resp)
			}
			if _, err := p.GetSchema(context.Background(), &sdk.GetSchemaRequest{}); err != nil {
				t.Fatal(err)
			}
			if _, err := p.ValidateResource(context.Background(), &sdk.ValidateResourceRequest{Type: "network", Name: "network"}); err != nil {
				t.Fatal(err)
			}
			rr := read(t, p, &sdk.ReadRequest{Type: "network", Name: "network"})
			if inWorld := cfg["world"] == nil; rr.Exists != inWorld {
				t.Fatalf("Read = %+v", rr)
			}
			read(t, p, &sdk.ReadRequest{Type: "network", Name: "network", IdempotencyKey: "k"})
			for call, err := range map[string]error{
				"Create": func() error {
					_, err := p.Create(context.Background(), &sdk.CreateRequest{Type: "generic", Name: "g", IdempotencyKey: "k2"})
					return err
				}(),
				"Update": func() error {
					_, err := p.Update(context.Background(), &sdk.UpdateRequest{Type: "network", Name: "network", ID: cr.ID, Config: sdk.Attributes{"size": 3}})
					return err
				}(),
				"Delete": func() error {
					_, err := p.Delete(context.Background(), &sdk.DeleteRequest{Type: "network", Name: "network", ID: cr.ID})
					return err
				}(),
			} {
				if err == nil || !strings.Contains(err.Error(), "read-only") {
					t.Errorf("%s in a read-only session: %v, want refused", call, err)
				}
			}
			if after := snapshot(t, filepath.Dir(data)); !reflect.DeepEqual(before, after) {
				t.Fatalf("a read-only session changed the disk:\nbefore %v\nafter  %v", before, after)
			}
			if _, err := os.Stat(missing); !os.IsNotExist(err) {
				t.Fatalf("the world folder was made: %v", err)
			}
		})
	}
}

// Two providers with different data folders and one world folder see one
// reality: what one creates, the other reads, updates and deletes; the data
// folders stay empty.
func TestSharedWorld(t *testing.T) {
	world := filepath.Join(t.TempDir(), "made", "world")
	cfg := sdk.Attributes{"world": world}
	dirA, dirB := t.TempDir(), t.TempDir()
	a, b := configured(t, dirA, cfg), configured(t, dirB, cfg)
	cr := create(t, a, "network", "shared", "k1", sdk.Attributes{"size": 1, "secret": "s3cr3t"})
	rr := read(t, b, &sdk.ReadRequest{Type: "network", Name: "shared"})
	if !rr.Exists || rr.ID != cr.ID || rr.Attributes["secret"] != "s3cr3t" {
		t.Fatalf("the second provider reads %+v, want %s", rr, cr.ID)
	}
	if _, err := b.Create(context.Background(), &sdk.CreateRequest{Type: "network", Name: "shared", IdempotencyKey: "k2"}); err == nil {
		t.Fatal("the second provider created a second network shared in the same world")
	}
	if _, err := b.Delete(context.Background(), &sdk.DeleteRequest{Type: "network", Name: "shared", ID: cr.ID}); err != nil {
		t.Fatal(err)
	}
	if read(t, a, &sdk.ReadRequest{ID: cr.ID}).Exists {
		t.Fatal("deleted through one provider, still there for the other")
	}
	closeProvider(t, a)
	if fi, err := os.Stat(filepath.Join(world, mockprovider.WorldFile)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("world file: %v %v", fi, err)
	}
	for _, d := range []string{dirA, dirB} {
		if es, _ := os.ReadDir(d); len(es) != 0 {
			t.Errorf("data folder %s holds %v: the world lives elsewhere", d, es)
		}
	}
}

// Concurrent changes from providers sharing a world (as processes would)
// lose none of each other's resources.
func TestSharedWorldConcurrent(t *testing.T) {
	cfg := sdk.Attributes{"world": t.TempDir()}
	ps := []sdk.Provider{configured(t, t.TempDir(), cfg), configured(t, t.TempDir(), cfg)}
	var wg sync.WaitGroup
	for i, p := range ps {
		for j := range 10 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				name := fmt.Sprintf("r%d-%d", i, j)
				if _, err := p.Create(context.Background(), &sdk.CreateRequest{Type: "generic", Name: name, IdempotencyKey: name}); err != nil {
					t.Error(err)
				}
			}()
		}
	}
	wg.Wait()
	for i := range ps {
		for j := range 10 {
			if !read(t, ps[0], &sdk.ReadRequest{Type: "generic", Name: fmt.Sprintf("r%d-%d", i, j)}).Exists {
				t.Errorf("r%d-%d was lost", i, j)
			}
		}
	}
}

func TestNotConfigured(t *testing.T) {
	p := mockprovider.New()
	if _, err := p.Read(context.Background(), &sdk.ReadRequest{Type: "generic", Name: "a"}); err == nil {
		t.Fatal("Read before Configure succeeded")
	}
}

func TestFailCreate(t *testing.T) {
	dir := t.TempDir()
	p := configured(t, dir, sdk.Attributes{"fail_create": []any{"compute"}})
	for i := range 2 { // every time
		_, err := p.Create(context.Background(), &sdk.CreateRequest{Type: "compute", Name: "compute", IdempotencyKey: fmt.Sprintf("k%d", i)})
		if err == nil || sdk.DiagnosticsFromError(err)[0].Summary != "injected failure: create compute" {
			t.Fatalf("create %d: %v, want the injected failure", i, err)
		}
		if rr := read(t, p, &sdk.ReadRequest{Type: "compute", Name: "compute", IdempotencyKey: fmt.Sprintf("k%d", i)}); rr.Exists {
			t.Fatal("a failed create made something")
		}
	}
	if rr := read(t, p, &sdk.ReadRequest{Type: "compute", Name: "compute"}); rr.Exists {
		t.Fatal("a failed create made something")
	}
	// The fault is keyed by name: another resource of the same type is fine.
	create(t, p, "compute", "worker", "k-worker", nil)
}

// A bare name in fail_create names every instance of a count or for_each
// resource; an instance's address names that instance only (issue 23 item
// 7: the bare name used to match none).
func TestFailCreateInstances(t *testing.T) {
	dir := t.TempDir()
	p := configured(t, dir, sdk.Attributes{"fail_create": []any{"worker", "web[b]"}})
	for _, name := range []string{"worker[a]", "worker[0]", "worker", "web[b]"} {
		_, err := p.Create(context.Background(), &sdk.CreateRequest{Type: "compute", Name: name, IdempotencyKey: "k-" + name})
		if err == nil || sdk.DiagnosticsFromError(err)[0].Summary != "injected failure: create "+name {
			t.Fatalf("create %s: %v, want the injected failure", name, err)
		}
	}
	for _, name := range []string{"web[a]", "web", "workers[a]", "worker2"} {
		create(t, p, "compute", name, "k-"+name, nil)
	}
}

func TestFailDeleteCountedAcrossRuns(t *testing.T) {
	cases := []struct {
		n int
	}{{1}, {2}}
	for _, c := range cases {
		t.Run(fmt.Sprintf("n=%d", c.n), func(t *testing.T) {
			dir := t.TempDir()
			cfg := sdk.Attributes{"fail_delete": map[string]any{"network": c.n}}
			cr := create(t, configured(t, dir, cfg), "network", "network", "k", nil)
			del := &sdk.DeleteRequest{Type: "network", Name: "network", ID: cr.ID}
			// Each Delete runs in a fresh provider instance: a new run.
			for i := range c.n {
				p := configured(t, dir, cfg)
				_, err := p.Delete(context.Background(), del)
				if err == nil || sdk.DiagnosticsFromError(err)[0].Summary != "injected failure: delete network" {
					t.Fatalf("run %d: %v, want the injected failure", i, err)
				}
				if !read(t, p, &sdk.ReadRequest{ID: cr.ID}).Exists {
					t.Fatalf("run %d: a failed delete deleted", i)
				}
			}
			p := configured(t, dir, cfg)
			if _, err := p.Delete(context.Background(), del); err != nil {
				t.Fatalf("delete after %d failures: %v", c.n, err)
			}
			if read(t, p, &sdk.ReadRequest{ID: cr.ID}).Exists {
				t.Fatal("still exists")
			}
			// Other names are unaffected; a changed count re-arms.
			if _, err := configured(t, dir, cfg).Delete(context.Background(), &sdk.DeleteRequest{Type: "compute", Name: "compute", ID: "mock-compute-compute-00000000"}); err != nil {
				t.Fatal(err)
			}
			cfg2 := sdk.Attributes{"fail_delete": map[string]any{"network": c.n + 1}}
			if _, err := configured(t, dir, cfg2).Delete(context.Background(), del); err == nil {
				t.Fatal("a changed count did not re-arm the fault")
			}
		})
	}
}

func TestCrashCreate(t *testing.T) {
	dir := t.TempDir()
	cfg := sdk.Attributes{"crash_create": []any{"compute"}}
	var mu sync.Mutex
	var codes []int
	exit := func(code int) {
		mu.Lock()
		defer mu.Unlock()
		codes = append(codes, code)
	}
	p := configured(t, dir, cfg, mockprovider.WithExit(exit))
	_, err := p.Create(context.Background(), &sdk.CreateRequest{Type: "compute", Name: "compute", IdempotencyKey: "op_1:compute", Config: sdk.Attributes{"size": 2}})
	if err == nil {
		t.Fatal("Create returned normally after the crash hook")
	}
	if !reflect.DeepEqual(codes, []int{mockprovider.CrashExitCode}) {
		t.Fatalf("exit hook calls = %v, want [3]", codes)
	}
	// The next run finds the half-done Create by its key.
	p2 := configured(t, dir, cfg, mockprovider.WithExit(exit))
	rr := read(t, p2, &sdk.ReadRequest{Type: "compute", Name: "compute", IdempotencyKey: "op_1:compute"})
	if !rr.Exists || !strings.HasPrefix(rr.ID, "mock-compute-compute-") || rr.Attributes["size"] != 2.0 {
		t.Fatalf("Read by key after crash = %+v", rr)
	}
	// A retried Create with the same key returns it and does not crash again.
	cr := create(t, p2, "compute", "compute", "op_1:compute", sdk.Attributes{"size": 2})
	if cr.ID != rr.ID || len(codes) != 1 {
		t.Fatalf("retry made %s (want %s), exit calls %v", cr.ID, rr.ID, codes)
	}
}

func TestLatency(t *testing.T) {
	t.Run("sleeps", func(t *testing.T) {
		p := configured(t, t.TempDir(), sdk.Attributes{"latency_ms": 30})
		start := time.Now()
		read(t, p, &sdk.ReadRequest{Type: "generic", Name: "a"})
		if d := time.Since(start); d < 30*time.Millisecond {
			t.Fatalf("Read took %v, want >= 30ms", d)
		}
	})
	t.Run("honours ctx", func(t *testing.T) {
		dir := t.TempDir()
		p := configured(t, dir, sdk.Attributes{"latency_ms": 60_000})
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := p.Create(ctx, &sdk.CreateRequest{Type: "generic", Name: "a", IdempotencyKey: "k"})
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Create: %v, want deadline exceeded", err)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Fatalf("Create took %v despite the cancelled context", d)
		}
		if rr := read(t, configured(t, dir, nil), &sdk.ReadRequest{Type: "generic", Name: "a"}); rr.Exists {
			t.Fatal("a cancelled Create made something")
		}
	})
}

func TestTags(t *testing.T) {
	p := configured(t, t.TempDir(), nil)
	cr := create(t, p, "network", "net", "k", sdk.Attributes{"tags": map[string]any{"env": "dev"}, "zone": "z1"})
	if !reflect.DeepEqual(cr.Attributes["tags"], map[string]any{"env": "dev"}) {
		t.Fatalf("tags = %#v", cr.Attributes["tags"])
	}
	cases := []struct {
		name    string
		tags    any
		badPath []string // nil when the update must succeed
	}{
		{"changed in place", map[string]any{"env": "prod", "team": "a"}, nil},
		{"emptied", map[string]any{}, nil},
		{"removed", nil, nil},
		{"a number value", map[string]any{"env": 1.0}, []string{"tags", "env"}},
		{"not a map", []any{"a"}, []string{"tags"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := sdk.Attributes{"zone": "z1"}
			if c.tags != nil {
				cfg["tags"] = c.tags
			}
			vr, err := p.ValidateResource(context.Background(), &sdk.ValidateResourceRequest{Type: "network", Name: "net", Config: cfg})
			if err != nil {
				t.Fatal(err)
			}
			resp, err := p.Update(context.Background(), &sdk.UpdateRequest{Type: "network", Name: "net", ID: cr.ID, PriorAttributes: cr.Attributes, Config: cfg})
			if err != nil {
				t.Fatal(err)
			}
			if c.badPath != nil {
				for _, ds := range []sdk.Diagnostics{vr.Diagnostics, resp.Diagnostics} {
					if !ds.HasError() || !reflect.DeepEqual(ds[0].AttributePath, c.badPath) {
						t.Fatalf("diagnostics %+v, want an error on %v", ds, c.badPath)
					}
				}
				return
			}
			if vr.Diagnostics.HasError() || resp.Diagnostics.HasError() {
				t.Fatal(vr.Diagnostics, resp.Diagnostics)
			}
			rr := read(t, p, &sdk.ReadRequest{Type: "network", Name: "net", ID: cr.ID})
			if rr.ID != cr.ID || rr.Attributes["arn"] != cr.Attributes["arn"] {
				t.Fatalf("an in-place tags change moved the resource: %s %v", rr.ID, rr.Attributes["arn"])
			}
			if !reflect.DeepEqual(rr.Attributes["tags"], c.tags) && !(c.tags == nil && rr.Attributes["tags"] == nil) {
				t.Fatalf("tags = %#v, want %#v", rr.Attributes["tags"], c.tags)
			}
		})
	}
	if resp, err := p.Create(context.Background(), &sdk.CreateRequest{Type: "generic", Name: "g", IdempotencyKey: "k2", Config: sdk.Attributes{"tags": map[string]any{"n": true}}}); err != nil || !resp.Diagnostics.HasError() {
		t.Fatalf("Create with a bool tag = %+v, %v; want an error diagnostic", resp, err)
	}
}

// A resource's identity is its type, name and zone: another zone can exist
// beside it (a replace creates first), the same zone is a conflict, and a
// Read by identity finds the one of its zone.
func TestIdentityIncludesTheZone(t *testing.T) {
	p := configured(t, t.TempDir(), nil)
	a := create(t, p, "network", "vpc", "k1", sdk.Attributes{"zone": "a"})
	for _, tt := range []struct {
		name     string
		zone     string
		conflict bool
	}{
		{"another zone coexists", "b", false},
		{"the same zone is taken", "a", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := p.Create(context.Background(), &sdk.CreateRequest{Type: "network", Name: "vpc", IdempotencyKey: "k-" + tt.zone, Config: sdk.Attributes{"zone": tt.zone}})
			if tt.conflict {
				if err == nil || !sdk.IsConflict(err) {
					t.Fatalf("Create in zone %s: %v, %v; want a conflict", tt.zone, resp, err)
				}
				return
			}
			if err != nil || resp.ID == a.ID {
				t.Fatalf("Create in zone %s: %+v, %v", tt.zone, resp, err)
			}
			if rr := read(t, p, &sdk.ReadRequest{Type: "network", Name: "vpc", Config: sdk.Attributes{"zone": tt.zone}}); rr.ID != resp.ID {
				t.Errorf("Read by identity in zone %s found %s, want %s", tt.zone, rr.ID, resp.ID)
			}
			if rr := read(t, p, &sdk.ReadRequest{Type: "network", Name: "vpc", Config: sdk.Attributes{"zone": "a"}}); rr.ID != a.ID {
				t.Errorf("Read by identity in zone a found %s, want %s", rr.ID, a.ID)
			}
		})
	}
}

// A Delete with an expected key deletes only what carries that key, and
// decides under the world's lock: another stack sharing the world that
// claims the resource (after its owner released it) either claims it
// before the Delete, which then refuses and leaves it, or finds it gone.
// Never both: the claim kept and the resource deleted.
func TestDeleteChecksTheExpectedKey(t *testing.T) {
	ctx := context.Background()
	cfg := sdk.Attributes{"world": t.TempDir()}
	owner, other := configured(t, t.TempDir(), cfg), configured(t, t.TempDir(), cfg)
	if sc, err := owner.GetSchema(ctx, &sdk.GetSchemaRequest{}); err != nil || !sc.Capabilities.DeleteChecksKey {
		t.Fatal("the mock does not announce DeleteChecksKey")
	}
	cr := create(t, owner, "network", "n", "k-owner", nil)
	if _, err := owner.Delete(ctx, &sdk.DeleteRequest{Type: "network", Name: "n", ID: cr.ID, ExpectedKey: "k-someone-else"}); !sdk.IsConflict(err) {
		t.Fatalf("Delete expecting another key: %v, want a conflict", err)
	}
	if !read(t, owner, &sdk.ReadRequest{ID: cr.ID}).Exists {
		t.Fatal("a Delete expecting another key deleted it")
	}
	if _, err := owner.Delete(ctx, &sdk.DeleteRequest{Type: "network", Name: "n", ID: cr.ID, ExpectedKey: "k-owner"}); err != nil {
		t.Fatalf("Delete expecting its key: %v", err)
	}
	if read(t, owner, &sdk.ReadRequest{ID: cr.ID}).Exists {
		t.Fatal("a Delete expecting its own key left it")
	}
	if _, err := owner.Delete(ctx, &sdk.DeleteRequest{Type: "network", Name: "n", ID: cr.ID, ExpectedKey: "k-owner"}); err != nil {
		t.Fatalf("Delete of what is gone: %v, want ok", err)
	}

	for i := range 40 {
		name := fmt.Sprintf("r%d", i)
		cr := create(t, owner, "generic", name, "k-owner-"+name, nil)
		if _, err := owner.(sdk.Releaser).Release(ctx, &sdk.ReleaseRequest{Type: "generic", Name: name, ID: cr.ID, Key: "k-owner-" + name}); err != nil {
			t.Fatal(err)
		}
		var (
			wg        sync.WaitGroup
			delErr    error
			imp       *sdk.ImportResponse
			impErr    error
			claimedBy = "k-other-" + name
		)
		wg.Add(2)
		go func() {
			defer wg.Done()
			// The owner's record predates its release: it expects the
			// released key, as a stale record would.
			_, delErr = owner.Delete(ctx, &sdk.DeleteRequest{Type: "generic", Name: name, ID: cr.ID, ExpectedKey: "released:k-owner-" + name})
		}()
		go func() {
			defer wg.Done()
			imp, impErr = other.(sdk.Importer).Import(ctx, &sdk.ImportRequest{Type: "generic", Name: name, ID: cr.ID, ClaimKey: claimedBy})
		}()
		wg.Wait()
		if impErr != nil {
			t.Fatalf("%s: Import: %v", name, impErr)
		}
		there := read(t, other, &sdk.ReadRequest{ID: cr.ID})
		switch {
		case imp.Exists && imp.Claimed:
			if !sdk.IsConflict(delErr) || !there.Exists || there.IdempotencyKey != claimedBy {
				t.Fatalf("%s: claimed by the other stack, then the Delete answered %v and the resource is %+v", name, delErr, there)
			}
		case !imp.Exists:
			if delErr != nil || there.Exists {
				t.Fatalf("%s: the import found nothing, but the Delete answered %v and the resource is %+v", name, delErr, there)
			}
		default:
			t.Fatalf("%s: import answered %+v", name, imp)
		}
	}
}
