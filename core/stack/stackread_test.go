package stack_test

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/bulwark-iac/bulwark/core/journal"
	"github.com/bulwark-iac/bulwark/core/secrets"
	"github.com/bulwark-iac/bulwark/core/stack"
	"github.com/bulwark-iac/bulwark/core/storage"
)

// networkSpec makes the stack app reads: an output, and a sensitive one.
const networkSpec = `version: 1
stack: network
variables:
  pw: {type: string, sensitive: true}
providers: {fake: {}}
resources:
  - name: net
    type: network
    config: {size: SIZE, zone: eu}
outputs:
  size: {value: "${net.size}"}
  pw: {value: "${var.pw}", sensitive: true}
`

const appSpec = `version: 1
stack: app
providers: {fake: {}}
resources:
  - name: app
    type: compute
    config: {size: "${stack.network.outputs.size}", zone: "z-${stack.network.outputs.pw}"}
`

const stackSecret = "pw-hidden-51f0"

func withTestKey(t *testing.T) opt {
	key, err := secrets.NewKey("test")
	if err != nil {
		t.Fatal(err)
	}
	return func(o *stack.Options) { o.Secrets = &secrets.Source{Env: key.Encode()} }
}

func applyNetwork(t *testing.T, e *env, size string, key opt) {
	t.Helper()
	sp := expanded(t, strings.Replace(networkSpec, "SIZE", size, 1), map[string]any{"pw": stackSecret})
	e.mustApply(t, sp, key)
}

func TestStackOutputsReadAtPlanTime(t *testing.T) {
	e := newEnv(t)
	key := withTestKey(t)
	applyNetwork(t, e, "3", key)
	pv, err := stack.Plan(e.ctx, parseSpec(t, appSpec), e.opts(key))
	if err != nil {
		t.Fatal(err)
	}
	if len(pv.StackReads) != 1 {
		t.Fatalf("stack reads = %+v", pv.StackReads)
	}
	r := pv.StackReads[0]
	if r.Stack != "network" || r.Revision != 1 || r.Outputs["size"] != 3.0 || r.Outputs["pw"] != stackSecret || len(r.Sensitive) != 1 || r.Sensitive[0] != "pw" {
		t.Fatalf("stack read = %+v", r)
	}
	if len(pv.Changes) != 1 || pv.Changes[0].After["size"] != 3.0 || pv.Changes[0].After["zone"] != "z-"+stackSecret {
		t.Fatalf("changes = %+v", pv.Changes)
	}
	b, err := json.Marshal(pv)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), stackSecret) || !strings.Contains(string(b), `"stack_reads"`) {
		t.Errorf("the preview's JSON shows the sensitive output, or no stack_reads: %s", b)
	}
	e.mustApply(t, parseSpec(t, appSpec), key)
	if app := e.w.ByName("app"); app == nil || app.Attrs["zone"] != "z-"+stackSecret {
		t.Fatalf("app = %+v", app)
	}
	// The read took no lock of network's and wrote nothing there.
	if st := e.state(t, "network"); st.Serial != 1 && st.Current != 1 {
		t.Errorf("network's state changed: serial %d", st.Serial)
	}
	if strings.Contains(e.out.String(), stackSecret) {
		t.Errorf("the output shows the sensitive output")
	}
}

