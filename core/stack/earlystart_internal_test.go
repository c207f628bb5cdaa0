package stack

import (
	"testing"

	"github.com/bulwark-iac/bulwark/core/engine"
	"github.com/bulwark-iac/bulwark/core/plan"
	"github.com/bulwark-iac/bulwark/core/protection"
)

// Only a create of an ephemeral resource whose own failure compensates may
// start on dependencies that executed but are not verified yet: the
// rollback a failed Verify triggers deletes it whole. Anything else waits.
func TestStartsEarlyOnlyForAnEphemeralCompensatedCreate(t *testing.T) {
	for _, tc := range []struct {
		action       plan.Action
		level        protection.Level
		policy       engine.FailurePolicy
		intervention bool
		want         bool
	}{
		{plan.Create, protection.Ephemeral, engine.Compensate, false, true},
		{plan.Create, protection.Durable, engine.Compensate, false, false},
		{plan.Create, protection.Protected, engine.Compensate, false, false},
		{plan.Create, protection.Unspecified, engine.Compensate, false, false},
		{plan.Create, protection.Ephemeral, engine.Continue, false, false},
		{plan.Create, protection.Ephemeral, engine.Abort, false, false},
		{plan.Create, protection.Ephemeral, engine.Compensate, true, false},
		{plan.Update, protection.Ephemeral, engine.Compensate, false, false},
		{plan.Replace, protection.Ephemeral, engine.Compensate, false, false},
		{plan.Import, protection.Ephemeral, engine.Compensate, false, false},
		{plan.Delete, protection.Ephemeral, engine.Compensate, false, false},
		{plan.NoOp, protection.Ephemeral, engine.Compensate, false, false},
		{plan.Retain, protection.Ephemeral, engine.Compensate, false, false},
	} {
		step := &engine.Step{Policy: tc.policy, Intervention: tc.intervention}
		if got := startsEarly(plan.Change{Action: tc.action, Protection: tc.level}, step); got != tc.want {
			t.Errorf("%s of a %s resource, policy %s, intervention %v: early %v, want %v", tc.action, tc.level, tc.policy, tc.intervention, got, tc.want)
		}
	}
}
