package webview_test

import (
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/bulwark-iac/bulwark/core/internal/layouttest"
	"github.com/bulwark-iac/bulwark/core/journal"
	"github.com/bulwark-iac/bulwark/core/spec"
	"github.com/bulwark-iac/bulwark/core/stack"
	"github.com/bulwark-iac/bulwark/core/webview"
)

var (
	mockOnce sync.Once
	mockDir  string
	mockErr  error
	// mockPrebuilt is $BULWARK_TEST_BIN_DIR/plugins when it holds the mock.
	mockPrebuilt string
	// buildEnv is the environment before any test ran: tests set HOME to a
	// folder of their own before their first mockPlugins, and go build
	// under that HOME found an empty build cache and module cache (it
	// compiled the standard library and downloaded every module: 76
	// CPU-seconds where the build takes 2).
	buildEnv []string
)

// layout is the graph's layout program (bulwark-graphviz), built plain
// (layouttest).
var layout layouttest.Layout

// testGraphviz is Options.Graphviz in these tests.
func testGraphviz() (string, error) { return layout.Path() }

func TestMain(m *testing.M) {
	buildEnv = os.Environ()
	layout.Env = buildEnv // the tests' fixtures change HOME
	code := m.Run()
	layout.Close()
	if mockDir != "" {
		os.RemoveAll(mockDir)
	}
	os.Exit(code)
}

// mockPlugins builds the real mock provider plugin once: the stacks the
// view shows are applied through the engine with a real plugin process.
func mockPlugins(t testing.TB) string {
	t.Helper()
	mockOnce.Do(func() {
		// make test builds the plugins once for every package's tests
		// (cmd/bulwark's prebuilt.go): use its mock when it is there.
		if dir := os.Getenv("BULWARK_TEST_BIN_DIR"); dir != "" {
			if _, err := os.Stat(filepath.Join(dir, "plugins", "bulwark-provider-mock")); err == nil {
				mockPrebuilt = filepath.Join(dir, "plugins")
				return
			}
		}
		mockDir, mockErr = os.MkdirTemp("", "bulwark-webview-plugins-")
		if mockErr != nil {
			return
		}
		goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
		// -trimpath, as make builds: the packages compile once a run, shared in the build cache with make vet's and build-demo's.
		cmd := exec.Command(goBin, "build", "-trimpath", "-o", filepath.Join(mockDir, "bulwark-provider-mock"), "github.com/bulwark-iac/bulwark/plugins/mock/cmd/bulwark-provider-mock")
		cmd.Env = buildEnv
		out, err := cmd.CombinedOutput()
		if err != nil {
			mockErr = &buildError{out: string(out), err: err}
		}
	})
	if mockErr != nil {
		t.Fatalf("build the mock plugin: %v", mockErr)
	}
	if mockPrebuilt != "" {
		return mockPrebuilt
	}
	return mockDir
}

type buildError struct {
	out string
	err error
}

func (e *buildError) Error() string { return e.err.Error() + "\n" + e.out }

// fixture is a state folder holding stack "shop": one apply that
// succeeded, then one whose new resource's Execute failed.
type fixture struct {
	opts    stack.Options
	failed  string // the failed operation's id
	applied string // the first operation's id
}

const shopV1 = `version: 1
stack: shop
providers:
  mock: {config: {world: %WORLD%}}
resources:
  - name: db
    type: generic
    protection: protected
  - name: cache
    type: generic
    protection: durable
  - name: web
    type: generic
    depends_on: [db]
`

const shopV2 = shopV1 + `  - name: worker
    type: generic
    depends_on: [web]
`

func newFixture(t *testing.T) *fixture {
	t.Helper()
	t.Setenv("HOME", t.TempDir())
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(os.Getenv("HOME"), ".config"))
	t.Setenv("BULWARK_USER", "alice-at-the-desk") // who applied: the history names them
	root := t.TempDir()
	world := filepath.Join(root, "world")
	opts := stack.Options{}
	opts.PluginDirs = []string{mockPlugins(t)}
	opts.StateDir = filepath.Join(root, "state")
	apply := func(text string, fail string) string {
		w := world
		if strings.Contains(text, "stack: fresh") {
			w += "-fresh" // a world of its own: shop's resources are not fresh's
		}
		sp, err := spec.Parse(filepath.Join(root, "stack.yaml"), []byte(strings.ReplaceAll(text, "%WORLD%", w)))
		if err != nil {
			t.Fatal(err)
		}
		o := opts
		o.SimulateFailure = fail
		res, err := stack.Apply(t.Context(), sp, o)
		if code := stack.ExitCode(res, err); (fail == "") != (code == stack.ExitOK) {
			t.Fatalf("apply (failing %q): exit %d, err %v", fail, code, err)
		}
		if res == nil {
			t.Fatalf("apply (failing %q): no result, err %v", fail, err)
		}
		return res.Op
	}
	f := &fixture{opts: opts}
	f.applied = apply(shopV1, "")
	f.failed = apply(shopV2, "worker")
	// A stack whose first apply failed: its protected db, created and
	// not deleted by the rollback, is retained.
	apply(strings.ReplaceAll(shopV2, "stack: shop", "stack: fresh"), "worker")
	return f
}

