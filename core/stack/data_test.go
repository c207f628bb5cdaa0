package stack_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bulwark-iac/bulwark/core/engine"
	"github.com/bulwark-iac/bulwark/core/events"
	"github.com/bulwark-iac/bulwark/core/journal"
	"github.com/bulwark-iac/bulwark/core/secrets"
	"github.com/bulwark-iac/bulwark/core/spec"
	"github.com/bulwark-iac/bulwark/core/stack"
	"github.com/bulwark-iac/bulwark/core/storage"
)

// dataSpec reads the network "shared" the world already holds, and uses
// what it read in app's config and an output.
const dataSpec = `version: 1
stack: s
providers: {fake: {}}
data:
  - name: found
    type: lookup
    config: {type: network, name: shared}
resources:
  - name: app
    type: compute
    config: {size: "${data.found.size}", zone: "z-${data.found.zone}"}
outputs:
  arn: {value: "${data.found.arn}"}
`

func dataWorld(t *testing.T) *env {
	t.Helper()
	e := newEnv(t)
	e.w.DataSources()
	e.w.Put("network", "shared", "")
	e.w.SetAttr("shared", "size", 3.0)
	e.w.SetAttr("shared", "zone", "eu")
	return e
}

func TestDataReadAtPlanTime(t *testing.T) {
	e := dataWorld(t)
	pv, err := stack.Plan(e.ctx, parseSpec(t, dataSpec), e.opts())
	if err != nil {
		t.Fatal(err)
	}
	if len(pv.DataReads) != 1 || pv.DataReads[0].Name != "found" || pv.DataReads[0].Type != "lookup" || pv.DataReads[0].Provider != "fake" || pv.DataReads[0].Attributes["size"] != 3.0 {
		t.Fatalf("data reads = %+v", pv.DataReads)
	}
	if len(pv.Changes) != 1 || pv.Changes[0].After["size"] != 3.0 || pv.Changes[0].After["zone"] != "z-eu" {
		t.Fatalf("changes = %+v", pv.Changes)
	}
	if got := e.w.DataReads(); !slices.Equal(got, []string{"found"}) {
		t.Errorf("reads %v", got)
	}

	res := e.mustApply(t, parseSpec(t, dataSpec))
	if res.Outcome != engine.Succeeded {
		t.Fatal(resErr(res))
	}
	app := e.w.ByName("app")
	if app == nil || app.Attrs["size"] != 3.0 || app.Attrs["zone"] != "z-eu" {
		t.Fatalf("app = %+v", app)
	}
	// Never journaled as a mutation: no step record names the data entry
	// (the operation's start record holds what it read, for a resume).
	for _, r := range journalIn(t, stack.StackDir(e.stateDir, "s")) {
		if r.Kind == journal.KindStep && (strings.Contains(r.Step, "found") || strings.Contains(string(r.Change), "lookup")) {
			t.Errorf("a step record names the data read: %+v", r)
		}
	}
	// The data entry is no resource of the state.
	if st := e.state(t, "s"); len(st.Resources) != 1 || st.Resources["app"] == nil {
		t.Errorf("state records %v", st.Names())
	}
	// Once applied, the same read gives the same config: nothing to do.
	pv, err = stack.Plan(e.ctx, parseSpec(t, dataSpec), e.opts())
	if err != nil || pv.HasChanges() {
		t.Fatalf("plan after apply: %v, changes %v", err, pv != nil && pv.HasChanges())
	}
	// What the data reads moved: the resource follows.
	e.w.SetAttr("shared", "size", 5.0)
	e.mustApply(t, parseSpec(t, dataSpec))
	if got := e.w.ByName("app").Attrs["size"]; got != 5.0 {
		t.Errorf("app's size %v, want 5", got)
	}
}

