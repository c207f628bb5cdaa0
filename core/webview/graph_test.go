package webview_test

import (
	"encoding/xml"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/bulwark-iac/bulwark/core/graphsvg"
	"github.com/bulwark-iac/bulwark/core/inspect"
	"github.com/bulwark-iac/bulwark/core/journal"
	"github.com/bulwark-iac/bulwark/core/protection"
	"github.com/bulwark-iac/bulwark/core/resolve"
	"github.com/bulwark-iac/bulwark/core/secrets"
	"github.com/bulwark-iac/bulwark/core/spec"
	"github.com/bulwark-iac/bulwark/core/stack"
	"github.com/bulwark-iac/bulwark/core/state"
	"github.com/bulwark-iac/bulwark/core/webview"
)

// The graph page draws the current revision's spec (shop's second: db,
// cache, web and worker) from the backend alone: the protected db carries
// the protected class, the others do not, and the page is linked from the
// stack's.
func TestGraphPageShowsTheProtectedNode(t *testing.T) {
	f := newFixture(t)
	srv := f.server(t, webview.Options{Graphviz: testGraphviz})

	contains(t, "/stacks/shop", mustGet(t, srv.URL+"/stacks/shop"), `href="/stacks/shop/graph"`)
	page := mustGet(t, srv.URL+"/stacks/shop/graph")
	i := strings.Index(page, "<svg")
	j := strings.LastIndex(page, "</svg>")
	if i < 0 || j < i {
		t.Fatalf("graph page has no SVG:\n%s", page)
	}
	if err := xml.Unmarshal([]byte(page[i:j+len("</svg>")]), new(struct{})); err != nil {
		t.Fatalf("the SVG is not XML: %v", err)
	}
	node := regexp.MustCompile(`<g id="node\d+" class="([^"]*)">\s*<title>([^<]*)</title>`)
	classes := map[string]string{}
	for _, m := range node.FindAllStringSubmatch(page, -1) {
		classes[m[2]] = m[1]
	}
	for name, protected := range map[string]bool{"db": true, "cache": false, "web": false} {
		c, ok := classes[name]
		if !ok {
			t.Fatalf("no node %s in %v", name, classes)
		}
		if strings.Contains(c, " protected") != protected {
			t.Errorf("node %s class %q, protected %v", name, c, protected)
		}
	}
	if !strings.Contains(classes["cache"], "level&#45;durable") {
		t.Errorf("cache's class %q lacks its level", classes["cache"])
	}
	// The failed apply's revision was not made current: worker, which
	// only it added, is not drawn.
	if _, ok := classes["worker"]; ok {
		t.Errorf("worker is drawn, from a revision that is not current")
	}

	// Collapse and expand are links; a bad word and an unknown stack are
	// refused, not drawn.
	contains(t, "graph", page, `href="/stacks/shop/graph?collapse=all"`, `href="/stacks/shop/graph?collapse=none"`)
	mustGet(t, srv.URL+"/stacks/shop/graph?collapse=all")
	var doc webview.GraphPage
	decode(t, mustGet(t, srv.URL+"/api/stacks/shop/graph"), &doc)
	if doc.Stack != "shop" || doc.Revision == 0 || !strings.Contains(string(doc.SVG), "<title>db</title>") {
		t.Errorf("/api/stacks/shop/graph: stack %q revision %d, svg %.80q", doc.Stack, doc.Revision, doc.SVG)
	}
	if code, _ := get(t, srv.URL+"/stacks/shop/graph?collapse=some"); code != http.StatusBadRequest {
		t.Errorf("?collapse=some answered %d, want 400", code)
	}
	if code, _ := get(t, srv.URL+"/stacks/nope/graph"); code != http.StatusNotFound {
		t.Errorf("graph of an unknown stack: %d, want 404", code)
	}
}

