package mirror

import (
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func TestLayout(t *testing.T) {
	want := map[string]int{"fwtest": 6, "sdktest": 5}
	for _, p := range Providers() {
		if want[p.Type] != p.Protocol {
			t.Errorf("%s: protocol %d", p.Type, p.Protocol)
		}
		got := BinaryPath("/m", p, "0.1.0")
		exp := filepath.Join("/m", "registry.terraform.io", "bulwark", p.Type, "0.1.0", runtime.GOOS+"_"+runtime.GOARCH, "terraform-provider-"+p.Type+"_v0.1.0")
		if got != exp {
			t.Errorf("BinaryPath: %s, want %s", got, exp)
		}
		if p.Source() != "registry.terraform.io/bulwark/"+p.Type || p.ShortSource() != "bulwark/"+p.Type {
			t.Errorf("sources: %s, %s", p.Source(), p.ShortSource())
		}
		if !strings.HasSuffix(p.Package, "/cmd/terraform-provider-"+p.Type) {
			t.Errorf("package %s", p.Package)
		}
	}
	if c := CLIConfig("/a b/m"); !strings.Contains(c, `path = "/a b/m"`) || !strings.Contains(c, "filesystem_mirror") {
		t.Errorf("CLIConfig:\n%s", c)
	}
}