func TestStackOutputReadErrors(t *testing.T) {
	e := newEnv(t)
	key := withTestKey(t)
	applyNetwork(t, e, "3", key)
	otherKey := withTestKey(t)
	for _, tt := range []struct {
		name, ref     string
		key           opt
		stack, output string
		is            error
		msg           string
	}{
		{"missing stack", "${stack.ghost.outputs.size}", key, "ghost", "", stack.ErrNoStackState, `stack "ghost"`},
		{"missing output", "${stack.network.outputs.nope}", key, "network", "nope", stack.ErrNoStackOutput, `output "nope" of stack "network"`},
		{"own stack", "${stack.app.outputs.size}", key, "app", "", stack.ErrOwnStack, `stack "app"`},
		{"sealed with another key", "${stack.network.outputs.pw}", otherKey, "network", "pw", nil, `output "pw" of stack "network": it is sensitive and cannot be opened with this key`},
		{"no key", "${stack.network.outputs.pw}", func(*stack.Options) {}, "network", "pw", secrets.ErrNoKey, `output "pw" of stack "network"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			text := strings.Replace(appSpec, `"${stack.network.outputs.size}"`, `"`+tt.ref+`"`, 1)
			text = strings.Replace(text, `"z-${stack.network.outputs.pw}"`, "eu", 1)
			_, err := e.apply(parseSpec(t, text), tt.key)
			var se *stack.StackReadError
			if !errors.As(err, &se) || se.Stack != tt.stack || se.Output != tt.output || (tt.is != nil && !errors.Is(err, tt.is)) {
				t.Fatalf("err = %#v (%v), want a StackReadError of %s/%s", err, err, tt.stack, tt.output)
			}
			if !strings.Contains(err.Error(), tt.msg) || !strings.Contains(err.Error(), "stack.yaml:7:") || !strings.Contains(err.Error(), "nothing was changed") {
				t.Errorf("message %q: want %q at stack.yaml:7", err, tt.msg)
			}
			if strings.Contains(err.Error(), stackSecret) {
				t.Errorf("the message shows the sensitive output")
			}
			if e.w.ByName("app") != nil {
				t.Errorf("app was created")
			}
		})
	}
}

// A saved plan records the outputs it read (the sensitive one sealed), and
// applying it uses them though the other stack moved on.
func TestSavedPlanUsesTheStackOutputsItRead(t *testing.T) {
	e := newEnv(t)
	key := withTestKey(t)
	applyNetwork(t, e, "3", key)
	path := t.TempDir() + "/app.plan"
	if _, err := stack.SavePlan(e.ctx, parseSpec(t, appSpec), e.opts(key), path, "test"); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(path); err != nil || strings.Contains(string(b), stackSecret) {
		t.Fatal("the plan file holds the sensitive output in clear")
	}
	applyNetwork(t, e, "7", key)
	saved, err := stack.OpenPlan(path, e.opts(key))
	if err != nil {
		t.Fatal(err)
	}
	if res, err := stack.ApplyPlan(e.ctx, saved, e.opts(key)); stack.ExitCode(res, err) != stack.ExitOK {
		t.Fatalf("apply the saved plan: %v %v", err, resErr(res))
	}
	if app := e.w.ByName("app"); app == nil || app.Attrs["size"] != 3.0 {
		t.Fatalf("app = %+v; want size 3, what the plan read", app)
	}
}

// An interrupted apply is resumed with the outputs its plan read,
// journaled (the sensitive one sealed) on its start record.
func TestResumeUsesTheStackOutputsTheOperationRead(t *testing.T) {
	e := newEnv(t)
	key := withTestKey(t)
	applyNetwork(t, e, "3", key)
	text := appSpec + `  - name: later
    type: generic
    depends_on: [app]
    config: {size: "${stack.network.outputs.size}"}
`
	sp := parseSpec(t, text)
	b := &losingBackend{lost: make(chan struct{})}
	e.w.OnCreate(func(name string) {
		if name == "later" {
			b.lose()
		}
	})
	if res, err := stack.Apply(e.ctx, sp, e.opts(key, parallelism(1), e.losing(b))); !errors.Is(err, storage.ErrLost) {
		t.Fatalf("the interrupted apply: %v %v", err, resErr(res))
	}
	e.w.OnCreate(nil)
	var data []byte
	for _, r := range journalIn(t, stack.StackDir(e.stateDir, "app")) {
		if r.Kind == journal.KindOp && r.Status == journal.OpRunning {
			data = r.Data
		}
	}
	if !strings.Contains(string(data), `"stack":"network"`) || !strings.Contains(string(data), `"size":3`) {
		t.Fatalf("the start record's data: %s", data)
	}
	if j := journalBytes(t, stack.StackDir(e.stateDir, "app")); strings.Contains(string(j), stackSecret) {
		t.Fatal("the journal holds the sensitive output in clear")
	}
	applyNetwork(t, e, "9", key)
	res, err := e.resume(parseSpec(t, text), key)
	if code := stack.ExitCode(res, err); err != nil || code != stack.ExitOK {
		t.Fatalf("resume: exit %d, %v %v", code, err, resErr(res))
	}
	for _, n := range []string{"app", "later"} {
		if r := e.w.ByName(n); r == nil || r.Attrs["size"] != 3.0 {
			t.Errorf("%s after the resume: %+v; want size 3, what the operation read", n, r)
		}
	}
	if got := e.w.ByName("app").Attrs["zone"]; got != "z-"+stackSecret {
		t.Errorf("app's zone %v: the sealed output must reach the provider opened", got)
	}
}

// A stack moved to another backend (state migrate) is not read here: the
// error names it and where it went.
func TestStackOutputOfAMovedStack(t *testing.T) {
	e := newEnv(t)
	key := withTestKey(t)
	applyNetwork(t, e, "3", key)
	marker := storage.MovedMarker{To: "s3://elsewhere/states"}.String()
	if err := os.WriteFile(stack.StackDir(e.stateDir, "network")+"/moved", []byte(marker+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := e.apply(parseSpec(t, appSpec), key)
	var se *stack.StackReadError
	if !errors.As(err, &se) || se.Stack != "network" || !errors.Is(err, storage.ErrMoved) || !strings.Contains(err.Error(), "s3://elsewhere/states") {
		t.Fatalf("err = %v, want a StackReadError wrapping storage.ErrMoved naming the new place", err)
	}
	if e.w.ByName("app") != nil {
		t.Error("app was created")
	}
}
