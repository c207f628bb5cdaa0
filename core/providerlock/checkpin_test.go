package providerlock

import (
	"errors"
	"strings"
	"testing"

	"github.com/bulwark-iac/bulwark/core/tfinstall"
)

func TestCheckPin(t *testing.T) {
	src, err := tfinstall.ParseSource("bulwark/fwtest")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		constraint, pinned string
		refused            bool
	}{
		{"", "0.1.0", false},
		{"~> 0.1", "0.1.0", false},
		{"~> 0.2", "0.1.0", true},
		{">= 1.0, < 2.0", "2.0.0", true},
		{"0.1.0", "0.1.0", false},
	} {
		c, err := tfinstall.ParseConstraints(tt.constraint)
		if err != nil {
			t.Fatal(err)
		}
		err = CheckPin("fw", src, c, TerraformEntry{Version: tt.pinned, Hashes: []string{"h1:x"}}, "x/bulwark.lock")
		var pe *PinOutsideConstraintError
		if got := errors.As(err, &pe); got != tt.refused {
			t.Errorf("%q pinned %s: %v, want refused %v", tt.constraint, tt.pinned, err, tt.refused)
		} else if got && (!strings.Contains(err.Error(), tt.pinned) || !strings.Contains(err.Error(), tt.constraint) || !strings.Contains(err.Error(), "x/bulwark.lock")) {
			t.Errorf("message %q names not the pin, the constraint and the lock", err)
		}
	}
}