func (f *fixture) server(t *testing.T, o webview.Options) *httptest.Server {
	srv := httptest.NewServer(webview.New(webview.NewSource(f.opts), o))
	t.Cleanup(srv.Close)
	return srv
}

func get(t *testing.T, url string, header ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

func mustGet(t *testing.T, url string) string {
	t.Helper()
	code, body := get(t, url)
	if code != http.StatusOK {
		t.Fatalf("GET %s: %d\n%s", url, code, body)
	}
	return body
}

func contains(t *testing.T, what, body string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(body, w) {
			t.Errorf("%s does not show %q:\n%s", what, w, body)
		}
	}
}

func TestPagesShowWhatThePersonLooksFor(t *testing.T) {
	f := newFixture(t)
	srv := f.server(t, webview.Options{Graphviz: testGraphviz, Location: "file://state"})

	home := mustGet(t, srv.URL+"/")
	contains(t, "/", home, `href="/stacks/shop"`, "file://state")
	var stacks webview.StacksPage
	decode(t, mustGet(t, srv.URL+"/api/stacks"), &stacks)
	if len(stacks.Stacks) != 2 || stacks.Stacks[1].Name != "shop" || stacks.Stacks[1].Resources != 3 || stacks.Stacks[0].Name != "fresh" {
		t.Errorf("api/stacks = %+v, want fresh, then shop with its 3 resources", stacks.Stacks)
	}
	var fresh webview.StackPage
	decode(t, mustGet(t, srv.URL+"/api/stacks/fresh"), &fresh)
	owned := map[string]string{}
	for _, r := range fresh.Resources {
		owned[r.Name] = r.Protection + "/" + r.Ownership
	}
	if owned["db"] != "protected/retained" {
		t.Errorf("fresh's resources = %v, want db protected and retained by the rollback", owned)
	}
	contains(t, "fresh's page", mustGet(t, srv.URL+"/stacks/fresh"), `o-retained">retained`)

	page := mustGet(t, srv.URL+"/stacks/shop")
	contains(t, "the stack page", page, "<td>db</td>", "<td>cache</td>", "<td>web</td>",
		`<span class="level l-protected">protected</span>`, `<span class="level l-durable">durable</span>`, `o-created">created`)
	if strings.Contains(page, "<td>worker</td>") {
		t.Errorf("the stack page shows worker, whose create failed and was rolled back:\n%s", page)
	}
	var sp webview.StackPage
	decode(t, mustGet(t, srv.URL+"/api/stacks/shop"), &sp)
	levels := map[string]string{}
	for _, r := range sp.Resources {
		levels[r.Name] = r.Protection + "/" + r.Ownership
	}
	if levels["db"] != "protected/created" || levels["cache"] != "durable/created" || levels["web"] != "ephemeral/created" {
		t.Errorf("api/stacks/shop resources = %v", levels)
	}

	hist := mustGet(t, srv.URL+"/stacks/shop/history")
	contains(t, "the history page", hist, f.applied, f.failed, `s-succeeded">succeeded`, "<td>alice-at-the-desk</td>")
	var hp webview.HistoryPage
	decode(t, mustGet(t, srv.URL+"/api/stacks/shop/history"), &hp)
	if len(hp.Operations) != 2 || hp.Operations[0].ID != f.failed || hp.Operations[1].ID != f.applied {
		t.Fatalf("history operations = %+v, want the failed one then the first, newest first", hp.Operations)
	}
	if e := hp.Operations[1].Exit; e == nil || *e != 0 {
		t.Errorf("the first apply's exit = %v, want 0", e)
	}
	if e := hp.Operations[0].Exit; e == nil || *e == 0 {
		t.Errorf("the failed apply's exit = %v (status %s), want non-zero", e, hp.Operations[0].Status)
	}

	op := mustGet(t, srv.URL+"/stacks/shop/operations/"+f.failed)
	contains(t, "the failed operation's timeline", op, `<svg class="axis"`, `row-failed`, `failed-bar`, "worker", "execute failed")
	var tl webview.TimelinePage
	decode(t, mustGet(t, srv.URL+"/api/stacks/shop/operations/"+f.failed), &tl)
	var failedSteps []string
	phases := map[string]bool{}
	for _, s := range tl.Steps {
		if s.Failed {
			failedSteps = append(failedSteps, s.Resource)
		}
		for _, b := range s.Bars {
			phases[b.Phase] = true
			if b.End.Before(b.Start) || b.Start.Before(tl.Start) || b.End.After(tl.End) {
				t.Errorf("%s %s is off the operation's axis: %v..%v in %v..%v", s.Step, b.Phase, b.Start, b.End, tl.Start, tl.End)
			}
		}
	}
	if len(failedSteps) != 1 || failedSteps[0] != "worker" {
		t.Errorf("failed steps = %v, want [worker]", failedSteps)
	}
	if !phases["execute"] {
		t.Errorf("the timeline has no execute phase: %v", phases)
	}
	ok := mustGet(t, srv.URL+"/stacks/shop/operations/"+f.applied)
	if strings.Contains(ok, "row-failed") {
		t.Errorf("the successful apply's timeline marks a failure:\n%s", ok)
	}
}