// A stack built from a module: its revision records the module's file
// with the spec, so the graph page draws the module's resources under the
// call's name, reading nothing from disk (the module folder is removed
// before the page is served), and no placeholder node for the call.
func TestGraphPageDrawsRecordedModules(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(os.Getenv("HOME"), ".config"))
	root := t.TempDir()
	mod := filepath.Join(root, "modules", "net")
	if err := os.MkdirAll(mod, 0o755); err != nil {
		t.Fatal(err)
	}
	const module = "resources:\n  - name: vpc\n    type: generic\n    protection: protected\n  - name: subnet\n    type: generic\n    depends_on: [vpc]\n"
	if err := os.WriteFile(filepath.Join(mod, "module.yaml"), []byte(module), 0o644); err != nil {
		t.Fatal(err)
	}
	text := "version: 1\nstack: estate\nproviders:\n  mock: {config: {world: " + filepath.Join(root, "world") + "}}\nmodules:\n  - {name: net, source: ./modules/net}\nresources:\n  - name: app\n    type: generic\n    depends_on: [net]\n"
	sp, err := spec.Parse(filepath.Join(root, "stack.yaml"), []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	opts := stack.Options{}
	opts.PluginDirs = []string{mockPlugins(t)}
	opts.StateDir = filepath.Join(root, "state")
	if res, err := stack.Apply(t.Context(), sp, opts); stack.ExitCode(res, err) != stack.ExitOK {
		t.Fatalf("apply: %v", err)
	}
	if err := os.RemoveAll(filepath.Join(root, "modules")); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(webview.New(webview.NewSource(opts), webview.Options{Graphviz: testGraphviz}))
	t.Cleanup(srv.Close)
	page := mustGet(t, srv.URL+"/stacks/estate/graph?collapse=none")
	node := regexp.MustCompile(`<g id="node\d+" class="([^"]*)">\s*<title>([^<]*)</title>`)
	classes := map[string]string{}
	for _, m := range node.FindAllStringSubmatch(page, -1) {
		classes[m[2]] = m[1]
	}
	for _, name := range []string{"net.vpc", "net.subnet", "app"} {
		if _, ok := classes[name]; !ok {
			t.Errorf("no node %s in %v", name, classes)
		}
	}
	if !strings.Contains(classes["net.vpc"], " protected") {
		t.Errorf("net.vpc's class %q is not protected", classes["net.vpc"])
	}
	if _, ok := classes["module.net"]; ok || strings.Contains(page, "are not recorded with the revision") {
		t.Errorf("the module call is drawn as a placeholder although its files are recorded:\n%v", classes)
	}
}

// A stack applied with a secrets key, as the CLI always does, keeps its
// revision's spec sealed; the view holds no key. The graph page is still
// drawn, from the state's records: every resource with its level (db's
// protected class) and the recorded dependency web → db.
func TestGraphPageDrawsASealedRevisionFromTheState(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(os.Getenv("HOME"), ".config"))
	root := t.TempDir()
	key, err := secrets.NewKey("test")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(strings.ReplaceAll(shopV1, "%WORLD%", filepath.Join(root, "world")), "stack: shop\n",
		"stack: shop\nvariables:\n  zones: {type: map, default: {a: 1, b: 2}}\n", 1) + `  - name: edge
    type: generic
    for_each: ${var.zones}
    depends_on: [web]
`
	sp, err := spec.Parse(filepath.Join(root, "stack.yaml"), []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	vals, _, err := resolve.Values(sp, resolve.Inputs{})
	if err != nil {
		t.Fatal(err)
	}
	if sp, err = resolve.Expand(sp, vals); err != nil {
		t.Fatal(err)
	}
	opts := stack.Options{}
	opts.PluginDirs = []string{mockPlugins(t)}
	opts.StateDir = filepath.Join(root, "state")
	opts.Secrets = &secrets.Source{Env: key.Encode()}
	if res, err := stack.Apply(t.Context(), sp, opts); stack.ExitCode(res, err) != stack.ExitOK {
		t.Fatalf("apply: %v", err)
	}
	// The revision's spec is stored sealed, as the CLI writes it.
	revs, err := filepath.Glob(filepath.Join(opts.StateDir, "shop", "*", "*"))
	if err != nil {
		t.Fatal(err)
	}
	sealedSeen := false
	for _, p := range revs {
		if b, err := os.ReadFile(p); err == nil && strings.Contains(string(b), "resources:") {
			t.Fatalf("%s holds the spec in clear", p)
		}
		if strings.Contains(p, "revision") {
			sealedSeen = true
		}
	}
	if !sealedSeen {
		t.Fatalf("no revision file under %s: %v", opts.StateDir, revs)
	}

	view := opts
	view.Secrets = nil // the view needs no key and is given none
	srv := httptest.NewServer(webview.New(webview.NewSource(view), webview.Options{Graphviz: testGraphviz}))
	t.Cleanup(srv.Close)
	page := mustGet(t, srv.URL+"/stacks/shop/graph?collapse=none")
	node := regexp.MustCompile(`<g id="node\d+" class="([^"]*)">\s*<title>([^<]*)</title>`)
	classes := map[string]string{}
	for _, m := range node.FindAllStringSubmatch(page, -1) {
		classes[m[2]] = m[1]
	}
	for name, protected := range map[string]bool{"db": true, "cache": false, "web": false, "edge[a]": false, "edge[b]": false} {
		c, ok := classes[name]
		if !ok {
			t.Fatalf("no node %s in %v", name, classes)
		}
		if strings.Contains(c, " protected") != protected {
			t.Errorf("node %s class %q, protected %v", name, c, protected)
		}
	}
	if !regexp.MustCompile(`<title>web&#45;&gt;db</title>`).MatchString(page) {
		t.Errorf("no edge web → db in the SVG")
	}
	if !strings.Contains(page, "edge[*]") {
		t.Errorf("the for_each instances are not grouped as edge[*]")
	}
	contains(t, "graph", page, "drawn from the state")
	var doc webview.GraphPage
	decode(t, mustGet(t, srv.URL+"/api/stacks/shop/graph"), &doc)
	if doc.From != "state" || doc.Revision != 1 {
		t.Errorf("/api graph: from %q revision %d, want state, 1", doc.From, doc.Revision)
	}
}

