package webview_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bulwark-iac/bulwark/core/journal"
	"github.com/bulwark-iac/bulwark/core/pluginhost"
	"github.com/bulwark-iac/bulwark/core/providers"
	"github.com/bulwark-iac/bulwark/core/spec"
	"github.com/bulwark-iac/bulwark/core/stack"
	"github.com/bulwark-iac/bulwark/core/webview"
)

// gated is the real mock plugin (a process, over gRPC) whose Create of
// one resource waits, once it is asked, until the test opens the gate.
type gated struct {
	stack.Provider
	name    string
	reached chan struct{}
	open    chan struct{}
}

func (g *gated) Create(ctx context.Context, req *providers.CreateRequest) (*providers.CreateResponse, error) {
	if req.Name == g.name {
		close(g.reached)
		select {
		case <-g.open:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return g.Provider.Create(ctx, req)
}

type gatedStarter struct {
	host *pluginhost.Host
	g    *gated
}

func (s gatedStarter) Start(ctx context.Context, cfg pluginhost.Config) (stack.Provider, error) {
	p, err := s.host.Start(ctx, cfg)
	if err != nil {
		return nil, err
	}
	s.g.Provider = p
	return s.g, nil
}

func (s gatedStarter) Close() { s.host.Close() }

// sse is one event of a stream.
type sse struct{ event, id, data string }

// readEvents sends the stream's events on a channel until it ends.
func readEvents(t *testing.T, resp *http.Response) <-chan sse {
	t.Helper()
	out := make(chan sse, 64)
	go func() {
		defer close(out)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		var e sse
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				out <- e
				e = sse{}
			case strings.HasPrefix(line, "event: "):
				e.event = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "id: "):
				e.id = strings.TrimPrefix(line, "id: ")
			case strings.HasPrefix(line, "data: "):
				if e.data != "" {
					e.data += "\n"
				}
				e.data += strings.TrimPrefix(line, "data: ")
			}
		}
	}()
	return out
}

// next waits (up to a deadline) for the stream's next event "record"
// matching want, or its end; it fails on an end first.
func nextRecord(t *testing.T, events <-chan sse, what string, want func(webview.LiveRecord) bool) webview.LiveRecord {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case e, ok := <-events:
			if !ok || e.event == "end" {
				t.Fatalf("the stream ended (%q) before %s", e.data, what)
			}
			if e.event != "record" {
				continue
			}
			var r webview.LiveRecord
			if err := json.Unmarshal([]byte(e.data), &r); err != nil {
				t.Fatalf("record event %q: %v", e.data, err)
			}
			if want(r) {
				return r
			}
		case <-deadline:
			t.Fatalf("no %s in 30s", what)
		}
	}
}