func TestDataReadFailure(t *testing.T) {
	e := newEnv(t)
	e.w.DataSources()
	sp := parseSpec(t, dataSpec) // no "shared" in the world
	for _, run := range []struct {
		name string
		do   func() error
	}{
		{"plan", func() error { _, err := stack.Plan(e.ctx, sp, e.opts()); return err }},
		{"apply", func() error { _, err := stack.Apply(e.ctx, sp, e.opts()); return err }},
	} {
		err := run.do()
		var de *stack.DataReadError
		if !errors.As(err, &de) || de.Name != "found" || de.Provider != "fake" || de.Type != "lookup" {
			t.Fatalf("%s: err %v, want a *DataReadError for found", run.name, err)
		}
		if msg := err.Error(); !strings.Contains(msg, `data "found" (lookup, provider fake)`) || !strings.Contains(msg, `no network named "shared"`) {
			t.Errorf("%s: message %q", run.name, msg)
		}
		if code := stack.ExitCode(nil, err); code != stack.ExitError {
			t.Errorf("%s: exit %d, want %d", run.name, code, stack.ExitError)
		}
	}
	if c, u, d := e.w.Calls(); c+u+d != 0 {
		t.Errorf("a failed read went on to change things: %d creates, %d updates, %d deletes", c, u, d)
	}
}

func TestDataSchemaChecked(t *testing.T) {
	for _, tt := range []struct {
		name, spec string
		offer      bool
		want       string
	}{
		{"no ReadData", dataSpec, false, `stack.yaml:6:11: data "found": provider fake reads no data sources (its plugin does not offer ReadData)`},
		{"unknown type", strings.Replace(dataSpec, "type: lookup", "type: lookupp", 1), true, `stack.yaml:6:11: data "found": unknown data source type "lookupp" for provider fake (has: lookup)`},
		{"unknown attribute", strings.Replace(dataSpec, "data.found.arn", "data.found.nope", 1), true, `stack.yaml:13:17: unknown attribute "nope" in ${data.found.nope}: data source lookup of provider fake has type, name, id, arn, size, zone, tags, secret`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			if tt.offer {
				e.w.DataSources()
			}
			e.w.Put("network", "shared", "")
			_, err := stack.Apply(e.ctx, parseSpec(t, tt.spec), e.opts())
			var ps spec.Problems
			if !errors.As(err, &ps) || err.Error() != tt.want {
				t.Fatalf("err = %v, want %s", err, tt.want)
			}
			if got := e.w.DataReads(); len(got) != 0 {
				t.Errorf("read %v before the schema check passed", got)
			}
		})
	}
}

// Independent entries are read side by side; one that uses another's
// attributes is read after it, with them.
func TestDataReadsInParallel(t *testing.T) {
	e := newEnv(t)
	e.w.DataSources()
	for _, n := range []string{"a", "b", "c"} {
		e.w.Put("network", n, "")
	}
	both := make(chan struct{})
	arrived := make(chan string, 3)
	e.w.OnReadData(func(name string) {
		arrived <- name
		if name == "a" || name == "b" {
			// Each of a and b waits for the other: a serial reader
			// would never get past the first.
			select {
			case <-both:
			case <-time.After(10 * time.Second):
			}
		}
	})
	go func() {
		seen := map[string]bool{}
		for len(seen) < 2 {
			seen[<-arrived] = true
		}
		close(both)
	}()
	sp := parseSpec(t, `version: 1
stack: s
providers: {fake: {}}
data:
  - {name: a, type: lookup, config: {type: network, name: a}}
  - {name: b, type: lookup, config: {type: network, name: b}}
  - {name: c, type: lookup, config: {type: network, name: "${data.a.name}"}}
resources:
  - {name: app, type: compute, config: {zone: "${data.c.id}"}}
`)
	start := time.Now()
	pv, err := stack.Plan(e.ctx, sp, e.opts())
	if err != nil {
		t.Fatal(err)
	}
	if time.Since(start) > 5*time.Second {
		t.Fatalf("the independent reads ran one after the other")
	}
	reads := e.w.DataReads()
	if len(reads) != 3 || slices.Index(reads, "c") < slices.Index(reads, "a") {
		t.Fatalf("reads %v: c must come after a, whose name it uses", reads)
	}
	if got := pv.Changes[0].After["zone"]; got != e.w.ByName("a").ID {
		t.Errorf("app's zone %v, want a's id", got)
	}
}

