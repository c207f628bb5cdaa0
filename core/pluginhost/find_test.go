package pluginhost

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestLookupDirs(t *testing.T) {
	def := filepath.Join("bin", "plugins")
	tests := []struct {
		name              string
		flagDir, env, exe string
		want              []string
	}{
		{"only the default", "", "", "", []string{def}},
		{"full order: flag, env, ./bin/plugins, beside the binary", "/f", "/e", "/opt/bulwark/bin/bulwark",
			[]string{"/f", "/e", def, "/opt/bulwark/bin/plugins"}},
		{"empty flag dropped", "", "/e", "/x/bulwark", []string{"/e", def, "/x/plugins"}},
		{"empty env dropped", "/f", "", "", []string{"/f", def}},
		{"flag equal to env listed once", "/same", "/same", "", []string{"/same", def}},
		{"flag equal to the default listed once, first", def, "/e", "", []string{def, "/e"}},
		{"binary beside ./bin: its plugins folder is the default", "", "", filepath.Join("bin", "bulwark"), []string{def}},
		{"relative exe", "", "", "bulwark", []string{def, "plugins"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, LookupDirs(tt.flagDir, tt.env, tt.exe)); diff != "" {
				t.Errorf("LookupDirs (-want +got):\n%s", diff)
			}
		})
	}
}

// writeFile writes an executable (or not) file named name in dir.
func writeFile(t *testing.T, dir, name, body string, mode os.FileMode) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil { // no umask
		t.Fatal(err)
	}
	return p
}

func TestFind(t *testing.T) {
	root := t.TempDir()
	first, second, empty := filepath.Join(root, "first"), filepath.Join(root, "second"), filepath.Join(root, "empty")
	writeFile(t, first, Prefix+"both", "1", 0o755)
	writeFile(t, second, Prefix+"both", "2", 0o755)
	writeFile(t, first, Prefix+"noexec", "x", 0o644)
	writeFile(t, second, Prefix+"noexec", "x", 0o700)
	writeFile(t, first, Prefix+"plain", "x", 0o600)
	writeFile(t, second, Prefix+"groupexec", "x", 0o610)
	writeFile(t, first, "other-provider-x", "x", 0o755)
	if err := os.MkdirAll(filepath.Join(first, Prefix+"dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(second, Prefix+"both"), filepath.Join(empty, Prefix+"link")); err != nil {
		t.Fatal(err)
	}
	dirs := []string{filepath.Join(root, "missing"), first, second, empty}

	tests := []struct {
		name     string
		source   string
		want     string // path, or "" for an error
		notFound bool   // the error is a *NotFoundError
		bad      bool   // the error is a bad source name
	}{
		{"first folder wins", "both", filepath.Join(first, Prefix+"both"), false, false},
		{"not executable in the first, executable in the second", "noexec", filepath.Join(second, Prefix+"noexec"), false, false},
		{"any execute bit counts", "groupexec", filepath.Join(second, Prefix+"groupexec"), false, false},
		{"symlink to an executable", "link", filepath.Join(empty, Prefix+"link"), false, false},
		{"not executable anywhere", "plain", "", true, false},
		{"a folder is not a plugin", "dir", "", true, false},
		{"missing", "nothere", "", true, false},
		{"empty source", "", "", false, true},
		{"slash", "a/b", "", false, true},
		{"escape with dots", "../../bin/sh", "", false, true},
		{"dots alone", "..", "", false, true},
		{"dots inside", "a..b", "", false, true},
		{"backslash", `a\b`, "", false, true},
		{"absolute", "/bin/sh", "", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Find(dirs, tt.source)
			if tt.want != "" {
				if err != nil {
					t.Fatalf("Find(%q) = %v", tt.source, err)
				}
				if got != tt.want || !filepath.IsAbs(got) {
					t.Errorf("Find(%q) = %q, want %q (absolute)", tt.source, got, tt.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("Find(%q) = %q, want an error", tt.source, got)
			}
			var nf *NotFoundError
			if isNF := errors.As(err, &nf); isNF != tt.notFound {
				t.Errorf("Find(%q) error %v: NotFoundError %v, want %v", tt.source, err, isNF, tt.notFound)
			}
			if tt.bad && !strings.Contains(err.Error(), "bad provider source") {
				t.Errorf("Find(%q) error %q does not say the name is bad", tt.source, err)
			}
		})
	}
}

func TestFindRelativeDirGivesAbsolutePath(t *testing.T) {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "bin", "plugins"), Prefix+"mock", "x", 0o755)
	t.Chdir(root)
	got, err := Find(LookupDirs("", "", ""), "mock")
	if err != nil {
		t.Fatal(err)
	}
	want, _ := filepath.EvalSymlinks(filepath.Join(root, "bin", "plugins", Prefix+"mock"))
	if resolved, _ := filepath.EvalSymlinks(got); resolved != want {
		t.Errorf("Find = %q, want %q", got, want)
	}
	if !filepath.IsAbs(got) {
		t.Errorf("Find = %q, not absolute", got)
	}
}

