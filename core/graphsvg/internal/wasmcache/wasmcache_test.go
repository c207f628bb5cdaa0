package wasmcache

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The init order dotlayout relies on holds only while this package imports
// nothing that go-graphviz's internal/wasm does not import too (package
// doc): a new import here must be one of these.
func TestImportsStandardOnly(t *testing.T) {
	allowed := []string{"os", "path/filepath", "runtime", "syscall"}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		parsed, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range parsed.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if !slices.Contains(allowed, path) {
				t.Errorf("%s imports %q: only %v keep this package initialized before go-graphviz", f, path, allowed)
			}
			checked++
		}
	}
	if checked == 0 {
		t.Fatal("no import found: the test reads nothing")
	}
}

// This test binary links this package and not dotlayout: its init ran and
// nothing else calls Restore, so TestMain does (the tests' own temporary
// folders then go to the usual place). The tests call prepare and restore
// themselves.
func TestMain(m *testing.M) {
	if err := Restore(); err != nil {
		panic(err)
	}
	os.Exit(m.Run())
}

func rootIn(dir string) func() (string, error) {
	return func() (string, error) { return dir, nil }
}

func TestPrivateFolderCreated0700AndReused(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no owner or mode on Windows")
	}
	root := filepath.Join(t.TempDir(), "cache")
	dir, err := privateDir(rootIn(root))
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(root, appFolder, cacheFolder); dir != want {
		t.Fatalf("dir %s, want %s", dir, want)
	}
	for _, p := range []string{filepath.Dir(dir), dir} {
		fi, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o700 {
			t.Errorf("%s: mode %v, want 0700", p, fi.Mode().Perm())
		}
	}
	marker := filepath.Join(dir, "kept")
	if err := os.WriteFile(marker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	again, err := privateDir(rootIn(root))
	if err != nil || again != dir {
		t.Fatalf("second time: %s, %v; want %s", again, err, dir)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("the folder was not reused as it was: %v", err)
	}
}