// A sensitive attribute read stays sealed and masked: in the plan, its
// --json, the state and a saved plan.
func TestDataSensitiveMasked(t *testing.T) {
	e := dataWorld(t)
	key, err := secrets.NewKey("test")
	if err != nil {
		t.Fatal(err)
	}
	withKey := func(o *stack.Options) { o.Secrets = &secrets.Source{Env: key.Encode()} }
	id := e.w.ByName("shared").ID
	secret := "s3cr3t-of-" + id
	text := strings.Replace(dataSpec, `zone: "z-${data.found.zone}"`, `zone: "${data.found.secret}"`, 1) + "  sec: {value: \"${data.found.secret}\"}\n"
	sp := parseSpec(t, text)
	pv, err := stack.Plan(e.ctx, sp, e.opts(withKey))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(pv.DataReads[0].Sensitive, "secret") || !slices.Contains(pv.Changes[0].Sensitive, "zone") {
		t.Fatalf("sensitive: data %v, app %v", pv.DataReads[0].Sensitive, pv.Changes[0].Sensitive)
	}
	js, err := json.Marshal(pv)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(js), secret) || !strings.Contains(string(js), `"data_reads"`) {
		t.Errorf("plan --json:\n%s", js)
	}
	dir := t.TempDir()
	specPath := filepath.Join(dir, "stack.yaml")
	if err := os.WriteFile(specPath, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	sp, err = spec.Parse(specPath, []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	planPath := filepath.Join(dir, "p.plan")
	if _, err := stack.SavePlan(e.ctx, sp, e.opts(withKey), planPath, "test"); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(planPath); strings.Contains(string(b), secret) {
		t.Errorf("the plan file holds the secret in clear")
	}
	e.mustApply(t, parseSpec(t, text), withKey)
	if got := e.w.ByName("app").Attrs["zone"]; got != secret {
		t.Errorf("app's zone %v: the provider must get the value", got)
	}
	if b, _ := os.ReadFile(filepath.Join(stack.StackDir(e.stateDir, "s"), "state.json")); strings.Contains(string(b), secret) {
		t.Errorf("state.json holds the secret in clear")
	}
	if o, ok := e.state(t, "s").Outputs["sec"]; !ok || !o.Sensitive {
		t.Errorf("output sec = %+v, %v: derived from a sensitive attribute read, it must be sensitive", o, ok)
	}
	if strings.Contains(e.out.String(), secret) {
		t.Errorf("the output holds the secret in clear:\n%s", e.out)
	}
}

// Applying a saved plan uses what the plan read, and reads nothing again.
func TestSavedPlanKeepsDataRead(t *testing.T) {
	e := dataWorld(t)
	key, err := secrets.NewKey("test")
	if err != nil {
		t.Fatal(err)
	}
	withKey := func(o *stack.Options) { o.Secrets = &secrets.Source{Env: key.Encode()} }
	dir := t.TempDir()
	specPath := filepath.Join(dir, "stack.yaml")
	if err := os.WriteFile(specPath, []byte(dataSpec), 0o600); err != nil {
		t.Fatal(err)
	}
	sp, err := spec.Parse(specPath, []byte(dataSpec))
	if err != nil {
		t.Fatal(err)
	}
	planPath := filepath.Join(dir, "p.plan")
	if _, err := stack.SavePlan(e.ctx, sp, e.opts(withKey), planPath, "test"); err != nil {
		t.Fatal(err)
	}
	f, err := stack.ReadPlan(planPath)
	if err != nil || len(f.Data) != 1 || f.Data[0].Attributes["size"] != 3.0 {
		t.Fatalf("plan file data: %v %+v", err, f)
	}
	if pv := stack.PreviewOf(f); len(pv.DataReads) != 1 || !pv.DataReads[0].Saved {
		t.Errorf("PreviewOf data reads %+v", pv.DataReads)
	}
	e.w.SetAttr("shared", "size", 9.0) // what a read would see now
	before := len(e.w.DataReads())
	p, err := stack.OpenPlan(planPath, e.opts(withKey))
	if err != nil {
		t.Fatal(err)
	}
	res, err := stack.ApplyPlan(e.ctx, p, e.opts(withKey))
	if err != nil || res.Outcome != engine.Succeeded {
		t.Fatalf("apply: %v %v", err, resErr(res))
	}
	if got := e.w.ByName("app").Attrs["size"]; got != 3.0 {
		t.Errorf("app's size %v, want 3, what the plan read", got)
	}
	if n := len(e.w.DataReads()); n != before {
		t.Errorf("applying the saved plan read data again (%d reads)", n-before)
	}
}

// A sensitive variable given to a data entry is masked in what the plan
// shows of the read.
func TestDataSensitiveVariableMasked(t *testing.T) {
	e := dataWorld(t)
	sp := expanded(t, `version: 1
stack: s
providers: {fake: {}}
variables: {which: {type: string, default: shared, sensitive: true}}
data:
  - {name: found, type: lookup, config: {type: network, name: "${var.which}"}}
resources:
  - {name: app, type: compute, config: {size: "${data.found.size}"}}
`, nil)
	pv, err := stack.Plan(e.ctx, sp, e.opts())
	if err != nil {
		t.Fatal(err)
	}
	if got := pv.DataReads[0].Sensitive; !slices.Contains(got, "name") || !slices.Contains(got, "secret") {
		t.Errorf("sensitive %v, want name and secret among them", got)
	}
	js, err := json.Marshal(pv.DataReads[0])
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(js), `"shared"`) {
		t.Errorf("data read shows the sensitive variable's value: %s", js)
	}
}