// A running operation's page follows it: the stream sends the records
// up to the step that is running, then, once that step goes on, its next
// record before the operation's end, then the end. The stream reads the
// journal while the apply holds the lock, without taking it.
func TestRunningOperationStreamsItsRecords(t *testing.T) {
	f := newFixture(t)
	g := &gated{name: "late", reached: make(chan struct{}), open: make(chan struct{})}
	text := strings.ReplaceAll(shopV1, "%WORLD%", filepath.Join(t.TempDir(), "world")) + `  - name: late
    type: generic
    depends_on: [web]
  - name: last
    type: generic
    depends_on: [late]
`
	sp, err := spec.Parse(filepath.Join(t.TempDir(), "stack.yaml"), []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	o := f.opts
	o.Starter = func() stack.Starter { return gatedStarter{host: pluginhost.New(o.HostOptions()), g: g} }
	type result struct {
		res *stack.Result
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := stack.Apply(context.WithoutCancel(t.Context()), sp, o)
		done <- result{res, err}
	}()
	var finished bool
	defer func() {
		select {
		case <-g.open:
		default:
			close(g.open)
		}
		if !finished {
			<-done // a failed test still lets the apply end before its folders go
		}
	}()
	select {
	case <-g.reached:
	case r := <-done:
		t.Fatalf("the apply ended before late's create: %v", r.err)
	case <-time.After(60 * time.Second):
		t.Fatal("late's create was not asked for in 60s")
	}

	srv := f.server(t, webview.Options{Graphviz: testGraphviz, PollInterval: 20 * time.Millisecond})
	var hp webview.HistoryPage
	decode(t, mustGet(t, srv.URL+"/api/stacks/shop/history"), &hp)
	op := hp.Operations[0]
	if op.Status != journal.OpRunning {
		t.Fatalf("the newest operation is %s %s, want the running apply", op.ID, op.Status)
	}
	page := mustGet(t, srv.URL+"/stacks/shop/operations/"+op.ID)
	contains(t, "the running operation's page", page, `s-running">running`, "reload to update",
		`<noscript><meta http-equiv="refresh" content="5"></noscript>`,
		`data-live="/stacks/shop/operations/`+op.ID+`/events"`, `<script src="/static/live.js"></script>`)
	contains(t, "the stack page", mustGet(t, srv.URL+"/stacks/shop"), `Running now: <a href="/stacks/shop/operations/`+op.ID)

	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+"/stacks/shop/operations/"+op.ID+"/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("events: %d %s", resp.StatusCode, ct)
	}
	events := readEvents(t, resp)
	started := nextRecord(t, events, "late's execute started", func(r webview.LiveRecord) bool {
		return r.Resource == "late" && r.Phase == "execute" && r.Status == journal.StepStarted
	})
	if started.Seq < 2 {
		t.Errorf("late's start is record %d of the operation, want after the operation's own", started.Seq)
	}
	close(g.open)
	ok := nextRecord(t, events, "late's execute ok", func(r webview.LiveRecord) bool {
		return r.Resource == "late" && r.Phase == "execute" && r.Status == journal.StepOK
	})
	if ok.Seq <= started.Seq {
		t.Errorf("late's ok is record %d, after its start %d?", ok.Seq, started.Seq)
	}
	nextRecord(t, events, "last's execute", func(r webview.LiveRecord) bool { return r.Resource == "last" && r.Phase == "execute" })
	var sawTimeline bool
	deadline := time.After(60 * time.Second)
	for end := false; !end; {
		select {
		case e, open := <-events:
			if !open {
				t.Fatal("the stream closed without an end event")
			}
			switch e.event {
			case "timeline":
				sawTimeline = true
				if !strings.Contains(e.data, "s-running") && !strings.Contains(e.data, "succeeded") {
					t.Errorf("a timeline event that is neither running nor succeeded:\n%s", e.data)
				}
			case "end":
				var le webview.LiveEnd
				if err := json.Unmarshal([]byte(e.data), &le); err != nil {
					t.Fatal(err)
				}
				if le.Status != journal.OpSucceeded || le.Exit == nil || *le.Exit != 0 {
					t.Errorf("end = %+v, want succeeded, exit 0", le)
				}
				end = true
			}
		case <-deadline:
			t.Fatal("no end event in 60s")
		}
	}
	if !sawTimeline {
		t.Error("the stream sent no timeline after the operation went on")
	}
	r := <-done
	finished = true
	if r.err != nil {
		t.Fatalf("apply: %v", r.err)
	}
	// Once ended, the page no longer follows it.
	if page := mustGet(t, srv.URL+"/stacks/shop/operations/"+op.ID); strings.Contains(page, "data-live") || strings.Contains(page, "refresh") {
		t.Errorf("the ended operation's page still follows it:\n%s", page)
	}
	// Resumed from the last record seen: only the ones after it, then the end.
	code, body := get(t, srv.URL+"/stacks/shop/operations/"+op.ID+"/events", "Last-Event-ID", "2")
	if code != http.StatusOK || strings.Contains(body, "id: 2\n") || !strings.Contains(body, "id: 3\n") || !strings.HasSuffix(body, "\n\n") || !strings.Contains(body, "event: end\n") {
		t.Errorf("events after 2: %d\n%s", code, body)
	}
	if code, _ := get(t, srv.URL+"/stacks/shop/operations/op_nope/events"); code != http.StatusNotFound {
		t.Errorf("events of an unknown operation: %d, want 404", code)
	}
	if code, _ := get(t, srv.URL+"/stacks/shop/operations/"+op.ID+"/events?after=x"); code != http.StatusBadRequest {
		t.Errorf("events after x: %d, want 400", code)
	}
}