// The page of a stack whose operation is not finished marks each resource
// with that operation's action from its journal steps; collapsed, each
// group links to its expansion, and ?expand= draws that group in full with
// a link back. An unknown group is a 400.
func TestGraphPageShowsPendingActionsAndExpandsGroups(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	src := &memSource{
		stacks: []string{"big"},
		status: &inspect.StatusReport{Stack: "big", Revision: 2, Unfinished: []string{"op_7"}},
		res: []*state.Resource{
			{Name: "db", Type: "generic", Protection: protection.Protected},
			{Name: "web[a]", Type: "compute", Protection: protection.Ephemeral, DependsOn: []string{"db"}},
			{Name: "web[b]", Type: "compute", Protection: protection.Ephemeral, DependsOn: []string{"db"}},
		},
		ops: []journal.Record{
			{Op: "op_7", Kind: journal.KindOp, Type: "apply", Status: journal.OpRunning, Time: t0},
			{Op: "op_7", Kind: journal.KindStep, Step: "web[a]", Resource: "web[a]", Action: "replace", Phase: "execute", Status: journal.StepStarted, Time: t0},
			{Op: "op_7", Kind: journal.KindStep, Step: "db", Resource: "db", Action: "check", Phase: "check", Status: journal.StepOK, Time: t0},
		},
		spec: &webview.RecordedSpec{Revision: 2, File: "stack.yaml", Sealed: true},
	}
	srv := httptest.NewServer(webview.New(src, webview.Options{Graphviz: testGraphviz}))
	t.Cleanup(srv.Close)

	page := mustGet(t, srv.URL+"/stacks/big/graph?collapse=none")
	contains(t, "graph", page, `class="node resource level&#45;ephemeral action&#45;replace">`, `href="/stacks/big/operations/op_7"`)
	if !regexp.MustCompile(`action&#45;replace">\s*<title>web\[a\]</title>`).MatchString(page) {
		t.Errorf("web[a] is not marked replace")
	}
	if !regexp.MustCompile(`protected action&#45;noop">\s*<title>db</title>`).MatchString(page) {
		t.Errorf("db is not marked noop")
	}
	var doc webview.GraphPage
	decode(t, mustGet(t, srv.URL+"/api/stacks/big/graph"), &doc)
	if doc.Operation != "op_7" {
		t.Errorf("/api graph operation %q, want op_7", doc.Operation)
	}

	collapsed := mustGet(t, srv.URL+"/stacks/big/graph?collapse=all")
	contains(t, "collapsed graph", collapsed, `<title>group:web[*]</title>`, `xlink:href="/stacks/big/graph?collapse=all&amp;expand=web%5B%2A%5D"`)
	expanded := mustGet(t, srv.URL+"/stacks/big/graph?collapse=all&expand=web%5B%2A%5D")
	contains(t, "expanded graph", expanded, `<title>web[a]</title>`, `<title>web[b]</title>`, `web[*] (collapse)`, `xlink:href="/stacks/big/graph?collapse=all"`)
	if strings.Contains(expanded, `<title>group:web[*]</title>`) {
		t.Errorf("web[*] is still collapsed with ?expand=")
	}
	if code, _ := get(t, srv.URL+"/stacks/big/graph?expand=nope"); code != http.StatusBadRequest {
		t.Errorf("?expand=nope answered %d, want 400", code)
	}
}

// Without the layout program the graph page is an error that says what is
// missing and how to install it; the rest of the view works.
func TestGraphPageWithoutTheLayoutProgram(t *testing.T) {
	f := newFixture(t)
	missing := filepath.Join(t.TempDir(), graphsvg.ProgramName())
	srv := f.server(t, webview.Options{Graphviz: func() (string, error) {
		return "", &graphsvg.MissingProgramError{Path: missing, Err: os.ErrNotExist}
	}})
	code, body := get(t, srv.URL+"/stacks/shop/graph")
	if code != http.StatusInternalServerError || !strings.Contains(body, missing) || !strings.Contains(body, "go install github.com/bulwark-iac/bulwark/cmd/bulwark/cmd/bulwark-graphviz@") {
		t.Fatalf("graph page without bulwark-graphviz: %d\n%s", code, body)
	}
	contains(t, "/stacks/shop", mustGet(t, srv.URL+"/stacks/shop"), `href="/stacks/shop/graph"`)
}
