package stack

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/bulwark-iac/bulwark/core/engine"
	"github.com/bulwark-iac/bulwark/core/journal"
	"github.com/bulwark-iac/bulwark/core/opstore"
	"github.com/bulwark-iac/bulwark/core/plan"
	"github.com/bulwark-iac/bulwark/core/providers"
	"github.com/bulwark-iac/bulwark/core/spec"
	"github.com/bulwark-iac/bulwark/core/state"
)

// A start the engine journaled while the step waited for its write slot,
// ended "not_sent" when the run stopped before the call went out, sent
// nothing: resume's readers take it as no Execute at all. It is not in the
// steps the operation executed (a rollback of a resumed run never undoes
// it), its key is not the step's (an earlier start that did go out keeps
// its own), it is not in flight (nothing is looked for by its key), and it
// is no create whose outcome is unknown.
func TestResumeReadersSkipAStartThatWasNotSent(t *testing.T) {
	step := func(id, name, action, status string) journal.Record {
		return journal.Record{ID: id, Op: "op_1", Kind: journal.KindStep, Step: name, Resource: name, Action: action, Phase: "execute", Status: status}
	}
	notSent := func(id, name, action, key string) journal.Record {
		r := step(id, name, action, journal.StepNotSent)
		r.Key = key
		return r
	}
	recs := []journal.Record{
		{ID: "r00", Op: "op_1", Kind: journal.KindOp, Type: "apply", Status: journal.OpRunning},
		// a: made by a first run (sent, ended ok), then in the resumed
		// run started again but not sent.
		step("r01", "a", "create", journal.StepStarted),
		step("r02", "a", "create", journal.StepOK),
		step("r03", "a", "update", journal.StepStarted),
		notSent("r04", "a", "update", "r03"),
		// b: started, not sent; nothing before.
		step("r05", "b", "create", journal.StepStarted),
		notSent("r06", "b", "create", "r05"),
		// c: started and cut by a crash (in flight).
		step("r07", "c", "create", journal.StepStarted),
	}
	if got := executedSteps(recs); !slices.Equal(got, []string{"a", "c"}) {
		t.Errorf("executed steps %q, want [a c]: a start that was not sent is no Execute", got)
	}
	ex := executions(recs)
	if _, ok := ex["b"]; ok {
		t.Errorf("b has an execution: %+v", ex["b"])
	}
	if ex["a"].ID != "r01" || ex["a"].Action != "create" {
		t.Errorf("a's execution %+v, want its sent create r01", ex["a"])
	}
	open := openCreates(recs, nil)
	if len(open) != 1 || open[0].Step != "c" {
		t.Errorf("open creates %+v, want c's alone", open)
	}
	// A person said a's create made nothing; a later start of a that was
	// not sent leaves that standing.
	said := append(slices.Clone(recs[:3]),
		journal.Record{ID: "r10", Op: "op_1", Kind: journal.KindStep, Step: "a", Resource: "a", Action: "create", Phase: "execute", Status: journal.StepSkipped, Error: notCreatedNote},
		step("r11", "a", "create", journal.StepStarted), notSent("r12", "a", "create", "r11"))
	if !notCreated(said)["a"] {
		t.Errorf("a person's word that a's create made nothing is lost behind a start that was not sent")
	}
	// A not_sent end names the start it ends by its key: a start it does
	// not name stays open (in flight), the end ending nothing.
	other := []journal.Record{step("r20", "d", "create", journal.StepStarted), notSent("r21", "d", "create", "r99")}
	if got := journal.Sent(other); len(got) != 1 || got[0].ID != "r20" {
		t.Errorf("journal.Sent of a start and a not_sent end naming another: %+v, want the start alone", got)
	}
	if open := openCreates(other, nil); len(open) != 1 || open[0].Step != "d" {
		t.Errorf("open creates %+v, want d's: a not_sent end that names another start ends nothing", open)
	}
}

// capsOnly is a provider of which only its schema's capabilities are asked.
type capsOnly struct {
	Provider
	caps providers.Capabilities
}

func (p capsOnly) Schema() *providers.GetSchemaResponse {
	return &providers.GetSchemaResponse{Capabilities: p.caps}
}

// A create (or a replace's) of a provider that takes no idempotency key
// journals its start only once it holds its write slot: an open start of
// one stops resume for a person, so that window is not widened to the
// wait for a slot. Every other step of it, and every step of a keyed
// provider, journals its start while it waits.
func TestApplyStepStartsWithTheSlotOnlyForAKeylessCreate(t *testing.T) {
	for _, tc := range []struct {
		keyless bool
		action  plan.Action
		want    bool
	}{
		{true, plan.Create, true},
		{true, plan.Replace, true},
		{true, plan.NoOp, true}, // checks only; were it missing, a create
		{true, plan.Update, false},
		{true, plan.Import, false},
		{false, plan.Create, false},
		{false, plan.Replace, false},
		{false, plan.Update, false},
	} {
		caps := providers.Capabilities{IdempotencyKeys: !tc.keyless, Keyless: tc.keyless}
		s := &session{plugins: map[string]Provider{"p": capsOnly{caps: caps}}}
		step := s.applyStep(plan.Change{Resource: "a", Action: tc.action}, &spec.Resource{Name: "a", Type: "t", Provider: "p"})
		if step.StartWithSlot != tc.want {
			t.Errorf("keyless %v, %s: StartWithSlot %v, want %v", tc.keyless, tc.action, step.StartWithSlot, tc.want)
		}
	}
}

// A step's Execute ends unsent (engine.ErrNotSent) only when the call that
// gave up was the first thing it did: nothing sent under its SendStop
// before, nothing parked on its stage (a change would ride on the
// "not_sent" record), and only while the operation stops. Every other
// case keeps the error the Execute returned.
func TestStopUnsentOnlyWhenNothingWasDone(t *testing.T) {
	unsent := fmt.Errorf("provider p: Create: waiting for the provider's rate limit: %w", providers.ErrNotSent)
	tests := []struct {
		name    string
		stopped bool
		exec    func(ctx context.Context, s *session) error
		want    bool // returned as engine.ErrNotSent
	}{
		{name: "held before anything", stopped: true, exec: func(context.Context, *session) error { return unsent }, want: true},
		{name: "after a call went out", stopped: true, exec: func(ctx context.Context, _ *session) error {
			providers.SendStopOf(ctx).Sending()
			return unsent
		}},
		{name: "after a change was staged", stopped: true, exec: func(_ context.Context, s *session) error {
			s.store.ForStep("a").Put(&state.Resource{Name: "a", Type: "network", ID: "n-1"})
			return unsent
		}},
		{name: "another failure", stopped: true, exec: func(context.Context, *session) error { return errors.New("injected") }},
		{name: "not stopping", exec: func(context.Context, *session) error { return unsent }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &session{store: opstore.New(nil, nil, &state.State{}, opstore.Config{})}
			op := &engine.Operation{}
			if tt.stopped {
				stop := make(chan struct{})
				close(stop)
				op.Stop = stop
			}
			op.Steps = []*engine.Step{{ID: "a", Execute: func(ctx context.Context, _ string) error { return tt.exec(ctx, s) }}}
			s.stopUnsent(op)
			err := op.Steps[0].Execute(context.Background(), "k")
			if got := errors.Is(err, engine.ErrNotSent); got != tt.want {
				t.Errorf("engine.ErrNotSent %v, want %v (%v)", got, tt.want, err)
			}
			if err == nil {
				t.Error("the Execute's error was lost")
			}
		})
	}
}