// --read-parallelism bounds the reads in flight.
func TestDataReadsHonourReadParallelism(t *testing.T) {
	e := newEnv(t)
	e.w.DataSources()
	var b strings.Builder
	b.WriteString("version: 1\nstack: s\nproviders: {fake: {}}\ndata:\n")
	for i := range 6 {
		n := string(rune('a' + i))
		e.w.Put("network", n, "")
		b.WriteString("  - {name: " + n + ", type: lookup, config: {type: network, name: " + n + "}}\n")
	}
	b.WriteString("resources: []\n")
	var (
		mu           sync.Mutex
		now, highest int
	)
	e.w.OnReadData(func(string) {
		mu.Lock()
		now++
		highest = max(highest, now)
		mu.Unlock()
		for range 1000 { // hold the slot a while, so overlapping reads would show
			runtime.Gosched()
		}
		mu.Lock()
		now--
		mu.Unlock()
	})
	for _, n := range []int{1, 2} {
		highest = 0
		if _, err := stack.Plan(e.ctx, parseSpec(t, b.String()), e.opts(func(o *stack.Options) { o.ReadParallelism = n })); err != nil {
			t.Fatal(err)
		}
		if highest > n {
			t.Errorf("--read-parallelism %d: %d reads in flight at once", n, highest)
		}
	}
}

