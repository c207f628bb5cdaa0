package webview_test

import (
	"encoding/xml"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/bulwark-iac/bulwark/core/webview"
)

// The graph page draws the current revision's spec (shop's second: db,
// cache, web and worker) from the backend alone: the protected db carries
// the protected class, the others do not, and the page is linked from the
// stack's.
func TestGraphPageShowsTheProtectedNode(t *testing.T) {
	f := newFixture(t)
	srv := f.server(t, webview.Options{})

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
