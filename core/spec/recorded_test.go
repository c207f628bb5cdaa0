package spec

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRecordedModules: a spec's Recorded text holds its module files, and
// Parse reads the modules from it rather than from disk (which may have
// changed or be gone); a text without modules records as itself.
func TestRecordedModules(t *testing.T) {
	dir := t.TempDir()
	stack := filepath.Join(dir, "stack.yaml")
	text := "version: 1\nstack: s\nproviders: {mock: {}}\nmodules: [{name: a, source: ./m}]\nresources: []\n"
	mod := filepath.Join(dir, "m", ModuleFile)
	if err := os.MkdirAll(filepath.Dir(mod), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(mod, []byte("resources: [{name: r, type: t, config: {v: one}}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Parse(stack, []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	if got := s.ModuleFiles["m/module.yaml"]; !strings.Contains(got, "v: one") || len(s.ModuleFiles) != 1 {
		t.Fatalf("module files %v", s.ModuleFiles)
	}
	rec := s.Recorded()
	if err := os.RemoveAll(filepath.Join(dir, "m")); err != nil {
		t.Fatal(err)
	}
	r, err := Parse(stack+"@revision-1", rec)
	if err != nil {
		t.Fatal(err)
	}
	res, ok := r.Resource("a.r")
	if !ok || res.Config["v"] != "one" || string(r.Text) != text || string(r.Recorded()) != string(rec) {
		t.Errorf("reparsed: %v %v text %q", ok, res, r.Text)
	}
	// Without the module on disk nor recorded, the call names what is missing.
	if _, err := Parse(stack, []byte(text)); err == nil || !strings.Contains(err.Error(), `source "./m": no such folder`) {
		t.Errorf("from disk: %v", err)
	}
	// A text recorded without the module file refuses to guess.
	empty := append([]byte(text), recordMark+"{}"...)
	if _, err := Parse(stack, empty); err == nil || !strings.Contains(err.Error(), "stack.yaml:4:29: module call \"a\": source \"./m\": the recorded spec holds no m/module.yaml") {
		t.Errorf("not recorded: %v", err)
	}
	plain, err := Parse(stack, []byte("version: 1\nstack: s\nproviders: {mock: {}}\nresources: []\n"))
	if err != nil || string(plain.Recorded()) != string(plain.Text) {
		t.Errorf("without modules: %v", err)
	}
}
