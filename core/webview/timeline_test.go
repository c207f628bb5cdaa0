package webview_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/bulwark-iac/bulwark/core/journal"
	"github.com/bulwark-iac/bulwark/core/webview"
)

func serveOp(t *testing.T, recs []journal.Record, path string) (int, string) {
	t.Helper()
	h := webview.New(&memSource{ops: recs}, webview.Options{})
	req := httptest.NewRequest(http.MethodGet, path, nil)
	req.Host = "localhost"
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w.Code, w.Body.String()
}

// A running operation (the journal as it is being written): its open
// phase runs to the last record, it has no exit code yet.
func TestTimelineOfARunningOperation(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	recs := []journal.Record{
		{Op: "op_1", Kind: journal.KindOp, Type: "apply", Status: journal.OpRunning, Time: t0},
		{Op: "op_1", Kind: journal.KindStep, Step: "a", Resource: "a", Action: "create", Phase: "execute", Status: journal.StepStarted, Time: t0.Add(time.Second)},
		{Op: "op_1", Kind: journal.KindStep, Step: "a", Resource: "a", Action: "create", Phase: "execute", Status: journal.StepOK, Time: t0.Add(3 * time.Second)},
		{Op: "op_1", Kind: journal.KindStep, Step: "b", Resource: "b", Action: "create", Phase: "execute", Status: journal.StepStarted, Time: t0.Add(4 * time.Second)},
	}
	code, body := serveOp(t, recs, "/api/stacks/s/operations/op_1")
	if code != http.StatusOK {
		t.Fatalf("%d %s", code, body)
	}
	var p webview.TimelinePage
	if err := json.Unmarshal([]byte(body), &p); err != nil {
		t.Fatal(err)
	}
	if p.Status != journal.OpRunning || p.Exit != nil || !p.End.Equal(t0.Add(4*time.Second)) {
		t.Errorf("status %s exit %v end %v: want running, no exit, ending at the last record", p.Status, p.Exit, p.End)
	}
	if len(p.Steps) != 2 || p.Steps[0].Resource != "a" || p.Steps[1].Bars[0].Status != journal.StepStarted {
		t.Fatalf("steps = %+v", p.Steps)
	}
	if a := p.Steps[0].Bars[0]; a.Duration() != 2*time.Second || a.Status != journal.StepOK {
		t.Errorf("a's execute = %+v, want ok in 2s", a)
	}
	_, html := serveOp(t, recs, "/stacks/s/operations/op_1")
	// a's bar starts at a quarter of the axis and covers half of it.
	if !strings.Contains(html, `x="25.000%" y="2" width="50.000%"`) {
		t.Errorf("a's bar is not at 25%% for 50%% of the axis:\n%s", html)
	}
}

// A compacted operation keeps its summary alone: the page says its steps
// are gone rather than showing an empty timeline as if nothing ran.
func TestTimelineOfACompactedOperation(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	recs := []journal.Record{{Op: "op_1", Kind: journal.KindSummary, Type: "apply", Status: journal.OpCompensated, Time: t0, End: t0.Add(time.Minute), Error: "rolled back"}}
	code, body := serveOp(t, recs, "/stacks/s/operations/op_1")
	if code != http.StatusOK || !strings.Contains(body, "it was compacted") || !strings.Contains(body, "exit 11") {
		t.Errorf("%d:\n%s", code, body)
	}
	if code, _ := serveOp(t, nil, "/stacks/s/operations/op_2"); code != http.StatusNotFound {
		t.Errorf("an operation with no record: %d, want 404", code)
	}
}
