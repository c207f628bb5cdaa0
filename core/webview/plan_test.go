package webview_test

import (
	"bytes"
	"errors"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/bulwark-iac/bulwark/core/inspect"
	"github.com/bulwark-iac/bulwark/core/secrets"
	"github.com/bulwark-iac/bulwark/core/webview"
)

// planDoc is a saved plan's show --json document as jsonview writes it: a
// durable table replaced with --replace (created first), a protected
// bucket whose delete the ladder refuses, a sensitive attribute already
// secrets.Mask, and the secret itself once in a note (as a provider's
// message may hold it), which only the redactor can mask.
const planDoc = `{
  "format_version": "1.0",
  "stack": "shop",
  "revision": 4,
  "resource_changes": [
    {"address": "db", "type": "dynamodb_table", "provider": "mock", "action": "replace", "protection": "durable",
     "ownership": "owned", "found_id": "tbl-0001",
     "before": {"table": "t1", "secret": "(sensitive)", "size": 1},
     "after": {"table": "t2", "secret": "(sensitive)", "size": 1},
     "force_new": ["table"], "changed": ["table", "secret"], "sensitive": ["secret"],
     "replace_mode": "create_first", "replace_requested": true, "data_loss": true},
    {"address": "logs", "type": "s3_bucket", "provider": "mock", "action": "delete", "protection": "protected",
     "ownership": "owned", "found_id": "bkt-logs", "before": {"bucket": "logs-1"},
     "note": "drifted: tag owner=s3cr3t-in-a-note-9f2a"},
    {"address": "app", "type": "compute", "provider": "mock", "action": "no-op", "protection": "ephemeral",
     "before": {"zone": "z1"}, "after": {"zone": "z1"}}
  ],
  "summary": {"create": 0, "update": 0, "replace": 1, "delete": 1, "no_op": 1, "has_changes": true},
  "refused": {"operation": "apply", "resources": ["logs"], "message": "refused: it would delete protected resource(s) logs"},
  "conflict": null,
  "variables": [{"name": "dbpass", "before": "(sensitive)", "after": "(sensitive)", "sensitive": true}],
  "data_reads": [{"address": "data.ami", "name": "ami", "type": "image", "provider": "mock", "attributes": {"id": "ami-1"}}],
  "stack_reads": [{"stack": "net", "revision": 2, "outputs": {"vpc": "vpc-9"}}],
  "moves": [{"from": "old_app", "to": "app", "id": "i-1", "type": "compute"}],
  "forgets": [{"address": "legacy", "id": "l-1", "type": "generic", "protection": "durable"}],
  "targets": ["db"],
  "diagnostics": [{"severity": "warning", "message": "this plan covers only the targeted resources"}]
}`

