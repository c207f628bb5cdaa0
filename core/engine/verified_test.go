package engine

import (
	"context"
	"errors"
	"slices"
	"testing"
)

// Step.Verified runs once a step's Verify has passed, after its "execute
// ok" is journaled and before its "verify ok": what it stages rides on
// the verify record. A step whose Verify fails never has it called.
func TestVerifiedRunsBetweenTheExecuteAndVerifyRecords(t *testing.T) {
	e, path := newEngine(t)
	noop := func(context.Context, string) error { return nil }
	at := map[string][]string{}
	hook := func(id string) func() {
		return func() { at[id] = stepRecords(t, path, id) }
	}
	ok := &Step{ID: "ok", Resource: "ok", Action: "delete", Policy: Continue, Execute: noop,
		Verify: func(context.Context) error { return nil }}
	ok.Verified = hook("ok")
	bad := &Step{ID: "bad", Resource: "bad", Action: "delete", Policy: Continue, Execute: noop,
		Verify: func(context.Context) error { return errors.New("still there") }}
	bad.Verified = hook("bad")
	res := e.Run(context.Background(), &Operation{ID: "op_1", Type: "teardown", Steps: []*Step{ok, bad}, Parallelism: 1})
	if res.Outcome != Failed || !slices.Equal(res.Failed, []string{"bad"}) {
		t.Fatalf("outcome %v, failed %v, want bad alone failed", res.Outcome, res.Failed)
	}
	if got, want := at["ok"], []string{"execute started", "execute ok"}; !slices.Equal(got, want) {
		t.Errorf("Verified of ok ran with %v journaled, want %v", got, want)
	}
	if got, want := stepRecords(t, path, "ok"), []string{"execute started", "execute ok", "verify ok"}; !slices.Equal(got, want) {
		t.Errorf("ok journaled %v, want %v", got, want)
	}
	if _, called := at["bad"]; called {
		t.Error("Verified ran for a step whose Verify failed")
	}
}
