package main

import (
	"errors"
	"syscall"
	"testing"

	"github.com/bulwark-iac/bulwark/core/secrets"
	"github.com/bulwark-iac/bulwark/core/stack"
)

// fullWriter fails every write, as stdout redirected to a full disk does.
type fullWriter struct{}

func (fullWriter) Write([]byte) (int, error) { return 0, syscall.ENOSPC }

// A plan that cannot be written out (stdout on a full disk, a closed pipe)
// is an error, never a silent exit 0 with nothing shown, in text as in
// JSON.
func TestPlanWriteErrorIsReturned(t *testing.T) {
	for _, asJSON := range []bool{false, true} {
		v := view{stdout: fullWriter{}, stderr: fullWriter{}, red: secrets.NewRedactor()}
		err := newPlanView(viewTypeOf(asJSON), v).Plan(&stack.Preview{Stack: "s", Changes: []stack.Planned{}}, false)
		if !errors.Is(err, syscall.ENOSPC) {
			t.Errorf("json %v: Plan on a full stdout returned %v, want ENOSPC", asJSON, err)
		}
	}
}