// An apply writes a lifecycle line per data read (kind data), before its
// operation's start line, with no value read on it; a failed read writes a
// failed line, masked, and no operation line.
func TestDataReadEvents(t *testing.T) {
	e := dataWorld(t)
	key, err := secrets.NewKey("test")
	if err != nil {
		t.Fatal(err)
	}
	var evs, failed syncBuffer
	withEvents := func(o *stack.Options) {
		o.Secrets = &secrets.Source{Env: key.Encode()}
		o.Events = events.NewWriter(&evs, nil)
	}
	secret := "s3cr3t-of-" + e.w.ByName("shared").ID
	text := strings.Replace(dataSpec, `zone: "z-${data.found.zone}"`, `zone: "${data.found.secret}"`, 1)
	e.mustApply(t, parseSpec(t, text), withEvents)
	lines := strings.Split(strings.TrimSpace(evs.String()), "\n")
	var first map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &first); err != nil {
		t.Fatalf("%v: %s", err, lines[0])
	}
	for k, want := range map[string]any{"kind": "data", "address": "data.found", "name": "found", "type": "lookup", "provider": "fake", "status": "ok"} {
		if first[k] != want {
			t.Errorf("first line's %s = %v, want %v: %s", k, first[k], want, lines[0])
		}
	}
	if _, ok := first["duration_ms"].(float64); !ok {
		t.Errorf("no duration_ms: %s", lines[0])
	}
	if _, ok := first["error"]; ok {
		t.Errorf("an error on a read that succeeded: %s", lines[0])
	}
	var second map[string]any
	if err := json.Unmarshal([]byte(lines[1]), &second); err != nil || second["kind"] != "operation" || second["status"] != "running" || second["op"] != first["op"] {
		t.Errorf("the operation's start line does not follow the read, under the same op: %v %s", err, lines[1])
	}
	n := 0
	for _, l := range lines {
		if strings.Contains(l, `"kind":"data"`) {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d data lines, want 1:\n%s", n, evs.String())
	}
	if strings.Contains(evs.String(), secret) || strings.Contains(evs.String(), `"eu"`) {
		t.Errorf("an event carries a value read:\n%s", evs.String())
	}

	// A read that fails: a failed line with its (masked) error, nothing else.
	// Its error quotes the name asked for, a sensitive variable's value.
	failing := strings.Replace(text, "name: shared", `name: "${var.tok}"`, 1)
	failing = strings.Replace(failing, "providers: {fake: {}}", "providers: {fake: {}}\nvariables: {tok: {type: string, sensitive: true, default: tok-hidden-1}}", 1)
	if _, err := stack.Apply(e.ctx, expanded(t, failing, nil), e.opts(func(o *stack.Options) {
		withEvents(o)
		o.Events = events.NewWriter(&failed, nil)
	})); err == nil {
		t.Fatal("apply of a failing read succeeded")
	}
	out := failed.String()
	secret = "tok-hidden-1"
	if !strings.Contains(out, `"kind":"data"`) || !strings.Contains(out, `"status":"failed"`) || !strings.Contains(out, `"error":"data \"found\"`) {
		t.Errorf("no failed data line:\n%s", out)
	}
	if strings.Contains(out, secret) || strings.Contains(out, `"kind":"operation"`) {
		t.Errorf("the failed read's lines show the secret or an operation line:\n%s", out)
	}
}

