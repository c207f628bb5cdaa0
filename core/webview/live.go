package webview

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bulwark-iac/bulwark/core/journal"
)

// DefaultPollInterval is how often the stream of a running operation reads
// the journal again (Options.PollInterval).
const DefaultPollInterval = 500 * time.Millisecond

// keepAlive is how long a stream stays silent at most: then it sends a
// comment line, so that a proxy in front does not close it as idle.
const keepAlive = 15 * time.Second

// LiveRecord is one journal record of an operation as its event stream
// sends it: what the timeline is drawn from, and nothing else a record may
// carry (a plan's data, a state change, sealed or not, stays out).
type LiveRecord struct {
	// Seq is the record's place among the operation's records (1 for its
	// first): the stream's event id, which a reconnecting client sends
	// back (Last-Event-ID) to go on after it.
	Seq      int       `json:"seq"`
	ID       string    `json:"id"`
	Time     time.Time `json:"ts"`
	Kind     string    `json:"kind"`
	Type     string    `json:"type,omitempty"`
	Status   string    `json:"status"`
	Step     string    `json:"step,omitempty"`
	Resource string    `json:"resource,omitempty"`
	Action   string    `json:"action,omitempty"`
	Phase    string    `json:"phase,omitempty"`
	Error    string    `json:"error,omitempty"`
}

// LiveEnd is the last event of a stream: the operation ended (or the
// journal now holds only its summary).
type LiveEnd struct {
	Status string `json:"status"`
	Exit   *int   `json:"exit"`
}

// events streams an operation's journal records as Server-Sent Events
// (text/event-stream), from the one after the last the client saw
// (Last-Event-ID, or ?after=SEQ) on: each record as an event "record",
// then the timeline as the page draws it (event "timeline", the HTML that
// replaces the page's own), and, once the operation has ended, an event
// "end" after which the stream closes. It reads the journal again every
// PollInterval, as the pages do: no lock, no write.
func (h *handler) events(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	name, op := r.PathValue("stack"), r.PathValue("op")
	sent, err := lastSeen(r)
	if err != nil {
		h.fail(w, err)
		return
	}
	// Each read of the timeline (the first, then each poll) is one
	// request's: its three reads of the stack check its name against one
	// listing of the stacks, made for it.
	p, recs, err := h.timeline(withStackList(ctx), name, op)
	if err != nil {
		h.fail(w, err) // an unknown stack or operation is a 404, not a stream
		return
	}
	flusher, _ := w.(http.Flusher)
	hd := w.Header()
	hd.Set("Content-Type", "text/event-stream; charset=utf-8")
	hd.Set("X-Accel-Buffering", "no") // a proxy in front must not hold the events back
	w.WriteHeader(http.StatusOK)
	v := view{Location: h.opts.Location, Q: h.query(r)}
	tick := time.NewTicker(h.opts.PollInterval)
	defer tick.Stop()
	lastWrite := time.Now()
	for first := true; ; first = false {
		var b bytes.Buffer
		if sent > len(recs) {
			sent = 0 // the journal was compacted under us: its summary is all there is
		}
		for i, rec := range recs[sent:] {
			writeEvent(&b, "record", strconv.Itoa(sent+i+1), liveRecord(sent+i+1, rec))
		}
		changed := len(recs) > sent
		sent = len(recs)
		if changed || first {
			v.Page = p
			var frag bytes.Buffer
			if err := h.pages["operation"].ExecuteTemplate(&frag, "tl", v); err != nil {
				return
			}
			writeEvent(&b, "timeline", "", frag.String())
		}
		ended := !p.Running
		if ended {
			writeEvent(&b, "end", "", LiveEnd{Status: p.Status, Exit: p.Exit})
		}
		if b.Len() == 0 && time.Since(lastWrite) >= keepAlive {
			b.WriteString(": still running\n\n")
		}
		if b.Len() > 0 {
			lastWrite = time.Now()
			if _, err := w.Write([]byte(h.opts.Redactor.Redact(b.String()))); err != nil {
				return
			}
			if flusher != nil {
				flusher.Flush()
			}
		}
		if ended {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		np, nrecs, err := h.timeline(withStackList(ctx), name, op)
		if err != nil {
			var e bytes.Buffer
			writeEvent(&e, "problem", "", map[string]string{"error": err.Error()})
			if _, err := w.Write([]byte(h.opts.Redactor.Redact(e.String()))); err != nil {
				return
			}
			if flusher != nil {
				flusher.Flush()
			}
			continue // a read that failed once (a backend's hiccup) is tried again
		}
		p, recs = np, nrecs
	}
}

// lastSeen is the sequence number of the last record the client has:
// Last-Event-ID (an EventSource reconnecting) or ?after=SEQ, else 0.
func lastSeen(r *http.Request) (int, error) {
	s := r.Header.Get("Last-Event-ID")
	if s == "" {
		s = r.URL.Query().Get("after")
	}
	if s == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%w: the last event id %q is not a record's sequence number", errBadQuery, s)
	}
	return n, nil
}

func liveRecord(seq int, r journal.Record) LiveRecord {
	return LiveRecord{Seq: seq, ID: r.ID, Time: r.Time, Kind: r.Kind, Type: r.Type, Status: r.Status, Step: r.Step,
		Resource: r.Resource, Action: r.Action, Phase: r.Phase, Error: r.Error}
}

// writeEvent appends one Server-Sent Event to b: data is a string as it
// is, anything else as JSON; each of its lines is a "data:" line.
func writeEvent(b *bytes.Buffer, event, id string, data any) {
	text, ok := data.(string)
	if !ok {
		j, err := json.Marshal(data)
		if err != nil {
			j = []byte(`{}`)
		}
		text = string(j)
	}
	b.WriteString("event: " + event + "\n")
	if id != "" {
		b.WriteString("id: " + id + "\n")
	}
	for _, line := range strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n") {
		b.WriteString("data: " + strings.TrimSuffix(line, "\r") + "\n")
	}
	b.WriteString("\n")
}

// timeline reads op's records and lays them out, with the dependencies the
// stack's state records (for the critical path).
func (h *handler) timeline(ctx context.Context, name, op string) (*TimelinePage, []journal.Record, error) {
	recs, problems, err := h.src.Operation(ctx, name, op)
	if err != nil {
		return nil, nil, err
	}
	if len(recs) == 0 {
		return nil, nil, fmt.Errorf("%s: %w %s", op, errNoOperation, name)
	}
	deps := map[string][]string{}
	if rs, err := h.src.Resources(ctx, name); err == nil {
		for _, r := range rs {
			deps[r.Name] = r.DependsOn
		}
	}
	p := newTimeline(name, op, recs, deps)
	p.JournalProblems = nonNil(problems)
	if p.Running {
		// No end record: running, unless its process is gone (the lock's
		// holder is not live), which only a resume finishes.
		if st, err := h.src.Status(ctx, name); err == nil && st != nil && slices.Contains(st.Unfinished, op) {
			p.Running, p.Unfinished = false, true
		}
	}
	return p, recs, nil
}
