package localprovider_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bulwark-iac/bulwark/plugins/local/localprovider"
	"github.com/bulwark-iac/bulwark/sdk"
)

// allTypes returns the six resource types both providers manage.
func allTypes() []string {
	return []string{"s3_bucket", "dynamodb_table", "network", "compute", "load_balancer", "generic"}
}

// configured returns a local provider configured with cfg on a fresh data
// folder, and that folder.
func configured(t *testing.T, cfg sdk.Attributes) (sdk.Provider, string) {
	t.Helper()
	dir := t.TempDir()
	return configuredOn(t, dir, cfg), dir
}

func configuredOn(t *testing.T, dir string, cfg sdk.Attributes) sdk.Provider {
	t.Helper()
	p := localprovider.New()
	resp, err := p.Configure(context.Background(), &sdk.ConfigureRequest{Config: cfg, DataDir: dir})
	if err != nil {
		t.Fatalf("Configure: %v", err)
	}
	if resp.Diagnostics.HasError() {
		t.Fatalf("Configure: %v", resp.Diagnostics)
	}
	return p
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

// resourceFolders lists the folders under root that hold metadata.
func resourceFolders(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Name() == localprovider.MetadataFile {
			rel, _ := filepath.Rel(root, filepath.Dir(path))
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func keyHash(key string) string {
	h := sha256.Sum256([]byte(key))
	return hex.EncodeToString(h[:8])
}

func TestSchema(t *testing.T) {
	resp, err := localprovider.New().GetSchema(context.Background(), &sdk.GetSchemaRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if resp.ProviderName != "local" || resp.ProviderVersion != "0.1.0" || len(resp.ResourceTypes) != len(allTypes()) {
		t.Fatalf("schema %s/%s with %d types", resp.ProviderName, resp.ProviderVersion, len(resp.ResourceTypes))
	}
	for _, typ := range allTypes() {
		rt, ok := resp.ResourceType(typ)
		if !ok {
			t.Fatalf("type %s missing", typ)
		}
		for _, c := range []struct {
			name               string
			typ                sdk.AttributeType
			forceNew, computed bool
		}{
			{"size", sdk.TypeNumber, false, false},
			{"zone", sdk.TypeString, true, false},
			{"path", sdk.TypeString, true, false},
			{"created_at", sdk.TypeString, false, true},
			{"folder", sdk.TypeString, false, true},
		} {
			a, ok := rt.Attribute(c.name)
			if !ok || a.Type != c.typ || a.ForceNew != c.forceNew || a.Computed != c.computed || a.Required {
				t.Errorf("%s.%s = %+v", typ, c.name, a)
			}
		}
	}
	s3, _ := resp.ResourceType("s3_bucket")
	if a, ok := s3.Attribute("bucket"); !ok || !a.ForceNew {
		t.Error("s3_bucket.bucket missing or not force_new")
	}
	ddb, _ := resp.ResourceType("dynamodb_table")
	for _, n := range []string{"table", "hash_key"} {
		if a, ok := ddb.Attribute(n); !ok || !a.ForceNew {
			t.Errorf("dynamodb_table.%s missing or not force_new", n)
		}
	}
}

func TestCreateThenRead(t *testing.T) {
	p, root := configured(t, nil)
	for _, typ := range allTypes() {
		t.Run(typ, func(t *testing.T) {
			key := "op_1:" + typ
			cfg := sdk.Attributes{"size": 2, "zone": "z1"}
			cr := create(t, p, typ, "x", key, cfg)
			if !regexp.MustCompile(`^local-` + typ + `-x-[0-9a-f]{8}$`).MatchString(cr.ID) {
				t.Errorf("id %q has the wrong form", cr.ID)
			}
			folder := filepath.Join(root, typ, "x")
			if cr.Attributes["folder"] != folder || cr.Attributes["size"] != 2.0 || cr.Attributes["zone"] != "z1" {
				t.Errorf("attributes %v", cr.Attributes)
			}
			if _, err := time.Parse(time.RFC3339Nano, fmt.Sprint(cr.Attributes["created_at"])); err != nil {
				t.Errorf("created_at: %v", err)
			}
			b, err := os.ReadFile(filepath.Join(folder, localprovider.MetadataFile))
			if err != nil {
				t.Fatal(err)
			}
			var m map[string]any
			if err := json.Unmarshal(b, &m); err != nil || m["id"] != cr.ID || m["idempotency_key"] != key || m["type"] != typ || m["name"] != "x" {
				t.Fatalf("metadata %s: %v", b, err)
			}
			for _, req := range []*sdk.ReadRequest{
				{Type: typ, Name: "x", ID: cr.ID},
				{Type: typ, Name: "x", IdempotencyKey: key},
				{Type: typ, Name: "x"},
			} {
				rr := read(t, p, req)
				if !rr.Exists || rr.ID != cr.ID || !reflect.DeepEqual(rr.Attributes, cr.Attributes) {
					t.Errorf("Read %+v = %+v, want %s %v", req, rr, cr.ID, cr.Attributes)
				}
			}
		})
	}
	// The next run (a fresh instance) sees the same ids.
	p2 := configuredOn(t, root, nil)
	for _, typ := range allTypes() {
		want := read(t, p, &sdk.ReadRequest{Type: typ, Name: "x"}).ID
		if got := read(t, p2, &sdk.ReadRequest{Type: typ, Name: "x"}).ID; got != want {
			t.Errorf("%s: id %s after restart, want %s", typ, got, want)
		}
	}
}

func TestSeedFiles(t *testing.T) {
	p, root := configured(t, nil)
	cases := []struct {
		typ  string
		cfg  sdk.Attributes
		file string // "" for no seed
		key  string // the row's key field
	}{
		{"s3_bucket", sdk.Attributes{"bucket": "b"}, "objects/seed.txt", ""},
		{"dynamodb_table", sdk.Attributes{"hash_key": "pk"}, "rows/seed.json", "pk"},
		{"dynamodb_table", nil, "rows/seed.json", "id"},
		{"network", nil, "", ""},
	}
	for i, c := range cases {
		name := fmt.Sprintf("r%d", i)
		create(t, p, c.typ, name, "k-"+name, c.cfg)
		folder := filepath.Join(root, c.typ, name)
		entries, err := os.ReadDir(folder)
		if err != nil {
			t.Fatal(err)
		}
		if c.file == "" {
			if len(entries) != 1 {
				t.Errorf("%s holds %d entries, want only the metadata", c.typ, len(entries))
			}
			continue
		}
		b, err := os.ReadFile(filepath.Join(folder, filepath.FromSlash(c.file)))
		if err != nil || len(b) == 0 {
			t.Fatalf("%s: seed %s: %v", c.typ, c.file, err)
		}
		if c.key != "" {
			var row map[string]any
			if err := json.Unmarshal(b, &row); err != nil || row[c.key] == nil {
				t.Errorf("%s: row %s: %v", c.typ, b, err)
			}
		}
	}
}

func TestFileModes(t *testing.T) {
	root := filepath.Join(t.TempDir(), "made", "by", "configure")
	p := configuredOn(t, t.TempDir(), sdk.Attributes{"root": root})
	create(t, p, "s3_bucket", "storage", "k1", nil)
	create(t, p, "dynamodb_table", "db", "k2", sdk.Attributes{"path": "deep/er/db"})
	create(t, p, "generic", "g", "k3", nil)
	cr := create(t, p, "generic", "h", "k4", nil)
	if _, err := p.Update(context.Background(), &sdk.UpdateRequest{Type: "generic", Name: "h", ID: cr.ID, Config: sdk.Attributes{"size": 9}}); err != nil {
		t.Fatal(err)
	}
	n := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		want := os.FileMode(0o600)
		if d.IsDir() {
			want = 0o700
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s has mode %v, want %v", path, fi.Mode().Perm(), want)
		}
		n++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 15 {
		t.Fatalf("walked only %d entries", n)
	}
}

func TestCreateIdempotent(t *testing.T) {
	p, root := configured(t, nil)
	first := create(t, p, "network", "network", "k1", nil)
	if second := create(t, p, "network", "network", "k1", nil); second.ID != first.ID {
		t.Fatalf("same key made %s and %s", first.ID, second.ID)
	}
	var wg sync.WaitGroup
	ids := make([]string, 16)
	errs := make([]error, 16)
	for i := range ids {
		wg.Go(func() {
			resp, err := p.Create(context.Background(), &sdk.CreateRequest{Type: "s3_bucket", Name: "storage", IdempotencyKey: "k2"})
			if err == nil {
				ids[i] = resp.ID
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i := range ids {
		if errs[i] != nil || ids[i] != ids[0] {
			t.Fatalf("concurrent create %d: %q %v, want %q", i, ids[i], errs[i], ids[0])
		}
	}
	if got := resourceFolders(t, root); !reflect.DeepEqual(got, []string{"network/network", "s3_bucket/storage"}) {
		t.Fatalf("resource folders %v", got)
	}
	if again := create(t, configuredOn(t, root, nil), "network", "network", "k1", nil); again.ID != first.ID {
		t.Fatalf("after restart the key made %s, want %s", again.ID, first.ID)
	}
	if _, err := p.Create(context.Background(), &sdk.CreateRequest{Type: "network", Name: "network", IdempotencyKey: "k3"}); !sdk.IsConflict(err) || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("create under another key: %v", err)
	}
}

func TestConcurrentCalls(t *testing.T) {
	p, root := configured(t, nil)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 20 {
		wg.Go(func() {
			ctx := context.Background()
			name := fmt.Sprintf("r%d", i)
			cr, err := p.Create(ctx, &sdk.CreateRequest{Type: allTypes()[i%len(allTypes())], Name: name, IdempotencyKey: "k-" + name})
			if err != nil {
				errs <- err
				return
			}
			if rr, err := p.Read(ctx, &sdk.ReadRequest{ID: cr.ID}); err != nil || !rr.Exists {
				errs <- fmt.Errorf("read %s: %v %v", name, rr, err)
				return
			}
			if i%2 == 0 {
				if _, err := p.Delete(ctx, &sdk.DeleteRequest{Type: allTypes()[i%len(allTypes())], Name: name, ID: cr.ID}); err != nil {
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
	if n := len(resourceFolders(t, root)); n != 10 {
		t.Fatalf("%d resource folders, want 10", n)
	}
}

func TestPathEscapeRejected(t *testing.T) {
	outside := t.TempDir()
	p, root := configured(t, nil)
	if err := os.Symlink(outside, filepath.Join(root, "out")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "nothing"), filepath.Join(root, "dangling")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(root, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../../"+filepath.Base(outside), filepath.Join(root, "sub", "rel")); err != nil && !os.IsExist(err) {
		t.Fatal(err)
	}
	cases := []string{
		"../x",
		"../../etc",
		"a/../../x",
		"a/../b",
		"/abs",
		outside,
		"",
		".",
		"./",
		"out",
		"out/x",
		"dangling",
		"dangling/x",
		".hidden",
		`a\..\..\x`,
	}
	for _, path := range cases {
		t.Run(path, func(t *testing.T) {
			cfg := sdk.Attributes{"path": path}
			vr, err := p.ValidateResource(context.Background(), &sdk.ValidateResourceRequest{Type: "generic", Name: "g", Config: cfg})
			if err != nil {
				t.Fatal(err)
			}
			if !vr.Diagnostics.HasError() || !reflect.DeepEqual(vr.Diagnostics[0].AttributePath, []string{"path"}) {
				t.Errorf("ValidateResource: %+v, want an error on path", vr.Diagnostics)
			}
			cr, err := p.Create(context.Background(), &sdk.CreateRequest{Type: "generic", Name: "g", Config: cfg, IdempotencyKey: "k"})
			ds := sdk.DiagnosticsFromError(err)
			if cr != nil {
				ds = append(ds, cr.Diagnostics...)
			}
			if !ds.HasError() || !reflect.DeepEqual(ds[0].AttributePath, []string{"path"}) {
				t.Errorf("Create: %+v, want an error on path", ds)
			}
		})
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Fatalf("something was made outside the root: %v", entries)
	}
	if got := resourceFolders(t, root); len(got) != 0 {
		t.Fatalf("resources made: %v", got)
	}
	// The same paths in one CreateMany, a good one among them: each is
	// refused on its own, from the walk the batch shares, and the good
	// one is made.
	var creates []*sdk.CreateRequest
	for i, path := range append(cases[:len(cases)/2:len(cases)/2], append([]string{"fine/g"}, cases[len(cases)/2:]...)...) {
		creates = append(creates, &sdk.CreateRequest{Type: "generic", Name: fmt.Sprintf("g%d", i), Config: sdk.Attributes{"path": path}, IdempotencyKey: fmt.Sprintf("k%d", i)})
	}
	resp, err := p.(sdk.BatchCreator).CreateMany(context.Background(), &sdk.CreateManyRequest{Creates: creates})
	if err != nil || resp.Diagnostics.HasError() {
		t.Fatalf("CreateMany: %v %v", err, resp)
	}
	for i, r := range resp.Results {
		good := creates[i].Config["path"] == "fine/g"
		if good != !r.Diagnostics.HasError() || !good && !reflect.DeepEqual(r.Diagnostics[0].AttributePath, []string{"path"}) {
			t.Errorf("CreateMany of path %q: %+v", creates[i].Config["path"], r)
		}
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Fatalf("CreateMany made something outside the root: %v", entries)
	}
	if got := resourceFolders(t, root); !reflect.DeepEqual(got, []string{"fine/g"}) {
		t.Fatalf("CreateMany made %v, want fine/g alone", got)
	}
	// A symlink that stays inside the root is followed.
	if err := os.Symlink("sub", filepath.Join(root, "in")); err != nil {
		t.Fatal(err)
	}
	cr := create(t, p, "generic", "g", "k-in", sdk.Attributes{"path": "in/g"})
	if cr.Attributes["folder"] != filepath.Join(root, "sub", "g") {
		t.Fatalf("folder %v, want %s", cr.Attributes["folder"], filepath.Join(root, "sub", "g"))
	}
	// Bad names are rejected too when there is no path.
	for _, name := range []string{"..", "a/b", ".x"} {
		cr, err := p.Create(context.Background(), &sdk.CreateRequest{Type: "generic", Name: name, IdempotencyKey: "k-" + name})
		if err == nil && !cr.Diagnostics.HasError() {
			t.Errorf("name %q accepted", name)
		}
	}
}

func TestPathAttribute(t *testing.T) {
	p, root := configured(t, nil)
	cr := create(t, p, "s3_bucket", "storage", "k1", sdk.Attributes{"path": "data/./buckets//storage"})
	folder := filepath.Join(root, "data", "buckets", "storage")
	if cr.Attributes["folder"] != folder {
		t.Fatalf("folder %v, want %s", cr.Attributes["folder"], folder)
	}
	if _, err := os.Stat(filepath.Join(folder, "objects", "seed.txt")); err != nil {
		t.Fatal(err)
	}
	// Not inside another resource, and never an existing foreign folder.
	if _, err := p.Create(context.Background(), &sdk.CreateRequest{Type: "generic", Name: "inner", IdempotencyKey: "k2", Config: sdk.Attributes{"path": "data/buckets/storage/inner"}}); err == nil {
		t.Error("a resource was made inside another")
	}
	if err := os.MkdirAll(filepath.Join(root, "mine"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "mine", "precious.txt"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := p.Create(context.Background(), &sdk.CreateRequest{Type: "generic", Name: "adopt", IdempotencyKey: "k3", Config: sdk.Attributes{"path": "mine"}})
	if ds := sdk.DiagnosticsFromError(err); !sdk.IsConflict(err) || !reflect.DeepEqual(ds[0].AttributePath, []string{"path"}) {
		t.Errorf("adopting a foreign folder: %v, want a conflict on path", err)
	}
	if _, err := os.Stat(filepath.Join(root, "mine", "precious.txt")); err != nil {
		t.Fatal("the foreign folder was touched")
	}
}

func TestReadAbsent(t *testing.T) {
	p, _ := configured(t, nil)
	create(t, p, "generic", "a", "k-a", nil)
	for _, req := range []*sdk.ReadRequest{
		{Type: "generic", Name: "b"},
		{Type: "generic", Name: "a", ID: "local-generic-a-00000000"},
		{Type: "generic", Name: "a", IdempotencyKey: "no-such-key"},
	} {
		if rr := read(t, p, req); rr.Exists {
			t.Errorf("Read %+v = %+v, want absent", req, rr)
		}
	}
}

func TestDelete(t *testing.T) {
	p, root := configured(t, nil)
	cr := create(t, p, "s3_bucket", "storage", "k", nil)
	cases := []struct {
		name string
		req  *sdk.DeleteRequest
	}{
		{"existing", &sdk.DeleteRequest{Type: "s3_bucket", Name: "storage", ID: cr.ID, Protection: sdk.ProtectionDurable}},
		{"already gone", &sdk.DeleteRequest{Type: "s3_bucket", Name: "storage", ID: cr.ID}},
		{"never existed", &sdk.DeleteRequest{Type: "network", Name: "nothing", ID: "local-network-nothing-12345678"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := p.Delete(context.Background(), c.req); err != nil {
				t.Fatalf("Delete: %v", err)
			}
			if read(t, p, &sdk.ReadRequest{Type: c.req.Type, Name: c.req.Name, ID: c.req.ID}).Exists {
				t.Fatal("still exists")
			}
		})
	}
	if _, err := os.Stat(filepath.Join(root, "s3_bucket", "storage")); !os.IsNotExist(err) {
		t.Fatalf("folder still there: %v", err)
	}
	// A removal cut short (the folder renamed and recorded, not yet
	// removed) is finished by the next call.
	leftover := filepath.Join(root, "s3_bucket", ".del-0123456789abcdef")
	if err := os.MkdirAll(filepath.Join(leftover, "objects"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := localprovider.RecordPending(root, "delete", leftover, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Delete(context.Background(), &sdk.DeleteRequest{Type: "network", Name: "nothing", ID: "local-network-nothing-12345678"}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(leftover); !os.IsNotExist(err) {
		t.Fatalf("leftover not removed: %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, localprovider.PendingFile)); !os.IsNotExist(err) {
		t.Fatalf("the pending record outlives what it recorded: %v", err)
	}
	// Without an id nothing is deleted by name: it may be another stack's.
	other := create(t, p, "network", "shared", "k-other", nil)
	if _, err := p.Delete(context.Background(), &sdk.DeleteRequest{Type: "network", Name: "shared"}); err == nil || !strings.Contains(err.Error(), "no id") {
		t.Fatalf("Delete without an id: %v, want refused", err)
	}
	if !read(t, p, &sdk.ReadRequest{ID: other.ID}).Exists {
		t.Fatal("a Delete without an id deleted by name")
	}
	// A protected Delete is refused even in-process.
	cr = create(t, p, "dynamodb_table", "db", "k-db", nil)
	if _, err := p.Delete(context.Background(), &sdk.DeleteRequest{Type: "dynamodb_table", Name: "db", ID: cr.ID, Protection: sdk.ProtectionProtected}); err == nil {
		t.Fatal("protected delete succeeded")
	}
	if !read(t, p, &sdk.ReadRequest{ID: cr.ID}).Exists {
		t.Fatal("protected resource deleted")
	}
}

func TestUpdate(t *testing.T) {
	p, root := configured(t, nil)
	cr := create(t, p, "s3_bucket", "storage", "k", sdk.Attributes{"size": 1, "zone": "z1", "bucket": "b"})
	cases := []struct {
		name    string
		cfg     sdk.Attributes
		badAttr string
	}{
		{"size in place", sdk.Attributes{"size": 5, "zone": "z1", "bucket": "b"}, ""},
		{"zone is force_new", sdk.Attributes{"zone": "z2", "bucket": "b"}, "zone"},
		{"bucket is force_new", sdk.Attributes{"zone": "z1", "bucket": "c"}, "bucket"},
		{"path is force_new", sdk.Attributes{"zone": "z1", "bucket": "b", "path": "elsewhere"}, "path"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp, err := p.Update(context.Background(), &sdk.UpdateRequest{Type: "s3_bucket", Name: "storage", ID: cr.ID, PriorAttributes: cr.Attributes, Config: c.cfg})
			if err != nil {
				t.Fatal(err)
			}
			if c.badAttr != "" {
				if !resp.Diagnostics.HasError() || !reflect.DeepEqual(resp.Diagnostics[0].AttributePath, []string{c.badAttr}) {
					t.Fatalf("diagnostics %+v, want an error on %s", resp.Diagnostics, c.badAttr)
				}
				return
			}
			rr := read(t, configuredOn(t, root, nil), &sdk.ReadRequest{Type: "s3_bucket", Name: "storage"})
			if rr.ID != cr.ID || rr.Attributes["size"] != 5.0 || rr.Attributes["created_at"] != cr.Attributes["created_at"] {
				t.Fatalf("after update: %+v (created %+v)", rr, cr)
			}
			if !reflect.DeepEqual(resp.Attributes, rr.Attributes) {
				t.Fatalf("Update returned %v, Read %v", resp.Attributes, rr.Attributes)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(root, "s3_bucket", "storage", "objects", "seed.txt")); err != nil {
		t.Fatalf("the update lost the seed: %v", err)
	}
}

func TestInterruptedCreate(t *testing.T) {
	t.Run("complete temp folder is finished", func(t *testing.T) {
		p, root := configured(t, nil)
		cr := create(t, p, "s3_bucket", "storage", "op_1:storage", nil)
		// The crash came after the metadata, before the rename.
		place, tmp := interruptAfterMetadata(t, root, "s3_bucket", "storage", "op_1:storage")
		p2 := configuredOn(t, root, nil)
		if rr := read(t, p2, &sdk.ReadRequest{Type: "s3_bucket", Name: "storage"}); rr.Exists {
			t.Fatal("a half-done create is visible by name")
		}
		rr := read(t, p2, &sdk.ReadRequest{Type: "s3_bucket", Name: "storage", IdempotencyKey: "op_1:storage"})
		if !rr.Exists || rr.ID != cr.ID {
			t.Fatalf("Read by key = %+v, want %s", rr, cr.ID)
		}
		if _, err := os.Stat(filepath.Join(place, "objects", "seed.txt")); err != nil {
			t.Fatalf("not finished: %v", err)
		}
		if _, err := os.Stat(tmp); !os.IsNotExist(err) {
			t.Fatalf("temp folder left: %v", err)
		}
	})
	for _, via := range []string{"read", "create"} {
		t.Run("incomplete temp folder is removed by "+via, func(t *testing.T) {
			p, root := configured(t, nil)
			tmp := filepath.Join(root, "dynamodb_table", ".tmp-00000000000000bb")
			if err := os.MkdirAll(filepath.Join(tmp, "rows"), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := localprovider.RecordPending(root, "create", tmp, "op_2:db"); err != nil {
				t.Fatal(err)
			}
			if via == "read" {
				if rr := read(t, p, &sdk.ReadRequest{Type: "dynamodb_table", Name: "db", IdempotencyKey: "op_2:db"}); rr.Exists {
					t.Fatal("an incomplete create reads as existing")
				}
				if _, err := os.Stat(tmp); !os.IsNotExist(err) {
					t.Fatalf("temp folder left: %v", err)
				}
			}
			cr := create(t, p, "dynamodb_table", "db", "op_2:db", nil)
			if rr := read(t, p, &sdk.ReadRequest{IdempotencyKey: "op_2:db"}); !rr.Exists || rr.ID != cr.ID {
				t.Fatalf("Read by key = %+v", rr)
			}
			if got := resourceFolders(t, root); !reflect.DeepEqual(got, []string{"dynamodb_table/db"}) {
				t.Fatalf("resource folders %v", got)
			}
			if _, err := os.Stat(tmp); !os.IsNotExist(err) {
				t.Fatalf("temp folder left: %v", err)
			}
		})
	}
}

// Folders named like the provider's transient ones that it
// did not make and record (a user's .del-<16 hex>, .tmp-<16 hex>, even one
// named from a key's hash as older versions named them) are never removed
// or renamed, by any call.
func TestUserFoldersThatLookTransientAreNeverRemoved(t *testing.T) {
	p, root := configured(t, nil)
	lookalikes := []string{
		filepath.Join(root, ".del-0123456789abcdef"),
		filepath.Join(root, "s3_bucket", ".del-fedcba9876543210"),
		filepath.Join(root, "deep", "er", ".del-00000000000000ff"),
		filepath.Join(root, "s3_bucket", ".tmp-"+keyHash("k1")),
		filepath.Join(root, "generic", ".tmp-0123456789abcdef"),
	}
	// A record naming a folder outside the root is not obeyed either.
	outside := filepath.Join(t.TempDir(), ".del-0123456789abcdef")
	lookalikes = append(lookalikes, outside)
	for _, d := range lookalikes {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "precious.txt"), []byte("mine"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := localprovider.RecordPending(root, "delete", outside, ""); err != nil {
		t.Fatal(err)
	}

	p = configuredOn(t, root, nil)
	read(t, p, &sdk.ReadRequest{Type: "s3_bucket", Name: "storage"})
	read(t, p, &sdk.ReadRequest{Type: "s3_bucket", Name: "storage", IdempotencyKey: "k1"})
	cr := create(t, p, "s3_bucket", "storage", "k1", nil)
	create(t, p, "generic", "g", "k2", nil)
	if _, err := p.Update(context.Background(), &sdk.UpdateRequest{Type: "s3_bucket", Name: "storage", ID: cr.ID, Config: sdk.Attributes{"size": 2}}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Delete(context.Background(), &sdk.DeleteRequest{Type: "s3_bucket", Name: "storage", ID: cr.ID}); err != nil {
		t.Fatal(err)
	}
	configuredOn(t, root, nil)
	for _, d := range lookalikes {
		if b, err := os.ReadFile(filepath.Join(d, "precious.txt")); err != nil || string(b) != "mine" {
			t.Errorf("%s: %q, %v: a folder the provider did not make was touched", d, b, err)
		}
	}
}

func TestConfigure(t *testing.T) {
	cases := []struct {
		name string
		cfg  sdk.Attributes
		path []string
	}{
		{"unknown key", sdk.Attributes{"rooot": "/tmp/x"}, []string{"rooot"}},
		{"root not a string", sdk.Attributes{"root": 3}, []string{"root"}},
		{"empty root", sdk.Attributes{"root": ""}, []string{"root"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp, err := localprovider.New().Configure(context.Background(), &sdk.ConfigureRequest{Config: c.cfg, DataDir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			if len(resp.Diagnostics) != 1 || !reflect.DeepEqual(resp.Diagnostics[0].AttributePath, c.path) {
				t.Fatalf("diagnostics %+v, want one error at %v", resp.Diagnostics, c.path)
			}
		})
	}
	t.Run("root", func(t *testing.T) {
		data := t.TempDir()
		root := filepath.Join(t.TempDir(), "new")
		p := configuredOn(t, data, sdk.Attributes{"root": root})
		create(t, p, "generic", "g", "k", nil)
		if _, err := os.Stat(filepath.Join(root, "generic", "g", localprovider.MetadataFile)); err != nil {
			t.Fatal(err)
		}
		if entries, _ := os.ReadDir(data); len(entries) != 0 {
			t.Fatalf("the data folder was used: %v", entries)
		}
	})
	t.Run("not configured", func(t *testing.T) {
		if _, err := localprovider.New().Read(context.Background(), &sdk.ReadRequest{Type: "generic", Name: "g"}); err == nil {
			t.Fatal("Read before Configure succeeded")
		}
	})
}

// Read reports the key each resource was created under, whichever way it
// finds it, in this run and the next.
func TestReadReportsKey(t *testing.T) {
	p, root := configured(t, nil)
	const key = "bulwark:st:01J:01K"
	cr := create(t, p, "s3_bucket", "storage", key, sdk.Attributes{"bucket": "b"})
	for _, req := range []*sdk.ReadRequest{
		{Type: "s3_bucket", Name: "storage", ID: cr.ID},
		{Type: "s3_bucket", Name: "storage", IdempotencyKey: key},
		{Type: "s3_bucket", Name: "storage"},
	} {
		for _, q := range []sdk.Provider{p, configuredOn(t, root, nil)} {
			if rr := read(t, q, req); !rr.Exists || rr.IdempotencyKey != key {
				t.Errorf("Read %+v = %+v, want the key", req, rr)
			}
		}
	}
	if rt, err := p.GetSchema(context.Background(), &sdk.GetSchemaRequest{}); err != nil || !rt.Capabilities.IdempotencyKeys ||
		len(rt.ProviderConfig) != 1 || rt.ProviderConfig[0].Name != "root" || rt.ProviderConfig[0].Type != sdk.TypeString {
		t.Errorf("GetSchema: capabilities and provider config %+v %v", rt, err)
	}
}

// Two stacks (two data folders) sharing a root. The second
// one's Create of the same type and name, or into a folder that exists, is
// a conflict naming the owner's key, and the folder is left as it was.
func TestCreateConflict(t *testing.T) {
	root := filepath.Join(t.TempDir(), "shared")
	cfg := sdk.Attributes{"root": root}
	alpha := configuredOn(t, t.TempDir(), cfg)
	beta := configuredOn(t, t.TempDir(), cfg)
	cr := create(t, alpha, "dynamodb_table", "database", "bulwark:alpha:L1:K1", sdk.Attributes{"table": "t"})
	before := snapshot(t, root)

	_, err := beta.Create(context.Background(), &sdk.CreateRequest{Type: "dynamodb_table", Name: "database", IdempotencyKey: "bulwark:beta:L2:K2", Config: sdk.Attributes{"table": "t"}})
	if !sdk.IsConflict(err) || !strings.Contains(err.Error(), "bulwark:alpha:L1:K1") {
		t.Fatalf("Create of a taken identity: %v, want a conflict naming the owner's key", err)
	}
	// The same folder under another name is the same identity.
	_, err = beta.Create(context.Background(), &sdk.CreateRequest{Type: "generic", Name: "squatter", IdempotencyKey: "bulwark:beta:L2:K3", Config: sdk.Attributes{"path": "dynamodb_table/database"}})
	if !sdk.IsConflict(err) || !strings.Contains(err.Error(), "bulwark:alpha:L1:K1") {
		t.Fatalf("Create into a resource's folder: %v, want a conflict naming the owner's key", err)
	}
	if after := snapshot(t, root); !reflect.DeepEqual(before, after) {
		t.Fatalf("a conflicting Create changed the root:\nbefore %v\nafter  %v", before, after)
	}
	rr := read(t, beta, &sdk.ReadRequest{Type: "dynamodb_table", Name: "database"})
	if rr.ID != cr.ID || rr.IdempotencyKey != "bulwark:alpha:L1:K1" {
		t.Fatalf("after the conflict: %+v", rr)
	}
	if again := create(t, alpha, "dynamodb_table", "database", "bulwark:alpha:L1:K1", sdk.Attributes{"table": "t"}); again.ID != cr.ID {
		t.Fatalf("the owner's retry made %s, want %s", again.ID, cr.ID)
	}

	// A folder a user made (no metadata) is a conflict with no owner key.
	if err := os.MkdirAll(filepath.Join(root, "network", "net"), 0o700); err != nil {
		t.Fatal(err)
	}
	_, err = beta.Create(context.Background(), &sdk.CreateRequest{Type: "network", Name: "net", IdempotencyKey: "bulwark:beta:L2:K4"})
	if !sdk.IsConflict(err) || !strings.Contains(err.Error(), "not created by bulwark") {
		t.Fatalf("Create into a user's folder: %v, want a conflict", err)
	}
	if es, err := os.ReadDir(filepath.Join(root, "network", "net")); err != nil || len(es) != 0 {
		t.Fatalf("the user's folder was touched: %v %v", es, err)
	}
}

// snapshot returns every entry below dir: path -> mode and content ("" for
// a dir that does not exist).
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
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

// A read-only session (a plan) writes nothing anywhere: it
// neither finishes a recorded Delete cut short nor settles a recorded
// Create, does not make a missing root, and refuses every change. The same
// leftovers are dealt with by the next session that may write.
func TestReadOnlySession(t *testing.T) {
	data := t.TempDir()
	p := configuredOn(t, data, nil)
	cr := create(t, p, "s3_bucket", "storage", "k-storage", nil)
	create(t, p, "generic", "g", "k-g", nil)
	// A Delete cut short, and a Create cut short after its metadata.
	doomed := filepath.Join(data, "network", ".del-00000000000000cc")
	if err := os.MkdirAll(doomed, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := localprovider.RecordPending(data, "delete", doomed, ""); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(data, "generic", ".tmp-00000000000000dd")
	if err := os.Rename(filepath.Join(data, "generic", "g"), tmp); err != nil {
		t.Fatal(err)
	}
	if err := localprovider.RecordPending(data, "create", tmp, "k-g"); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(t.TempDir(), "no", "root")

	for name, cfg := range map[string]sdk.Attributes{"data folder": nil, "missing root": {"root": missing}} {
		t.Run(name, func(t *testing.T) {
			before := snapshot(t, filepath.Dir(data))
			p := localprovider.New()
			resp, err := p.Configure(context.Background(), &sdk.ConfigureRequest{Config: cfg, DataDir: data, ReadOnly: true})
			if err != nil || resp.Diagnostics.HasError() {
				t.Fatalf("Configure: %v %v", err, resp)
			}
			if _, err := p.ValidateResource(context.Background(), &sdk.ValidateResourceRequest{Type: "generic", Name: "g"}); err != nil {
				t.Fatal(err)
			}
			inRoot := cfg == nil
			if rr := read(t, p, &sdk.ReadRequest{Type: "s3_bucket", Name: "storage"}); rr.Exists != inRoot {
				t.Fatalf("Read by name = %+v", rr)
			}
			// The interrupted Create reads as what it will be once settled.
			if rr := read(t, p, &sdk.ReadRequest{Type: "generic", Name: "g", IdempotencyKey: "k-g"}); rr.Exists != inRoot || inRoot && rr.IdempotencyKey != "k-g" {
				t.Fatalf("Read by key = %+v", rr)
			}
			for call, err := range map[string]error{
				"Create": func() error {
					_, err := p.Create(context.Background(), &sdk.CreateRequest{Type: "generic", Name: "h", IdempotencyKey: "k-h"})
					return err
				}(),
				"Update": func() error {
					_, err := p.Update(context.Background(), &sdk.UpdateRequest{Type: "s3_bucket", Name: "storage", ID: cr.ID, Config: sdk.Attributes{"size": 3}})
					return err
				}(),
				"Delete": func() error {
					_, err := p.Delete(context.Background(), &sdk.DeleteRequest{Type: "s3_bucket", Name: "storage", ID: cr.ID})
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
				t.Fatalf("the root was made: %v", err)
			}
		})
	}

	// A session that may write finishes both.
	p = configuredOn(t, data, nil)
	if _, err := os.Stat(doomed); !os.IsNotExist(err) {
		t.Fatalf("the recorded delete was not finished: %v", err)
	}
	if rr := read(t, p, &sdk.ReadRequest{Type: "generic", Name: "g", IdempotencyKey: "k-g"}); !rr.Exists {
		t.Fatal("the recorded create was not settled")
	}
	if _, err := os.Stat(filepath.Join(data, localprovider.PendingFile)); !os.IsNotExist(err) {
		t.Fatalf("the pending record outlives what it recorded: %v", err)
	}
}

// What a crash leaves in a shared root is settled by another machine: the
// pending record lives in the root, not in the data folder of the machine
// that crashed. A provider with another, empty data folder finishes the
// interrupted Create (found by its key) and the cut-short Delete.
func TestPendingSettledFromAnotherDataFolder(t *testing.T) {
	root := t.TempDir()
	a := configuredOn(t, t.TempDir(), sdk.Attributes{"root": root})
	cr := create(t, a, "s3_bucket", "storage", "op_1:storage", nil)
	gone := create(t, a, "network", "net", "op_1:net", nil)
	place := filepath.Join(root, "s3_bucket", "storage")
	tmp := filepath.Join(root, "s3_bucket", ".tmp-00000000000000cc")
	if err := os.Rename(place, tmp); err != nil { // killed after the metadata, before the rename
		t.Fatal(err)
	}
	doomed := filepath.Join(root, "network", ".del-00000000000000dd")
	if err := os.Rename(filepath.Join(root, "network", "net"), doomed); err != nil { // killed after the rename, before the removal
		t.Fatal(err)
	}
	for _, r := range [][3]string{{"create", tmp, "op_1:storage"}, {"delete", doomed, ""}} {
		if err := localprovider.RecordPending(root, r[0], r[1], r[2]); err != nil {
			t.Fatal(err)
		}
	}
	b := configuredOn(t, t.TempDir(), sdk.Attributes{"root": root})
	if _, err := os.Stat(doomed); !os.IsNotExist(err) {
		t.Fatalf("another machine did not finish the cut-short delete: %v", err)
	}
	rr := read(t, b, &sdk.ReadRequest{Type: "s3_bucket", Name: "storage", IdempotencyKey: "op_1:storage"})
	if !rr.Exists || rr.ID != cr.ID {
		t.Fatalf("another machine's Read by key = %+v, want %s", rr, cr.ID)
	}
	if rr := read(t, b, &sdk.ReadRequest{Type: "network", Name: "net", ID: gone.ID}); rr.Exists {
		t.Fatalf("the deleted network reads as existing: %+v", rr)
	}
	if _, err := os.Stat(filepath.Join(root, localprovider.PendingFile)); !os.IsNotExist(err) {
		t.Fatalf("the pending record outlives what it recorded: %v", err)
	}
}

// A record an older version kept in the data folder is moved into the root
// by the next session that may write, and settled from there.
func TestLegacyPendingRecordAdopted(t *testing.T) {
	root, data := t.TempDir(), t.TempDir()
	p := configuredOn(t, data, sdk.Attributes{"root": root})
	cr := create(t, p, "generic", "g", "op_1:g", nil)
	place := filepath.Join(root, "generic", "g")
	tmp := filepath.Join(root, "generic", ".tmp-00000000000000ee")
	if err := os.Rename(place, tmp); err != nil {
		t.Fatal(err)
	}
	if err := localprovider.RecordPending(data, "create", tmp, "op_1:g"); err != nil {
		t.Fatal(err)
	}
	p = configuredOn(t, data, sdk.Attributes{"root": root})
	if _, err := os.Stat(filepath.Join(data, localprovider.PendingFile)); !os.IsNotExist(err) {
		t.Fatalf("the old record is still in the data folder: %v", err)
	}
	if rr := read(t, p, &sdk.ReadRequest{Type: "generic", Name: "g", IdempotencyKey: "op_1:g"}); !rr.Exists || rr.ID != cr.ID {
		t.Fatalf("Read by key = %+v, want %s", rr, cr.ID)
	}
}
