// Package layering holds one test: the import arrows within core that
// docs/architecture.md ("The repository") says run one way, pinned, so an
// import against them fails here rather than in a reader's head.
package layering

import (
	"bufio"
	"bytes"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

const core = "github.com/bulwark-iac/bulwark/core/"

// rules: package (under core) → what it must not depend on, even
// indirectly ("*": any package of bulwark's).
var rules = []struct {
	pkg string
	not []string
	why string
}{
	{"storage", []string{"storage/filestore", "stack", "pluginhost"}, "the backend-neutral interface sits below every backend, the file backend's lock (storage/filestore/lock) included"},
	{"storage/filestore/lock", []string{"stack", "engine", "opstore"}, "the file backend's lock sits below the backend and the operations"},
	{"plandoc", []string{"*"}, "the plan document is wire types: its readers (the web view) must not sit above the operations"},
	{"observe", []string{"pluginhost", "stack"}, "observe schedules reads through its small Provider interface; the plugin host implements it"},
	{"providerlock", []string{"stack", "engine", "opstore"}, "pinning providers is no operation on a stack"},
	{"tfinstall", []string{"*"}, "Terraform packages, without the plugin protocol or the lock"},
	{"providers", []string{"pluginhost", "stack", "observe"}, "the host's provider types sit below every implementation and consumer"},
	{"printable", []string{"*"}, "escaping text for a terminal is a leaf every view and the plugin host can use"},
}

func goBin() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return filepath.Join(runtime.GOROOT(), "bin", "go")
}

func TestImportDirection(t *testing.T) {
	out, err := exec.Command(goBin(), "list", "-f", "{{.ImportPath}}{{range .Deps}} {{.}}{{end}}", core+"...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	deps := map[string][]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) > 0 {
			deps[f[0]] = f[1:]
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	for _, r := range rules {
		d, ok := deps[core+r.pkg]
		if !ok {
			t.Errorf("core/%s: not listed (renamed? update the rule)", r.pkg)
			continue
		}
		for _, dep := range d {
			for _, not := range r.not {
				bad := dep == core+not || strings.HasPrefix(dep, core+not+"/")
				if not == "*" {
					bad = strings.HasPrefix(dep, "github.com/bulwark-iac/bulwark/")
				}
				if bad {
					t.Errorf("core/%s depends on %s: %s", r.pkg, dep, r.why)
				}
			}
		}
	}
}
