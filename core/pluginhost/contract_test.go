package pluginhost

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/bulwark-iac/bulwark/core/providers"
)

// A read-only session tells the plugin so at Configure, and a provider that
// predates Import (the test plugin has no Importer) is imported through Read
// by id.
func TestHostReadOnlyAndImportFallback(t *testing.T) {
	dir := testPlugin(t)
	h := New(Options{Dirs: []string{dir}, StartTimeout: 30 * time.Second})
	t.Cleanup(h.Close)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := h.Start(ctx, Config{Name: "t", Source: "test", DataDir: filepath.Join(t.TempDir(), "d"), ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if caps := p.Schema().Capabilities; caps.Import || caps.IdempotencyKeys {
		t.Errorf("an older plugin reports capabilities %+v", caps)
	}
	r, err := p.Read(ctx, &providers.ReadRequest{Type: "thing", Name: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if r.Attributes["read_only"] != true {
		t.Errorf("Configure saw read_only=%v, want true", r.Attributes["read_only"])
	}
	c, err := p.Create(ctx, &providers.CreateRequest{Type: "thing", Name: "x", IdempotencyKey: "k1"})
	if err != nil {
		t.Fatal(err)
	}
	imp, err := p.Import(ctx, &providers.ImportRequest{Type: "thing", Name: "y", ID: c.ID})
	if err != nil || !imp.Exists || imp.ID != c.ID {
		t.Errorf("import by id through Read: %+v %v", imp, err)
	}
	if _, err := p.Import(ctx, &providers.ImportRequest{Type: "thing", Name: "y"}); err == nil {
		t.Error("an import without an id was accepted")
	}
	// Nor does it offer ValidateMany or ReadMany: each is one call after
	// the other.
	if p.ValidatesMany() {
		t.Error("an older plugin offers ValidateMany")
	}
	vr, err := p.ValidateMany(ctx, []*providers.ValidateResourceRequest{{Type: "thing", Name: "x"}, {Type: "thing", Name: "y"}})
	if err != nil || len(vr) != 2 || vr[0].Err != nil || vr[1].Err != nil {
		t.Errorf("ValidateMany through ValidateResource: %+v %v", vr, err)
	}
	if p.ReadsMany() {
		t.Error("an older plugin offers ReadMany")
	}
	res, err := p.ReadMany(ctx, []*providers.ReadRequest{{Type: "thing", Name: "y", ID: c.ID}, {Type: "thing", Name: "z", ID: "none"}})
	if err != nil || len(res) != 2 || res[0].Err != nil || !res[0].Response.Exists || res[0].Response.ID != c.ID || res[1].Err != nil || res[1].Response.Exists {
		t.Errorf("ReadMany through Read: %+v %v", res, err)
	}
}
