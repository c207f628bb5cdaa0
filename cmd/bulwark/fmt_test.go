package main

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestFmtExit(t *testing.T) {
	changed := fmtResult{file: "a.yaml", changed: true}
	same := fmtResult{file: "b.yaml"}
	broken := fmtResult{file: "c.yaml", err: errors.New("bad")}
	tests := []struct {
		name    string
		check   bool
		results []fmtResult
		want    int
	}{
		{"nothing to do", false, nil, 0},
		{"rewritten", false, []fmtResult{changed, same}, 0},
		{"check, all canonical", true, []fmtResult{same}, 0},
		{"check, one not canonical", true, []fmtResult{same, changed}, 2},
		{"a file with a problem wins over check", true, []fmtResult{changed, broken}, 1},
		{"a file with a problem", false, []fmtResult{broken, same}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := 0
			if err := fmtExit(fmtArgs{Check: tt.check}, tt.results); err != nil {
				var code exitCode
				if !errors.As(err, &code) {
					t.Fatalf("fmtExit = %v, want an exitCode", err)
				}
				got = int(code)
			}
			if got != tt.want {
				t.Errorf("exit %d, want %d", got, tt.want)
			}
		})
	}
}

// TestSpecFiles: a folder gives its specs, not its var files, other files,
// subfolders or links; a file is itself whatever it holds.
func TestSpecFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("a.yaml", "# a spec\nversion: 1\nstack: a\n")
	write("b.yml", "stack: b\nversion: 1\n")
	write("vars.yaml", "version: 2.0\nenv: prod\n")
	write("notes.txt", "version: 1\nstack: x\n")
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	write("sub/c.yaml", "version: 1\nstack: c\n")
	if err := os.Symlink("a.yaml", filepath.Join(dir, "link.yaml")); err != nil {
		t.Fatal(err)
	}
	got, err := specFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(dir, "a.yaml"), filepath.Join(dir, "b.yml")}
	if !slices.Equal(got, want) {
		t.Errorf("specFiles(dir) = %v, want %v", got, want)
	}
	vars := filepath.Join(dir, "vars.yaml")
	if got, err := specFiles(vars); err != nil || !slices.Equal(got, []string{vars}) {
		t.Errorf("specFiles(file) = %v, %v; want the file itself", got, err)
	}
}
