package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/bulwark-iac/bulwark/core/spec"
)

// TestBadSpecCorpus runs the real bulwark binary on every file of the spec
// package's bad-spec corpus: each is rejected with exit 1, every problem the
// parser finds is printed as FILE:LINE:COL: message, and nothing is written
// under the state folder (no plugin was started, nothing mutated).
func TestBadSpecCorpus(t *testing.T) {
	t.Parallel() // a state folder of its own for each command; no environment change
	plugins := buildPlugins(t)
	bin := builtBulwark(t)
	_, file, _, _ := runtime.Caller(0)
	corpus, err := filepath.Glob(filepath.Join(filepath.Dir(file), "..", "..", "core", "spec", "testdata", "bad", "*.yaml"))
	if err != nil || len(corpus) < 20 {
		t.Fatalf("corpus: %v (%d files)", err, len(corpus))
	}
	for _, path := range corpus {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".yaml"), func(t *testing.T) {
			t.Parallel()
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			_, perr := spec.Parse(path, data)
			var want spec.Problems
			if !errors.As(perr, &want) || len(want) == 0 {
				t.Fatalf("the corpus file parses: %v", perr)
			}
			for _, cmd := range []string{"validate", "apply"} {
				stateDir := filepath.Join(t.TempDir(), "state")
				var stdout, stderr bytes.Buffer
				c := exec.Command(bin, "--state-dir", stateDir, "--plugin-dir", plugins, cmd, path)
				c.Stdout, c.Stderr = &stdout, &stderr
				err := c.Run()
				var ee *exec.ExitError
				if !errors.As(err, &ee) || ee.ExitCode() != 1 {
					t.Fatalf("%s: exit %v, want 1\nstdout: %s\nstderr: %s", cmd, err, stdout.String(), stderr.String())
				}
				for _, p := range want {
					if !strings.Contains(stderr.String(), p.Error()+"\n") {
						t.Errorf("%s: stderr lacks %q\n%s", cmd, p.Error(), stderr.String())
					}
					if p.Pos.Line == 0 && !strings.HasSuffix(p.Msg, "spec is empty") {
						t.Errorf("problem without a line: %q", p.Error())
					}
				}
				if _, err := os.Stat(stateDir); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("%s wrote under the state folder for a bad spec", cmd)
				}
			}
		})
	}
}
