package spec

import (
	"os"
	"path/filepath"
	"testing"
)

// TestModuleInnerForEachParseModule: a module file whose call takes its
// for_each from the module's variable reads on its own (bulwark fmt), the
// call pending; one that takes it from a resource is refused at its field.
func TestModuleInnerForEachParseModule(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "m"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "m", ModuleFile), []byte("resources: [{name: db, type: db}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, ModuleFile)
	m, err := ParseModule(file, []byte("variables: {zones: {type: list}}\nresources: []\nmodules:\n  - {name: in, source: ./m, for_each: \"${var.zones}\"}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := m.PendingCalls(); len(got) != 1 || got[0].Name != "in" {
		t.Errorf("pending calls = %v", got)
	}
	_, err = ParseModule(file, []byte("resources: [{name: web, type: compute}]\nmodules:\n  - {name: in, source: ./m, for_each: \"${web.zones}\"}\n"))
	want := file + `:3:40: module call "in": invalid for_each: it must be known before plan, and ${web.zones} is not; it can use only variables and locals (a call's instances are its addresses, decided before any provider starts, any data is read or another stack's outputs are)`
	if err == nil || err.Error() != want {
		t.Errorf("error\n got %v\nwant %s", err, want)
	}
}