func decode(t *testing.T, body string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(body), v); err != nil {
		t.Fatalf("%v\n%s", err, body)
	}
}

func TestUnknownAndHostileNamesAreNotFound(t *testing.T) {
	f := newFixture(t)
	srv := f.server(t, webview.Options{Graphviz: testGraphviz})
	for _, path := range []string{"/stacks/nope", "/api/stacks/nope/history", "/stacks/..%2F..%2Fetc", "/stacks/shop/operations/op_nope", "/api/stacks/.shop/operations/x"} {
		if code, body := get(t, srv.URL+path); code != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404\n%s", path, code, body)
		}
	}
	resp, err := http.Post(srv.URL+"/stacks/shop", "text/plain", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d, want 405", resp.StatusCode)
	}
	if _, err := os.Stat(filepath.Join(f.opts.StateDir, "nope")); !os.IsNotExist(err) {
		t.Errorf("asking for stack nope made its folder: %v", err)
	}
}

func TestTokenIsRequiredOnEveryRequest(t *testing.T) {
	f := newFixture(t)
	srv := f.server(t, webview.Options{Graphviz: testGraphviz, Token: "t0ken-5ecret"})
	for _, path := range []string{"/", "/api/stacks", "/stacks/shop", "/static/view.css", "/static/live.js", "/stacks/shop/operations/" + f.failed, "/stacks/shop/operations/" + f.failed + "/events"} {
		if code, _ := get(t, srv.URL+path); code != http.StatusUnauthorized {
			t.Errorf("GET %s without the token: %d, want 401", path, code)
		}
		if code, _ := get(t, srv.URL+path+"?token=wrong"); code != http.StatusUnauthorized {
			t.Errorf("GET %s with a wrong token: %d, want 401", path, code)
		}
		if code, _ := get(t, srv.URL+path, "Authorization", "Bearer t0ken-5ecret"); code != http.StatusOK {
			t.Errorf("GET %s with the token's header: %d, want 200", path, code)
		}
	}
	// A browser given the token in the query keeps it on every link.
	body := mustGet(t, srv.URL+"/stacks/shop?token=t0ken-5ecret")
	contains(t, "the stack page", body, `href="/stacks/shop/history?token=t0ken-5ecret"`, `href="/static/view.css?token=t0ken-5ecret"`)
}

func TestWithoutTokenOnlyLoopbackHostsAreAnswered(t *testing.T) {
	f := newFixture(t)
	h := webview.New(webview.NewSource(f.opts), webview.Options{Graphviz: testGraphviz})
	for host, want := range map[string]int{"127.0.0.1:8080": 200, "localhost:8080": 200, "[::1]:8080": 200, "evil.example:8080": 403, "192.168.1.9": 403} {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.Host = host
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != want {
			t.Errorf("Host %s: %d, want %d", host, w.Code, want)
		}
	}
}

// Serving every page writes nothing: the state folder's every file, its
// name, mode and bytes, is the same after.
func TestServingWritesNothing(t *testing.T) {
	f := newFixture(t)
	before := snapshot(t, f.opts.StateDir)
	srv := f.server(t, webview.Options{Graphviz: testGraphviz})
	for _, p := range pages(f) {
		mustGet(t, srv.URL+p)
	}
	if after := snapshot(t, f.opts.StateDir); after != before {
		t.Errorf("serving changed the state folder:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

func snapshot(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		b.WriteString(rel + " " + info.Mode().String())
		if d.Type().IsRegular() {
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			b.WriteString(" " + string(data))
		}
		b.WriteString("\n")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// pages are every page and API answer the view serves for f's stack.
func pages(f *fixture) []string {
	out := []string{"/", "/api/stacks", "/static/view.css"}
	for _, p := range []string{"/stacks/shop", "/stacks/shop/history", "/stacks/shop/operations/" + f.failed, "/stacks/shop/operations/" + f.applied} {
		out = append(out, p, "/api"+p)
	}
	return out
}

// A journal line that is not a record (torn, damaged) is named on the
// pages, and the rest of the journal is still shown.
func TestADamagedJournalLineIsNamedNotFatal(t *testing.T) {
	f := newFixture(t)
	jf, err := os.OpenFile(filepath.Join(stack.StackDir(f.opts.StateDir, "shop"), journal.FileName), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := jf.WriteString("{\"id\": not a record\n"); err != nil {
		t.Fatal(err)
	}
	if err := jf.Close(); err != nil {
		t.Fatal(err)
	}
	srv := f.server(t, webview.Options{Graphviz: testGraphviz})
	op := mustGet(t, srv.URL+"/stacks/shop/operations/"+f.failed)
	contains(t, "the timeline", op, `<p class="failed">Journal: `, "row-failed")
	contains(t, "the stack page", mustGet(t, srv.URL+"/stacks/shop"), `<p class="failed">Journal: `, "<td>db</td>")
}
