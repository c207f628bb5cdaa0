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
		refused  bool
		noShow   bool // --json: nothing printed, nothing asked
	}{
		{"yes", changes, true, false, "yes\n", true, true, true, false, false},
		{"yes with spaces", changes, true, false, "  yes \n", true, true, true, false, false},
		{"no", changes, true, false, "no\n", false, true, true, false, false},
		{"YES is not yes", changes, true, false, "YES\n", false, true, true, false, false},
		{"yes please is not yes", changes, true, false, "yes please\n", false, true, true, false, false},
		{"end of input", changes, true, false, "", false, true, true, false, false},
		{"--yes", changes, true, true, "", true, false, true, false, false},
		{"not a terminal", changes, false, false, "", false, false, true, true, false},
		{"not a terminal, --yes", changes, false, true, "", true, false, true, false, false},
		{"not a terminal, nothing to change", none, false, false, "", true, false, false, false, false},
		{"nothing to change", none, true, false, "", true, false, false, false, false},
		{"--json", changes, false, false, "", false, false, false, true, true},
		{"--json --yes", changes, false, true, "", true, false, false, false, true},
		{"--json, nothing to change", none, false, false, "", true, false, false, false, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			c := &cli{stdin: strings.NewReader(tt.input), stdout: &out, stderr: &out, red: secrets.NewRedactor(),
				isTerminal: func(any) bool { return tt.terminal }}
			var a approval
			if got := c.review(context.Background(), "apply", tt.yes, !tt.noShow, &a)(tt.pv); got != tt.want {
				t.Errorf("review = %v, want %v\n%s", got, tt.want, out.String())
			}
			if refused := a.refused != nil; refused != tt.refused {
				t.Errorf("refused %v, want %v", refused, tt.refused)
			}
			if a.refused != nil {
				err := a.explain(&stack.CancelledError{Op: "apply"})
				if want := "error asking for approval: no terminal to ask on; pass --yes (or --auto-approve) to apply without asking"; err.Error() != want {
					t.Errorf("refusal says %q, want %q", err, want)
				}
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
