package webview_test

import (
	"flag"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bulwark-iac/bulwark/core/inspect"
	"github.com/bulwark-iac/bulwark/core/protection"
	"github.com/bulwark-iac/bulwark/core/secrets"
	"github.com/bulwark-iac/bulwark/core/state"
	"github.com/bulwark-iac/bulwark/core/webview"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/golden from what the view answers now (review the diff)")

// createDoc is a second saved plan, of another stack: one create, nothing
// refused.
const createDoc = `{
  "format_version": "1.0",
  "stack": "net",
  "revision": 0,
  "resource_changes": [
    {"address": "vpc", "type": "network", "provider": "mock", "action": "create", "protection": "durable",
     "ownership": "absent", "before": null, "after": {"cidr": "10.0.0.0/16"}}
  ],
  "summary": {"create": 1, "update": 0, "replace": 0, "delete": 0, "no_op": 0, "has_changes": true},
  "refused": null,
  "conflict": null,
  "variables": [],
  "data_reads": [],
  "stack_reads": [],
  "moves": [],
  "forgets": [],
  "targets": [],
  "diagnostics": []
}`

// The pages that show saved plans answer byte for byte what they answered
// when testdata/golden was written: the stacks page and a stack's page
// (each lists the plans, from one shared template), their JSON, each
// plan's page and its document (read back into the one declaration of the
// plan document, core/plandoc). A change that moves code without changing
// behaviour leaves every file as it is; `go test -run TestGoldenPages
// -update` rewrites them when a change is meant to.
func TestGoldenPages(t *testing.T) {
	const secret = "s3cr3t-in-a-note-9f2a"
	at := time.Date(2026, 12, 3, 13, 0, 0, 0, time.UTC)
	shop, err := webview.NewSavedPlan(webview.PlanMeta{File: "plans/shop.plan", Operation: "update", CreatedAt: at,
		BulwarkVersion: "v0.9.0", SpecFile: "shop.yaml", Serial: 12, Lineage: "lin-1"}, []byte(planDoc))
	if err != nil {
		t.Fatal(err)
	}
	net, err := webview.NewSavedPlan(webview.PlanMeta{File: "net <first>.plan", Operation: "apply", CreatedAt: at.Add(90 * time.Second),
		SpecFile: "net.yaml"}, []byte(createDoc))
	if err != nil {
		t.Fatal(err)
	}
	red := secrets.NewRedactor()
	red.Add(secret)
	src := &memSource{
		stacks: []string{"net", "shop"},
		status: &inspect.StatusReport{Stack: "shop", Revision: 4, Resources: []inspect.StatusResource{{Name: "db"}, {Name: "logs"}}},
		res: []*state.Resource{
			{Name: "db", Type: "dynamodb_table", Provider: "mock", ID: "tbl-0001", Protection: protection.Durable},
			{Name: "logs", Type: "s3_bucket", Provider: "mock", ID: "bkt-logs", Protection: protection.Protected},
		},
	}
	h := webview.New(src, webview.Options{Graphviz: testGraphviz, Token: "tok-9", Redactor: red, Location: "state folder ./state",
		Plans: []webview.SavedPlan{shop, net}})
	for name, path := range map[string]string{
		"stacks.html":     "/?token=tok-9",
		"stacks.json":     "/api/stacks?token=tok-9",
		"stack-shop.html": "/stacks/shop?token=tok-9",
		"stack-shop.json": "/api/stacks/shop?token=tok-9",
		"stack-net.html":  "/stacks/net?token=tok-9",
		"plan-1.html":     "/plans/1?token=tok-9",
		"plan-1.json":     "/api/plans/1?token=tok-9",
		"plan-2.html":     "/plans/2?token=tok-9",
		"plan-2.json":     "/api/plans/2?token=tok-9",
	} {
		req := httptest.NewRequest(http.MethodGet, path, nil)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != http.StatusOK {
			t.Errorf("GET %s: %d\n%s", path, w.Code, w.Body)
			continue
		}
		got := w.Body.String()
		if strings.Contains(got, secret) {
			t.Errorf("GET %s holds the secret in clear", path)
		}
		file := filepath.Join("testdata", "golden", name)
		if *updateGolden {
			if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(file)
		if err != nil {
			t.Fatalf("%v (go test -run TestGoldenPages -update writes it)", err)
		}
		if got != string(want) {
			t.Errorf("GET %s differs from %s at byte %d:\ngot:  %q\nwant: %q", path, file, firstDiff(got, string(want)),
				around(got, firstDiff(got, string(want))), around(string(want), firstDiff(got, string(want))))
		}
	}
}

// firstDiff is the index of the first byte where a and b differ.
func firstDiff(a, b string) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// around is s near i, for a readable failure.
func around(s string, i int) string {
	return s[max(0, i-80):min(len(s), i+80)]
}
