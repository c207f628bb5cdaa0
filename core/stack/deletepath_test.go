package stack_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestOneDeletionPath keeps the guarantee structural: in the core's
// operations, only deleteResource (step_delete.go) builds a provider Delete
// request, so every deletion passes the ladder there.
func TestOneDeletionPath(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var sites []string
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			if strings.Contains(line, "providers.DeleteRequest{") {
				sites = append(sites, f+":"+strconv.Itoa(i+1))
			}
		}
	}
	if len(sites) != 1 || !strings.HasPrefix(sites[0], "step_delete.go:") {
		t.Fatalf("provider Delete requests are built at %v; only step_delete.go's deleteResource may build one", sites)
	}
}