func TestNotFoundErrorMessage(t *testing.T) {
	_, err := Find([]string{"/nope/one", "bin/plugins"}, "aws")
	var nf *NotFoundError
	if !errors.As(err, &nf) {
		t.Fatalf("err = %v", err)
	}
	if nf.Source != "aws" || !cmp.Equal(nf.Dirs, []string{"/nope/one", "bin/plugins"}) {
		t.Errorf("NotFoundError = %+v", nf)
	}
	msg := err.Error()
	for _, want := range []string{`provider "aws" not found`, Prefix + "aws", "/nope/one, bin/plugins", "make build", "--plugin-dir"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q does not contain %q", msg, want)
		}
	}
}

func sha(body string) string {
	s := sha256.Sum256([]byte(body))
	return hex.EncodeToString(s[:])
}

func TestList(t *testing.T) {
	root := t.TempDir()
	a, b := filepath.Join(root, "a"), filepath.Join(root, "b")
	writeFile(t, a, Prefix+"mock", "mock-a", 0o755)
	writeFile(t, b, Prefix+"mock", "mock-b", 0o755)   // shadowed by a
	writeFile(t, a, Prefix+"local", "local-a", 0o644) // not executable here...
	writeFile(t, b, Prefix+"local", "local-b", 0o755) // ...so b's is listed
	writeFile(t, b, Prefix+"aws", "aws-b", 0o755)
	writeFile(t, a, "README", "not a plugin", 0o755)
	writeFile(t, a, Prefix+"a..b", "bad name", 0o755)
	if err := os.MkdirAll(filepath.Join(a, Prefix+"folder"), 0o755); err != nil {
		t.Fatal(err)
	}
	got, err := List([]string{filepath.Join(root, "missing"), a, b})
	if err != nil {
		t.Fatal(err)
	}
	want := []Found{
		{Name: "aws", Path: filepath.Join(b, Prefix+"aws"), SHA256: sha("aws-b")},
		{Name: "local", Path: filepath.Join(b, Prefix+"local"), SHA256: sha("local-b")},
		{Name: "mock", Path: filepath.Join(a, Prefix+"mock"), SHA256: sha("mock-a")},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("List (-want +got):\n%s", diff)
	}

	if got, err := List(nil); err != nil || len(got) != 0 {
		t.Errorf("List(nil) = %v, %v", got, err)
	}
	if got, err := List([]string{filepath.Join(root, "missing")}); err != nil || len(got) != 0 {
		t.Errorf("List(missing) = %v, %v", got, err)
	}
}

func TestFileSHA256(t *testing.T) {
	dir := t.TempDir()
	tests := []struct{ name, body string }{{"empty", ""}, {"text", "hello\n"}, {"big", strings.Repeat("x", 1<<20+3)}}
	for _, tt := range tests {
		p := writeFile(t, dir, tt.name, tt.body, 0o600)
		got, err := FileSHA256(p)
		if err != nil || got != sha(tt.body) {
			t.Errorf("%s: FileSHA256 = %q, %v; want %q", tt.name, got, err, sha(tt.body))
		}
	}
	if _, err := FileSHA256(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: err = %v", err)
	}
}
