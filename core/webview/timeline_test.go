package webview_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/bulwark-iac/bulwark/core/inspect"
	"github.com/bulwark-iac/bulwark/core/journal"
	"github.com/bulwark-iac/bulwark/core/state"
	"github.com/bulwark-iac/bulwark/core/webview"
)

func serveOp(t *testing.T, recs []journal.Record, path string) (int, string) {
	t.Helper()
	h := webview.New(&memSource{ops: recs}, webview.Options{Graphviz: testGraphviz})
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
	contains(t, "the running operation's page", html, "reload to update", `data-live="/stacks/s/operations/op_1/events"`)
	// Behind a token, the script and its stream carry it as the links do.
	h := webview.New(&memSource{ops: recs}, webview.Options{Graphviz: testGraphviz, Token: "tok-1"})
	req := httptest.NewRequest(http.MethodGet, "/stacks/s/operations/op_1?token=tok-1", nil)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	contains(t, "the running operation's page behind a token", w.Body.String(),
		`data-live="/stacks/s/operations/op_1/events?token=tok-1"`, `<script src="/static/live.js?token=tok-1"></script>`)
	// The stream of an operation that never ends: a client already gone
	// gets its first answer (no record after the 3rd, the timeline), and
	// the stream ends at once.
	gone, cancel := context.WithCancel(t.Context())
	cancel()
	req = httptest.NewRequestWithContext(gone, http.MethodGet, "/stacks/s/operations/op_1/events?token=tok-1&after=3", nil)
	w = httptest.NewRecorder()
	h.ServeHTTP(w, req)
	body = w.Body.String()
	if ct := w.Header().Get("Content-Type"); w.Code != http.StatusOK || ct != "text/event-stream; charset=utf-8" ||
		strings.Contains(body, "id: 3\n") || !strings.Contains(body, "id: 4\n") || !strings.Contains(body, "event: timeline\n") || strings.Contains(body, "event: end") {
		t.Errorf("the stream behind a token: %d %s\n%s", w.Code, ct, body)
	}
	// The same records of an operation whose process is gone (status: not
	// running, unfinished): the page says so and does not follow it.
	h = webview.New(&memSource{ops: recs, status: &inspect.StatusReport{Stack: "s", Unfinished: []string{"op_1"}}}, webview.Options{Graphviz: testGraphviz})
	req = httptest.NewRequest(http.MethodGet, "/stacks/s/operations/op_1", nil)
	req.Host = "localhost"
	w = httptest.NewRecorder()
	h.ServeHTTP(w, req)
	contains(t, "the unfinished operation's page", w.Body.String(), "Unfinished: it has no end record", "bulwark resume")
	if b := w.Body.String(); strings.Contains(b, "data-live") || strings.Contains(b, "refresh") || strings.Contains(b, "reload to update") {
		t.Errorf("the unfinished operation's page follows it as if it ran:\n%s", b)
	}
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

// A constructed journal with a known critical path: net → sub → app →
// worker, whose failure rolls back app, sub and net, in reverse order.
// db and cache ran beside them and decided nothing (cache ends with net,
// and sub waits for net, on which the state says it depends).
func TestCriticalPathAndRollbackOnTheTimeline(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	recs := []journal.Record{{Op: "op_1", Kind: journal.KindOp, Type: "apply", Status: journal.OpRunning, Time: at(0)}}
	phase := func(step, action, phase string, from, to int, status string) {
		recs = append(recs,
			journal.Record{Op: "op_1", Kind: journal.KindStep, Step: step, Resource: step, Action: action, Phase: phase, Status: journal.StepStarted, Time: at(from)},
			journal.Record{Op: "op_1", Kind: journal.KindStep, Step: step, Resource: step, Action: action, Phase: phase, Status: status, Time: at(to)})
	}
	phase("net", "create", "execute", 10, 2000, journal.StepOK)
	phase("db", "create", "execute", 10, 1000, journal.StepOK)
	phase("cache", "create", "execute", 500, 2000, journal.StepOK)
	phase("sub", "create", "execute", 2000, 5000, journal.StepOK)
	phase("app", "create", "execute", 5000, 6000, journal.StepOK)
	phase("app", "create", "verify", 6000, 6500, journal.StepOK)
	phase("worker", "create", "execute", 6500, 7000, journal.StepFailed)
	phase("app", "create", "compensate", 7100, 7500, journal.StepOK)
	phase("sub", "create", "compensate", 7500, 8000, journal.StepOK)
	phase("net", "create", "compensate", 8000, 8200, journal.StepOK)
	recs = append(recs, journal.Record{Op: "op_1", Kind: journal.KindOp, Type: "apply", Status: journal.OpCompensated, Time: at(8300), Error: "rolled back after: worker failed"})
	src := &memSource{ops: recs, res: []*state.Resource{
		{Name: "sub", DependsOn: []string{"net"}},
		{Name: "app", DependsOn: []string{"sub", "db"}},
		{Name: "worker", DependsOn: []string{"app"}},
		{Name: "cache"}, {Name: "db"}, {Name: "net"},
	}}
	h := webview.New(src, webview.Options{Graphviz: testGraphviz})
	serve := func(path string) string {
		req := httptest.NewRequest(http.MethodGet, path, nil)
		req.Host = "localhost"
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != http.StatusOK {
			t.Fatalf("GET %s: %d %s", path, w.Code, w.Body.String())
		}
		return w.Body.String()
	}
	var p webview.TimelinePage
	if err := json.Unmarshal([]byte(serve("/api/stacks/s/operations/op_1")), &p); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range p.CriticalPath {
		got = append(got, s.Part+" "+s.Step+" after "+s.After+" ("+s.Via+")")
	}
	want := []string{
		"run net after  ()",
		"run sub after net (depends on)",
		"run app after sub (depends on)",
		"run worker after app (depends on)",
		"undo app after worker (rollback)",
		"undo sub after app (dependent)",
		"undo net after sub (dependent)",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("critical path:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if p.CriticalPath[4].WaitMS != 100 || p.CriticalPath[1].DurationMS != 3000 || p.CriticalMS != 8090 {
		t.Errorf("undo app waited %dms (want 100), sub took %dms (want 3000), the path's steps %dms (want 8090)",
			p.CriticalPath[4].WaitMS, p.CriticalPath[1].DurationMS, p.CriticalMS)
	}
	rows := map[string]webview.Row{}
	for _, r := range p.Steps {
		rows[r.Step] = r
	}
	if rows["db"].Critical || rows["cache"].Critical || !rows["sub"].Critical {
		t.Errorf("critical rows: db %v cache %v sub %v, want only sub", rows["db"].Critical, rows["cache"].Critical, rows["sub"].Critical)
	}
	for _, name := range []string{"app", "sub", "net"} {
		r := rows[name]
		if r.UndoneFor != "worker" {
			t.Errorf("%s undone for %q, want worker", name, r.UndoneFor)
		}
		undo := r.Bars[len(r.Bars)-1]
		if undo.Phase != "compensate" || undo.CausedBy != "worker" || !undo.Critical {
			t.Errorf("%s's last bar = %+v, want its compensate, caused by worker, on the path", name, undo)
		}
	}
	if rows["worker"].UndoneFor != "" || rows["db"].UndoneFor != "" {
		t.Errorf("worker and db were not undone: %q %q", rows["worker"].UndoneFor, rows["db"].UndoneFor)
	}
	page := serve("/stacks/s/operations/op_1")
	contains(t, "the timeline", page, `id="step-sub"`, `undone ← <a href="#step-worker">worker</a>`,
		`class="p-compensate crit undo-bar"`, "<title>undo (compensate) after worker failed ok 500ms · critical path</title>",
		"<h2>Critical path</h2>", `<td><a href="#step-sub">sub</a></td><td>run</td>`)
	if strings.Contains(page, `row-critical" id="step-db"`) {
		t.Errorf("db is marked critical:\n%s", page)
	}
}

// An early start (the engine's EarlyStart): app, an ephemeral create,
// started once net's Execute returned, while net's Verify still read. The
// path goes back to net, counted from its Execute's return, not to db,
// which ended last before app started but released nothing.
func TestCriticalPathThroughAnEarlyStart(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	recs := []journal.Record{{Op: "op_1", Kind: journal.KindOp, Type: "apply", Status: journal.OpRunning, Time: at(0)}}
	phase := func(step, phase string, from, to int) {
		recs = append(recs,
			journal.Record{Op: "op_1", Kind: journal.KindStep, Step: step, Resource: step, Action: "create", Phase: phase, Status: journal.StepStarted, Time: at(from)},
			journal.Record{Op: "op_1", Kind: journal.KindStep, Step: step, Resource: step, Action: "create", Phase: phase, Status: journal.StepOK, Time: at(to)})
	}
	phase("net", "execute", 10, 1000)
	phase("net", "verify", 1000, 1500)
	phase("db", "execute", 10, 990)
	phase("db", "verify", 990, 995)
	phase("app", "check", 1000, 1010)
	phase("app", "execute", 1010, 2000)
	phase("app", "verify", 2000, 2500)
	recs = append(recs, journal.Record{Op: "op_1", Kind: journal.KindOp, Type: "apply", Status: journal.OpSucceeded, Time: at(2600)})
	src := &memSource{ops: recs, res: []*state.Resource{
		{Name: "app", DependsOn: []string{"net"}}, {Name: "net"}, {Name: "db"},
	}}
	p, got := criticalPathOf(t, src)
	want := "run net after  ()\nrun app after net (depends on)"
	if strings.Join(got, "\n") != want {
		t.Errorf("critical path:\n%s\nwant:\n%s", strings.Join(got, "\n"), want)
	}
	if len(p.CriticalPath) == 2 && p.CriticalPath[1].WaitMS != 0 {
		t.Errorf("app waited %dms after net's Execute returned, want 0", p.CriticalPath[1].WaitMS)
	}
}

// A teardown's early delete: net's Check reads while app's Delete is in
// flight, and net's Delete goes out once app's returned, while app's
// Verify still reads. The path goes from app's run to net's, released at
// app's Delete's return, not back past app to whatever ended before
// net's Check began (db).
func TestCriticalPathThroughAnEarlyDelete(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	recs := []journal.Record{{Op: "op_1", Kind: journal.KindOp, Type: "teardown", Status: journal.OpRunning, Time: at(0)}}
	phase := func(step, phase string, from, to int) {
		recs = append(recs,
			journal.Record{Op: "op_1", Kind: journal.KindStep, Step: step, Resource: step, Action: "delete", Phase: phase, Status: journal.StepStarted, Time: at(from)},
			journal.Record{Op: "op_1", Kind: journal.KindStep, Step: step, Resource: step, Action: "delete", Phase: phase, Status: journal.StepOK, Time: at(to)})
	}
	phase("db", "check", 0, 5)
	phase("db", "execute", 5, 200)
	phase("db", "verify", 200, 400)
	phase("app", "check", 0, 10)
	phase("app", "execute", 10, 1000)
	phase("app", "verify", 1000, 1500)
	phase("net", "check", 400, 420)
	phase("net", "execute", 420, 2000)
	phase("net", "verify", 2000, 2500)
	recs = append(recs, journal.Record{Op: "op_1", Kind: journal.KindOp, Type: "teardown", Status: journal.OpSucceeded, Time: at(2600)})
	src := &memSource{ops: recs, res: []*state.Resource{
		{Name: "app", DependsOn: []string{"net"}}, {Name: "net"}, {Name: "db"},
	}}
	_, got := criticalPathOf(t, src)
	want := "run app after  ()\nrun net after app (dependent)"
	if strings.Join(got, "\n") != want {
		t.Errorf("critical path:\n%s\nwant:\n%s", strings.Join(got, "\n"), want)
	}
}

// criticalPathOf is op_1's timeline page from src, and its critical path
// as lines "PART STEP after STEP (VIA)".
func criticalPathOf(t *testing.T, src *memSource) (webview.TimelinePage, []string) {
	t.Helper()
	h := webview.New(src, webview.Options{Graphviz: testGraphviz})
	req := httptest.NewRequest(http.MethodGet, "/api/stacks/s/operations/op_1", nil)
	req.Host = "localhost"
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	var p webview.TimelinePage
	if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil {
		t.Fatalf("%d %s: %v", w.Code, w.Body.String(), err)
	}
	var got []string
	for _, s := range p.CriticalPath {
		got = append(got, s.Part+" "+s.Step+" after "+s.After+" ("+s.Via+")")
	}
	return p, got
}
