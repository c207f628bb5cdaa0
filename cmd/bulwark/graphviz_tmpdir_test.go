//go:build unix

package main

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bulwark-iac/bulwark/core/secrets"
)

// go-graphviz's init (run in bulwark-graphviz, the program bulwark runs to
// draw a graph as SVG, before its main) keeps wazero's compiled native code
// in $TMPDIR/go-graphviz when it is left to choose
// (core/graphsvg/internal/wasmcache says why that is unsafe). These tests
// play the other user of a shared machine, against the built binaries:
// whatever they put in $TMPDIR/go-graphviz is neither read nor written, the
// cache goes to $XDG_CACHE_HOME/bulwark/graphviz-cache (0700) when that
// folder is safe, else to a temporary folder gone when bulwark exits, and
// a plugin bulwark starts sees the user's own TMPDIR.

const graphvizStack = `version: 1
stack: tmpdir
providers: {mock: {}}
resources:
  - name: net
    type: network
  - name: web
    type: compute
    config: {net: "${net.id}"}
`

// graphvizEnv is the whole environment of a bulwark run: nothing of the
// test's own (its TMPDIR, XDG_CACHE_HOME) leaks in.
func graphvizEnv(work, tmp, cache string) []string {
	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + filepath.Join(work, "home"),
		"XDG_CONFIG_HOME=" + filepath.Join(work, "config"),
		secrets.EnvKey + "=" + testSecretsKey,
	}
	if tmp != "" {
		env = append(env, "TMPDIR="+tmp)
	}
	if cache != "" {
		env = append(env, "XDG_CACHE_HOME="+cache)
	}
	return env
}

// drawGraph runs bulwark graph stack.yaml --format svg in dir, which must
// hold graphvizStack as stack.yaml: bulwark-graphviz, beside bulwark, lays
// it out, compiling graphviz's module (or taking it from the cache).
func drawGraph(t *testing.T, env []string, dir string) {
	t.Helper()
	if svg := runGraphviz(t, env, dir, "graph", "stack.yaml", "--format", "svg"); !strings.Contains(svg, "<title>web</title>") {
		t.Fatalf("graph --format svg printed no graph:\n%s", svg)
	}
}

func runGraphviz(t *testing.T, env []string, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command(builtBulwark(t), args...)
	cmd.Env, cmd.Dir = env, dir
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("bulwark %s: %v\n%s%s", strings.Join(args, " "), err, out.String(), stderr.String())
	}
	return out.String()
}