func TestPlanPageSelfContained(t *testing.T) {
	const secret = "s3cr3t-in-a-note-9f2a"
	page, err := webview.NewPlanPage(webview.PlanMeta{File: "p.plan", Operation: "update", CreatedAt: time.Date(2026, 12, 3, 13, 0, 0, 0, time.UTC),
		BulwarkVersion: "v0.9.0", SpecFile: "shop.yaml", Serial: 12, Lineage: "lin-1"}, []byte(planDoc))
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Replacements) != 1 || page.Replacements[0].Address != "db" {
		t.Fatalf("replacements = %+v, want db alone", page.Replacements)
	}
	red := secrets.NewRedactor()
	red.Add(secret)
	var b bytes.Buffer
	if err := webview.RenderPlan(&b, page, red); err != nil {
		t.Fatal(err)
	}
	html := b.String()
	for _, want := range []string{
		// The replacement names what it deletes, and when.
		`the current <code>db</code> (id <code>tbl-0001</code>) is deleted last, in the cleanup phase`,
		`<strong>+/-</strong> creates the new one first`,
		`Its data will be deleted.`,
		`Requested with <code>--replace</code>.`,
		// The ladder's refusal, and the refused resource marked.
		`Refused: an apply of this plan stops before any step (exit 3)`,
		`refused: it would delete protected resource(s) logs`,
		`<section class="change a-delete row-failed" id="r-logs">`,
		`<span class="level l-protected">protected</span> 1`,
		// The diff: the force_new attribute old → new, the sensitive one masked.
		`table <span class="failed">forces replacement</span>`,
		`<code>&#34;t1&#34;</code></td><td>→</td>`,
		`secret <span class="note">sensitive</span></td>`,
		`<code>&#34;(sensitive)&#34;</code>`,
		// Data and stack reads, moves and forgets, the targets warning.
		`<code>data.ami</code>`, `vpc-9`, `moved <code>old_app</code> → <code>app</code>`, `forgotten <code>legacy</code>`,
		`warning: this plan covers only the targeted resources`, `Targets: <code>db</code>`,
		`against revision 4 (state serial 12, lineage <code>lin-1</code>)`,
	} {
		if !strings.Contains(html, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(html, secret) {
		t.Errorf("the page holds the secret %q in clear", secret)
	}
	// One document, its CSS inline, nothing fetched, no script.
	if n := strings.Count(html, "<html"); n != 1 || !strings.HasSuffix(strings.TrimSpace(html), "</html>") {
		t.Errorf("want one whole document, got %d <html and ending %q", n, html[max(0, len(html)-20):])
	}
	if !strings.Contains(html, "<style>body{") {
		t.Error("the CSS is not inline")
	}
	for _, re := range []string{`(?i)\bsrc\s*=`, `(?i)\bhref\s*=`, `(?i)<script`, `(?i)<link`, `(?i)https?://`, `(?i)@import|url\(`} {
		if loc := regexp.MustCompile(re).FindStringIndex(html); loc != nil {
			t.Errorf("the page fetches or runs something (%s): %q", re, html[loc[0]:min(len(html), loc[1]+40)])
		}
	}
	// The unchanged resource is counted, not listed.
	if strings.Contains(html, `id="r-app"`) {
		t.Error("an unchanged resource is listed")
	}
}

func TestPlanPageBadDocument(t *testing.T) {
	_, err := webview.NewPlanPage(webview.PlanMeta{}, []byte(`{"resource_changes": 7}`))
	if err == nil || !strings.Contains(err.Error(), "read the plan's document") {
		t.Fatalf("err = %v, want one naming the plan's document", err)
	}
	var se interface{ Unwrap() error }
	if !errors.As(err, &se) {
		t.Fatalf("err %v does not wrap its cause", err)
	}
}

// The view serves a saved plan (bulwark ui --plan): listed on the stacks
// page and its stack's page, its review page at /plans/1 in the view's
// layout, its document at /api/plans/1 as show --json printed it; the
// secret the redactor knows masked in each, the token required, any other
// number a 404.
func TestViewServesSavedPlans(t *testing.T) {
	const secret = "s3cr3t-in-a-note-9f2a"
	sp, err := webview.NewSavedPlan(webview.PlanMeta{File: "shop.plan", Operation: "update",
		CreatedAt: time.Date(2026, 12, 3, 13, 0, 0, 0, time.UTC), SpecFile: "shop.yaml", Serial: 12}, []byte(planDoc))
	if err != nil {
		t.Fatal(err)
	}
	red := secrets.NewRedactor()
	red.Add(secret)
	src := &memSource{stacks: []string{"shop"}, status: &inspect.StatusReport{Stack: "shop", Revision: 4}}
	h := webview.New(src, webview.Options{Graphviz: testGraphviz, Token: "tok-9", Redactor: red, Plans: []webview.SavedPlan{sp}})
	get := func(path string) (int, string) {
		t.Helper()
		req := httptest.NewRequest(http.MethodGet, path, nil)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w.Code, w.Body.String()
	}
	for path, want := range map[string][]string{
		"/?token=tok-9":                {`<h2>Saved plans</h2>`, `<a href="/plans/1?token=tok-9"><code>shop.plan</code></a>`, `0 to create, 0 to update, 1 to replace, 1 to delete <span class="failed">refused</span>`},
		"/stacks/shop?token=tok-9":     {`<h2>Saved plans</h2>`, `<a href="/plans/1?token=tok-9">`},
		"/api/stacks?token=tok-9":      {`"plans": [`, `"n": 1`, `"file": "shop.plan"`, `"refused": true`},
		"/api/stacks/shop?token=tok-9": {`"n": 1`, `"stack": "shop"`},
		"/plans/1?token=tok-9":         {`<link rel="stylesheet" href="/static/view.css?token=tok-9">`, `Plan for stack shop`, `<strong>+/-</strong> creates the new one first`, `refused: it would delete protected resource(s) logs`, `<code>&#34;(sensitive)&#34;</code>`, `drifted: tag owner=(sensitive)`},
		"/api/plans/1?token=tok-9":     {`"stack": "shop"`, `"action": "replace"`, `"secret": "(sensitive)"`, `"note": "drifted: tag owner=(sensitive)"`},
	} {
		code, body := get(path)
		if code != http.StatusOK {
			t.Errorf("GET %s: %d\n%s", path, code, body)
			continue
		}
		for _, w := range want {
			if !strings.Contains(body, w) {
				t.Errorf("GET %s lacks %q:\n%s", path, w, body)
			}
		}
		if strings.Contains(body, secret) {
			t.Errorf("GET %s holds the secret %q in clear", path, secret)
		}
	}
	for _, path := range []string{"/plans/0?token=tok-9", "/plans/2?token=tok-9", "/api/plans/x?token=tok-9"} {
		if code, body := get(path); code != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404\n%s", path, code, body)
		}
	}
	for _, path := range []string{"/plans/1", "/api/plans/1"} {
		if code, body := get(path); code != http.StatusUnauthorized || strings.Contains(body, "shop") {
			t.Errorf("GET %s without the token: %d, want 401 and nothing of the plan\n%s", path, code, body)
		}
	}
	// Another stack's page does not list the plan.
	other := webview.New(&memSource{stacks: []string{"net"}, status: &inspect.StatusReport{Stack: "net"}}, webview.Options{Graphviz: testGraphviz, Plans: []webview.SavedPlan{sp}})
	req := httptest.NewRequest(http.MethodGet, "http://127.0.0.1/stacks/net", nil)
	w := httptest.NewRecorder()
	other.ServeHTTP(w, req)
	if w.Code != http.StatusOK || strings.Contains(w.Body.String(), "Saved plans") {
		t.Errorf("GET /stacks/net: %d, lists another stack's plan:\n%s", w.Code, w.Body.String())
	}
}
