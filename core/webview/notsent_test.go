package webview_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/bulwark-iac/bulwark/core/journal"
	"github.com/bulwark-iac/bulwark/core/webview"
)

// A step whose start was journaled while it waited for a write slot, and
// whose call never went out (the run stopped: "not_sent"), did no work: its
// bar is a mark where it stopped, not a span from its start, and the
// critical path does not run through it.
func TestTimelineOfAStartThatWasNotSent(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	step := func(name, status string, at time.Duration) journal.Record {
		return journal.Record{ID: name + status, Op: "op_1", Kind: journal.KindStep, Step: name, Resource: name, Action: "create", Phase: "execute", Status: status, Time: t0.Add(at)}
	}
	notSent := step("b", journal.StepNotSent, 3*time.Second)
	notSent.Key = "bstarted"
	recs := []journal.Record{
		{Op: "op_1", Kind: journal.KindOp, Type: "apply", Status: journal.OpRunning, Time: t0},
		step("a", journal.StepStarted, time.Second),
		step("b", journal.StepStarted, time.Second),
		step("a", journal.StepOK, 3*time.Second),
		notSent,
		{Op: "op_1", Kind: journal.KindOp, Type: "apply", Status: journal.OpCompensated, Time: t0.Add(4 * time.Second)},
	}
	code, body := serveOp(t, recs, "/api/stacks/s/operations/op_1")
	if code != http.StatusOK {
		t.Fatalf("%d %s", code, body)
	}
	var p webview.TimelinePage
	if err := json.Unmarshal([]byte(body), &p); err != nil {
		t.Fatal(err)
	}
	var b *webview.Row
	for i := range p.Steps {
		if p.Steps[i].Step == "b" {
			b = &p.Steps[i]
		}
	}
	if b == nil || len(b.Bars) != 1 {
		t.Fatalf("b's row: %+v", b)
	}
	if bar := b.Bars[0]; bar.Status != journal.StepNotSent || bar.Duration() != 0 || !bar.Start.Equal(t0.Add(3*time.Second)) {
		t.Errorf("b's bar %+v: want a not_sent mark at 3s, no span of work", bar)
	}
	if b.Failed || b.Critical || b.Bars[0].Critical {
		t.Errorf("b's row %+v: a step that sent nothing is neither failed nor on the critical path", b)
	}
	for _, s := range p.CriticalPath {
		if s.Step == "b" {
			t.Errorf("the critical path runs through b, which sent nothing: %+v", p.CriticalPath)
		}
	}
}