func TestUnsafeFoldersRefused(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no owner or mode on Windows")
	}
	cases := map[string]func(t *testing.T, root string){
		"cache folder is a symlink": func(t *testing.T, root string) {
			other := filepath.Join(filepath.Dir(root), "other")
			mkdir(t, other, 0o700)
			mkdir(t, filepath.Join(root, appFolder), 0o700)
			if err := os.Symlink(other, filepath.Join(root, appFolder, cacheFolder)); err != nil {
				t.Fatal(err)
			}
		},
		"bulwark folder is a symlink": func(t *testing.T, root string) {
			other := filepath.Join(filepath.Dir(root), "other")
			mkdir(t, other, 0o700)
			mkdir(t, root, 0o700)
			if err := os.Symlink(other, filepath.Join(root, appFolder)); err != nil {
				t.Fatal(err)
			}
		},
		"cache folder is a file": func(t *testing.T, root string) {
			mkdir(t, filepath.Join(root, appFolder), 0o700)
			if err := os.WriteFile(filepath.Join(root, appFolder, cacheFolder), []byte("x"), 0o600); err != nil {
				t.Fatal(err)
			}
		},
		"cache folder world-writable": func(t *testing.T, root string) {
			mkdir(t, filepath.Join(root, appFolder, cacheFolder), 0o777)
		},
		"cache folder group-writable": func(t *testing.T, root string) {
			mkdir(t, filepath.Join(root, appFolder, cacheFolder), 0o770)
		},
		"bulwark folder world-writable": func(t *testing.T, root string) {
			mkdir(t, filepath.Join(root, appFolder), 0o777)
		},
		"user cache folder world-writable, not sticky": func(t *testing.T, root string) {
			mkdir(t, root, 0o777)
		},
		"cache folder owned by another user": func(t *testing.T, root string) {
			if os.Getuid() != 0 {
				t.Skip("only root can give a folder away")
			}
			p := filepath.Join(root, appFolder, cacheFolder)
			mkdir(t, p, 0o700)
			if err := os.Chown(p, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		},
		"user cache folder owned by another user": func(t *testing.T, root string) {
			if os.Getuid() != 0 {
				t.Skip("only root can give a folder away")
			}
			mkdir(t, root, 0o700)
			if err := os.Chown(root, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		},
	}
	for name, arrange := range cases {
		t.Run(name, func(t *testing.T) {
			root := filepath.Join(t.TempDir(), "cache")
			arrange(t, root)
			if dir, err := privateDir(rootIn(root)); err == nil {
				t.Fatalf("privateDir accepted %s", dir)
			}
			// prepare falls back to a temporary folder of its own,
			// gone after restore.
			t.Setenv("TMPDIR", t.TempDir())
			s := prepare(rootIn(root))
			if !s.temp || !strings.HasPrefix(filepath.Base(s.dir), tempPattern) {
				t.Fatalf("prepare chose %s (temporary %v), want a new temporary folder", s.dir, s.temp)
			}
			if err := s.restore(); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Lstat(s.dir); !os.IsNotExist(err) {
				t.Fatalf("%s is still there after restore: %v", s.dir, err)
			}
		})
	}
}

func TestNoUserCacheFolderFallsBack(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	s := prepare(func() (string, error) { return "", os.ErrNotExist })
	defer s.restore()
	if !s.temp || filepath.Dir(s.dir) != tmp {
		t.Fatalf("prepare chose %s (temporary %v), want a new folder in %s", s.dir, s.temp, tmp)
	}
	if s := prepare(rootIn("relative/cache")); !s.temp {
		s.restore()
		t.Fatalf("a relative cache folder was used: %s", s.dir)
	} else {
		s.restore()
	}
}

// Nor is a temporary folder made where others could swap it: without a
// safe one, go-graphviz is given os.DevNull, where it can create nothing
// (it then compiles without a cache).
func TestUnsafeTMPDIRGivesDevNull(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no owner or mode on Windows")
	}
	tmp := filepath.Join(t.TempDir(), "shared")
	mkdir(t, tmp, 0o777) // world-writable, not sticky
	t.Setenv("TMPDIR", tmp)
	s := prepare(func() (string, error) { return "", os.ErrNotExist })
	if s.temp || s.dir != os.DevNull {
		s.restore()
		t.Fatalf("prepare chose %s (temporary %v), want %s", s.dir, s.temp, os.DevNull)
	}
	if err := os.Mkdir(filepath.Join(os.TempDir(), "go-graphviz"), 0o755); err == nil {
		t.Errorf("go-graphviz's folder could be made in %s", os.TempDir())
	}
	if err := s.restore(); err != nil {
		t.Fatal(err)
	}
	if got := os.Getenv("TMPDIR"); got != tmp {
		t.Fatalf("TMPDIR %q after restore, want %q", got, tmp)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Fatalf("left %v in TMPDIR", left)
	}
}

// Restore gives the environment back exactly: a set variable its value
// (empty included), an unset one unset, so processes bulwark starts (the
// plugins) see the user's TMPDIR.
func TestRestoreGivesTheEnvironmentBack(t *testing.T) {
	for _, tc := range []struct {
		name  string
		value string
		set   bool
	}{{"set", "/some/where", true}, {"empty", "", true}, {"unset", "", false}} {
		t.Run(tc.name, func(t *testing.T) {
			root := filepath.Join(t.TempDir(), "cache")
			names := tempEnv()
			for _, n := range names {
				t.Setenv(n, tc.value) // restored by t after the test
				if !tc.set {
					os.Unsetenv(n)
				}
			}
			s := prepare(rootIn(root))
			if s.temp {
				t.Fatalf("the private folder was refused, %s used", s.dir)
			}
			for _, n := range names {
				if got := os.Getenv(n); got != s.dir {
					t.Fatalf("during init %s=%q, want %q", n, got, s.dir)
				}
			}
			if got := os.TempDir(); got != s.dir {
				t.Fatalf("os.TempDir() = %q during init, want %q", got, s.dir)
			}
			if err := s.restore(); err != nil {
				t.Fatal(err)
			}
			for _, n := range names {
				v, ok := os.LookupEnv(n)
				if v != tc.value || ok != tc.set {
					t.Errorf("after restore %s=%q (set %v), want %q (set %v)", n, v, ok, tc.value, tc.set)
				}
			}
			if _, err := os.Stat(s.dir); err != nil {
				t.Errorf("the private folder was removed: %v", err)
			}
		})
	}
}

func mkdir(t *testing.T, p string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(p, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil { // past the umask
		t.Fatal(err)
	}
}
