package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/bulwark-iac/bulwark/core/plan"
	"github.com/bulwark-iac/bulwark/core/secrets"
	"github.com/bulwark-iac/bulwark/core/stack"
)

// The review hook, in-process, with the terminal check injected: it prints
// the plan when there is something to change, asks only on a terminal
// without --yes, and only "yes" goes on.
func TestReview(t *testing.T) {
	changes := &stack.Preview{Stack: "s", Changes: []stack.Planned{{Change: plan.Change{Resource: "a", Type: "network", Action: plan.Create}}}}
	none := &stack.Preview{Stack: "s", Changes: []stack.Planned{{Change: plan.Change{Resource: "a", Type: "network", Action: plan.NoOp}}}}
	for _, tt := range []struct {
		name     string
		pv       *stack.Preview
		terminal bool
		yes      bool
		input    string
		want     bool
		asked    bool
		printed  bool
	}{
		{"yes", changes, true, false, "yes\n", true, true, true},
		{"yes with spaces", changes, true, false, "  yes \n", true, true, true},
		{"no", changes, true, false, "no\n", false, true, true},
		{"YES is not yes", changes, true, false, "YES\n", false, true, true},
		{"yes please is not yes", changes, true, false, "yes please\n", false, true, true},
		{"end of input", changes, true, false, "", false, true, true},
		{"--yes", changes, true, true, "", true, false, true},
		{"not a terminal", changes, false, false, "", true, false, true},
		{"nothing to change", none, true, false, "", true, false, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			c := &cli{stdin: strings.NewReader(tt.input), stdout: &out, stderr: &out, red: secrets.NewRedactor(),
				isTerminal: func(any) bool { return tt.terminal }}
			if got := c.review(context.Background(), "apply", tt.yes)(tt.pv); got != tt.want {
				t.Errorf("review = %v, want %v\n%s", got, tt.want, out.String())
			}
			if asked := strings.Contains(out.String(), "Only 'yes' will be accepted"); asked != tt.asked {
				t.Errorf("asked %v, want %v:\n%s", asked, tt.asked, out.String())
			}
			if printed := strings.Contains(out.String(), " a (network"); printed != tt.printed {
				t.Errorf("plan printed %v, want %v:\n%s", printed, tt.printed, out.String())
			}
		})
	}
}