// An apply that used ${data...} and was interrupted is resumed with the
// values its plan read, journaled (sealed where sensitive) on its start
// record: what the data source answers meanwhile does not change what the
// resume applies, and the resume reads nothing.
func TestResumeUsesTheDataTheOperationRead(t *testing.T) {
	e := dataWorld(t)
	key, err := secrets.NewKey("test")
	if err != nil {
		t.Fatal(err)
	}
	withKey := func(o *stack.Options) { o.Secrets = &secrets.Source{Env: key.Encode()} }
	secret := "s3cr3t-of-" + e.w.ByName("shared").ID
	text := dataSpec + `  - name: later
    type: generic
    depends_on: [app]
    config: {size: "${data.found.size}", zone: "${data.found.secret}"}
`
	text = strings.Replace(text, "outputs:\n  arn: {value: \"${data.found.arn}\"}\n", "", 1)
	sp := parseSpec(t, text)
	// The run stops as a kill would leave it (its lock lost: no further
	// write, nothing compensated) once app exists and later's Create
	// begins.
	b := &losingBackend{lost: make(chan struct{})}
	e.w.OnCreate(func(name string) {
		if name == "later" {
			b.lose()
		}
	})
	if res, err := stack.Apply(e.ctx, sp, e.opts(withKey, parallelism(1), e.losing(b))); !errors.Is(err, storage.ErrLost) {
		t.Fatalf("the interrupted apply: %v %v", err, resErr(res))
	}
	e.w.OnCreate(nil)
	if app := e.w.ByName("app"); app == nil || app.Attrs["size"] != 3.0 {
		t.Fatalf("app after the interruption: %+v", app)
	}
	// The start record holds the read, its sensitive value sealed.
	var data []byte
	for _, r := range journalIn(t, stack.StackDir(e.stateDir, "s")) {
		if r.Kind == journal.KindOp && r.Status == journal.OpRunning {
			data = r.Data
		}
	}
	if !strings.Contains(string(data), `"found"`) || !strings.Contains(string(data), `"size":3`) {
		t.Fatalf("the start record's data: %s", data)
	}
	if j := journalBytes(t, stack.StackDir(e.stateDir, "s")); strings.Contains(string(j), secret) {
		t.Fatalf("the journal holds the sensitive value read in clear")
	}

	// The data source moves before the resume.
	e.w.SetAttr("shared", "size", 9.0)
	reads := len(e.w.DataReads())
	res, err := e.resume(sp, withKey)
	if code := stack.ExitCode(res, err); err != nil || code != stack.ExitOK {
		t.Fatalf("resume: exit %d, %v %v", code, err, resErr(res))
	}
	if n := len(e.w.DataReads()) - reads; n != 0 {
		t.Errorf("the resume read data again (%d reads)", n)
	}
	for _, n := range []string{"app", "later"} {
		if r := e.w.ByName(n); r == nil || r.Attrs["size"] != 3.0 {
			t.Errorf("%s after the resume: %+v; want size 3, what the operation read", n, r)
		}
	}
	if got := e.w.ByName("later").Attrs["zone"]; got != secret {
		t.Errorf("later's secret %v: the sealed value read must reach the provider opened", got)
	}
	if strings.Contains(e.out.String(), secret) {
		t.Errorf("the output shows the secret")
	}
	// The next apply reads afresh and follows.
	e.mustApply(t, parseSpec(t, text), withKey)
	if got := e.w.ByName("app").Attrs["size"]; got != 9.0 {
		t.Errorf("app's size %v after a fresh apply, want 9", got)
	}
}

// An apply that used ${data...} whose rollback was interrupted is finished
// by resume with the records alone: the rollback reads no data at all.
func TestResumedRollbackReadsNoData(t *testing.T) {
	e := dataWorld(t)
	text := strings.Replace(dataSpec, "outputs:", "  - {name: later, type: generic, depends_on: [app], config: {size: \"${data.found.size}\"}}\noutputs:", 1)
	sp := parseSpec(t, text)
	ctx, cancel := context.WithCancel(e.ctx)
	defer cancel()
	// later's Create fails and the run is abandoned as its rollback
	// begins (its context ends): the rollback is left incomplete.
	e.w.FailCreate("later")
	e.w.OnCreate(func(name string) {
		if name == "later" {
			cancel()
		}
	})
	res, err := stack.Apply(ctx, sp, e.opts())
	if code := stack.ExitCode(res, err); code != stack.ExitRollbackIncomplete {
		t.Fatalf("the interrupted apply: exit %d, %v %v", code, err, resErr(res))
	}
	e.w.OnCreate(nil)
	e.w.ClearFaults()
	e.w.SetAttr("shared", "size", 9.0)
	reads := len(e.w.DataReads())
	rr, err := e.resume(sp)
	if code := stack.ExitCode(rr, err); code != stack.ExitCompensated {
		t.Fatalf("resume: exit %d, %v %v", code, err, resErr(rr))
	}
	if n := len(e.w.DataReads()) - reads; n != 0 {
		t.Errorf("the resumed rollback read data (%d reads)", n)
	}
	if names := e.w.Names(); len(names) != 1 || names[0] != "shared" {
		t.Errorf("the world after the rollback: %v, want only shared", names)
	}
}