// treeSnapshot describes every entry under root: kind, mode, size, mtime,
// a file's content, a symlink's target.
func treeSnapshot(t *testing.T, root string) map[string]string {
	t.Helper()
	snap := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		desc := fmt.Sprintf("%v %d %d", fi.Mode(), fi.Size(), fi.ModTime().UnixNano())
		switch {
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			desc += " " + string(b)
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			desc += " -> " + target
		}
		snap[p] = desc
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

func sameTree(t *testing.T, what string, before, after map[string]string) {
	t.Helper()
	for p, d := range before {
		if after[p] != d {
			t.Errorf("%s: %s changed:\n before %q\n after  %q", what, p, d, after[p])
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			t.Errorf("%s: %s appeared", what, p)
		}
	}
}

// cacheEntries returns the files under dir, relative to it ("" for none).
func cacheEntries(t *testing.T, dir string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			rel, err := filepath.Rel(dir, p)
			if err != nil {
				return err
			}
			files = append(files, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func TestGraphvizCacheIgnoresTMPDIR(t *testing.T) {
	work := t.TempDir()
	cache := filepath.Join(work, "cache")
	if err := os.WriteFile(filepath.Join(work, "stack.yaml"), []byte(graphvizStack), 0o644); err != nil {
		t.Fatal(err)
	}

	// A TMPDIR without go-graphviz gets none, nor anything else: the
	// cache is made 0700 under XDG_CACHE_HOME and kept there.
	tmp := filepath.Join(work, "tmp")
	if err := os.Mkdir(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	drawGraph(t, graphvizEnv(work, tmp, cache), work)
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Fatalf("bulwark graph --format svg left %v in its TMPDIR", left)
	}
	private := filepath.Join(cache, "bulwark", "graphviz-cache")
	for _, p := range []string{filepath.Dir(private), private} {
		fi, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		if !fi.IsDir() || fi.Mode().Perm() != 0o700 {
			t.Fatalf("%s: %v, want a folder 0700", p, fi.Mode())
		}
	}
	// wazero's entries: one a module, named by its key (the hash of the
	// module, wazero's version and the CPU), in a folder per wazero version.
	keys := cacheEntries(t, filepath.Join(private, "go-graphviz"))
	if len(keys) == 0 {
		t.Fatalf("no compiled module kept in %s", private)
	}
	kept := treeSnapshot(t, private)
	drawGraph(t, graphvizEnv(work, tmp, cache), work)
	sameTree(t, "the private cache on a second run (reused as it is)", kept, treeSnapshot(t, private))

	// Another user made TMPDIR/go-graphviz first: world-writable, holding
	// junk under the very names bulwark's module is cached as (what a
	// crafted entry would be named) and junk besides. go-graphviz would
	// open the entry; bulwark neither reads nor writes any of it.
	planted := filepath.Join(work, "planted")
	gv := filepath.Join(planted, "go-graphviz")
	for _, k := range keys {
		p := filepath.Join(gv, k)
		if err := os.MkdirAll(filepath.Dir(p), 0o777); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("WAZEVO crafted by another user"), 0o666); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(gv, "junk"), []byte("junk"), 0o666); err != nil {
		t.Fatal(err)
	}
	past := time.Now().Add(-time.Hour)
	err := filepath.WalkDir(gv, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if err := os.Chmod(p, 0o777); err != nil { // past the umask
				return err
			}
		}
		return os.Chtimes(p, past, past)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(planted, past, past); err != nil {
		t.Fatal(err)
	}
	before := treeSnapshot(t, planted)
	// With the cache (warm) and without (cold: a fresh XDG_CACHE_HOME).
	for _, c := range []string{cache, filepath.Join(work, "cache2")} {
		drawGraph(t, graphvizEnv(work, planted, c), work)
		svg := runGraphviz(t, graphvizEnv(work, planted, c), work, "graph", "stack.yaml", "--format", "svg")
		if !strings.Contains(svg, "<svg ") || !strings.Contains(svg, "<title>web</title>") {
			t.Fatalf("graph --format svg printed no graph:\n%s", svg)
		}
	}
	sameTree(t, "a go-graphviz folder of another user in TMPDIR", before, treeSnapshot(t, planted))

	// TMPDIR/go-graphviz a file: left as it is too.
	fileTmp := filepath.Join(work, "filetmp")
	if err := os.Mkdir(fileTmp, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(fileTmp, "go-graphviz"), []byte("not a folder"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(fileTmp, past, past); err != nil {
		t.Fatal(err)
	}
	before = treeSnapshot(t, fileTmp)
	drawGraph(t, graphvizEnv(work, fileTmp, cache), work)
	sameTree(t, "a go-graphviz file in TMPDIR", before, treeSnapshot(t, fileTmp))

	// No user cache folder (no HOME) and a TMPDIR others can write to,
	// not sticky: no temporary folder is made there either (another user
	// could swap it); graphviz is compiled without a cache.
	shared := filepath.Join(work, "shared")
	if err := os.Mkdir(shared, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(shared, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(shared, past, past); err != nil {
		t.Fatal(err)
	}
	before = treeSnapshot(t, shared)
	svg := runGraphviz(t, withoutHome(graphvizEnv(work, shared, "")), work, "graph", "stack.yaml", "--format", "svg")
	if !strings.Contains(svg, "<title>web</title>") {
		t.Fatalf("graph --format svg printed no graph:\n%s", svg)
	}
	sameTree(t, "a TMPDIR others can write to", before, treeSnapshot(t, shared))
}

// withoutHome drops HOME from env: no user cache folder.
func withoutHome(env []string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, "HOME=") {
			out = append(out, kv)
		}
	}
	return out
}

// A cache folder another user could have made or could write to is not
// used: bulwark-graphviz compiles into a temporary folder of its own (in
// TMPDIR) and removes it before main.
func TestGraphvizCacheRefusesUnsafeFolder(t *testing.T) {
	for name, arrange := range map[string]func(t *testing.T, private, elsewhere string){
		"symlink": func(t *testing.T, private, elsewhere string) {
			if err := os.Symlink(elsewhere, private); err != nil {
				t.Fatal(err)
			}
		},
		"world-writable": func(t *testing.T, private, _ string) {
			if err := os.Mkdir(private, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(private, 0o777); err != nil {
				t.Fatal(err)
			}
		},
		"owned by another user": func(t *testing.T, private, _ string) {
			if os.Getuid() != 0 {
				t.Skip("only root can give a folder away")
			}
			if err := os.Mkdir(private, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(private, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			work := t.TempDir()
			cache := filepath.Join(work, "cache")
			private := filepath.Join(cache, "bulwark", "graphviz-cache")
			elsewhere := filepath.Join(work, "elsewhere")
			tmp := filepath.Join(work, "tmp")
			for _, d := range []string{filepath.Dir(private), elsewhere, tmp} {
				if err := os.MkdirAll(d, 0o700); err != nil {
					t.Fatal(err)
				}
			}
			arrange(t, private, elsewhere)
			if err := os.WriteFile(filepath.Join(work, "stack.yaml"), []byte(graphvizStack), 0o644); err != nil {
				t.Fatal(err)
			}
			before := treeSnapshot(t, cache)
			drawGraph(t, graphvizEnv(work, tmp, cache), work)
			sameTree(t, "an unsafe cache folder", before, treeSnapshot(t, cache))
			if left, _ := os.ReadDir(elsewhere); len(left) != 0 {
				t.Errorf("bulwark wrote %v through the symlink", left)
			}
			if left, _ := os.ReadDir(tmp); len(left) != 0 {
				t.Errorf("bulwark left %v in its TMPDIR", left)
			}
		})
	}
}

// bulwark itself changes no TMPDIR (it does not link go-graphviz: the
// TMPDIR bulwark-graphviz's init points at the cache is its own, for the
// length of go-graphviz's init): a provider plugin bulwark starts sees the user's own
// TMPDIR, and none when the user had none. The plugin is a script that
// writes what it sees and exits before the handshake.
func TestGraphvizPluginSeesUsersTMPDIR(t *testing.T) {
	work := t.TempDir()
	plugins := filepath.Join(work, "plugins")
	if err := os.Mkdir(plugins, 0o755); err != nil {
		t.Fatal(err)
	}
	script := "#!/bin/sh\nprintf '%s' \"${TMPDIR-unset}\" > \"$ENVCHECK_OUT\"\nexit 3\n"
	if err := os.WriteFile(filepath.Join(plugins, "bulwark-provider-envcheck"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	stack := "version: 1\nstack: envcheck\nproviders: {envcheck: {}}\nresources:\n  - name: a\n    type: thing\n"
	if err := os.WriteFile(filepath.Join(work, "stack.yaml"), []byte(stack), 0o644); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(work, "tmp")
	if err := os.Mkdir(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(work, "seen")
	for _, c := range []struct{ name, tmpdir, want string }{
		{"TMPDIR set", tmp, tmp},
		{"TMPDIR unset", "", "unset"},
	} {
		// The private cache, and (with no user cache folder) a temporary
		// one: the plugin sees neither.
		for _, cache := range []string{filepath.Join(work, "cache"), ""} {
			_ = os.Remove(out)
			env := append(graphvizEnv(work, c.tmpdir, cache), "BULWARK_PLUGIN_DIR="+plugins, "ENVCHECK_OUT="+out)
			if cache == "" {
				env = withoutHome(env)
			}
			cmd := exec.Command(builtBulwark(t), "plan", "stack.yaml")
			cmd.Env, cmd.Dir = env, work
			msg, err := cmd.CombinedOutput()
			if err == nil || !strings.Contains(string(msg), "provider envcheck") {
				t.Fatalf("%s: plan with a plugin that exits at once: %v\n%s", c.name, err, msg)
			}
			seen, err := os.ReadFile(out)
			if err != nil {
				t.Fatalf("%s: the plugin did not run: %v\n%s", c.name, err, msg)
			}
			if string(seen) != c.want {
				t.Errorf("%s, cache folder %q: the plugin saw TMPDIR=%q, want %q", c.name, cache, seen, c.want)
			}
		}
	}
}

// bulwark does not link go-graphviz, whose init compiles Graphviz's
// WebAssembly module before main in every process that links it (75 ms
// and 12 MB of a `bulwark version` that takes 30 ms without it): only
// bulwark-graphviz does.
func TestBulwarkDoesNotLinkGraphviz(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if strings.HasPrefix(pkg, "github.com/goccy/go-graphviz") || strings.HasPrefix(pkg, "github.com/tetratelabs/wazero") {
			t.Errorf("bulwark links %s (only cmd/bulwark-graphviz may)", pkg)
		}
	}
	out, err = exec.Command("go", "list", "-deps", "./cmd/bulwark-graphviz").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "github.com/goccy/go-graphviz\n") {
		t.Fatalf("bulwark-graphviz does not link go-graphviz: %v\n%s", err, out)
	}
}

// bulwark runs the bulwark-graphviz beside the executable it is, its
// symbolic links followed: not one planted beside a link to it, nor one
// first on $PATH. The planted ones would leave a mark if run.
func TestGraphvizProgramIsTheOneBesideTheRealBinary(t *testing.T) {
	work := t.TempDir()
	if err := os.WriteFile(filepath.Join(work, "stack.yaml"), []byte(graphvizStack), 0o644); err != nil {
		t.Fatal(err)
	}
	mark := filepath.Join(work, "planted-ran")
	planted := "#!/bin/sh\ntouch " + mark + "\necho '<svg><title>planted</title></svg>'\n"
	linkDir, pathDir := filepath.Join(work, "links"), filepath.Join(work, "path")
	for _, d := range []string{linkDir, pathDir} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "bulwark-graphviz"), []byte(planted), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(linkDir, "bulwark")
	if err := os.Symlink(builtBulwark(t), link); err != nil {
		t.Fatal(err)
	}
	env := graphvizEnv(work, "", graphvizCache(t))
	for i, kv := range env {
		if strings.HasPrefix(kv, "PATH=") {
			env[i] = "PATH=" + pathDir + string(os.PathListSeparator) + strings.TrimPrefix(kv, "PATH=")
		}
	}
	cmd := exec.Command(link, "graph", "stack.yaml", "--format", "svg")
	cmd.Env, cmd.Dir = env, work
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "<title>web</title>") {
		t.Fatalf("bulwark (a link) graph --format svg: %v\n%s", err, out)
	}
	if _, err := os.Stat(mark); err == nil {
		t.Fatal("a bulwark-graphviz planted beside the link or on PATH ran")
	}
}
