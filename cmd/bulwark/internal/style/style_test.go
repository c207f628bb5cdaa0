package style

import (
	"testing"

	"github.com/bulwark-iac/bulwark/core/plan"
)

// The marks the plan and the progress show: a step's create, update and
// delete are marked as the plan marks them.
func TestMarks(t *testing.T) {
	for _, tc := range []struct {
		action plan.Action
		mode   plan.ReplaceMode
		plan   string
		step   string
	}{
		{plan.Create, "", "+", "+"},
		{plan.Update, "", "~", "~"},
		{plan.Replace, "", "-/+", "±"},
		{plan.Replace, plan.CreateFirst, "+/-", "±"},
		{plan.Delete, "", "-", "-"},
		{plan.NoOp, "", "=", ""},
		{plan.Retain, "", "=", ""},
		{plan.Import, "", "<=", ""},
		{plan.Conflict, "", "!", ""},
		{"verify", "", "", "✓"},
		{"preserve", "", "", "="},
		{"refuse", "", "", "!"},
		{"unknown", "", "", ""},
	} {
		if got := PlanMark(tc.action, tc.mode); got != tc.plan {
			t.Errorf("PlanMark(%s, %q) = %q, want %q", tc.action, tc.mode, got, tc.plan)
		}
		if got := StepMark(string(tc.action)); got != tc.step {
			t.Errorf("StepMark(%s) = %q, want %q", tc.action, got, tc.step)
		}
	}
}

// Paint colours only when asked, and never with an empty code.
func TestPaint(t *testing.T) {
	for _, tc := range []struct {
		color bool
		code  string
		want  string
	}{
		{false, Red, "x"},
		{true, Red, Red + "x" + Reset},
		{true, "", "x"},
	} {
		if got := Paint(tc.color, tc.code, "x"); got != tc.want {
			t.Errorf("Paint(%v, %q) = %q, want %q", tc.color, tc.code, got, tc.want)
		}
	}
}
