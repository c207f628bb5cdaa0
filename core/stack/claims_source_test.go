package stack

import (
	"errors"
	"strings"
	"testing"

	"github.com/bulwark-iac/bulwark/core/providerlock"
	"github.com/bulwark-iac/bulwark/core/tfinstall"
)

func TestSameSource(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want bool
	}{
		{"bulwark/fwtest", "registry.terraform.io/bulwark/fwtest", true},
		{"Bulwark/FWTest", "bulwark/fwtest", true},
		{"bulwark/fwtest", "bulwark/sdktest", false},
		{"example.com/bulwark/fwtest", "bulwark/fwtest", false},
		{"mock", "mock", true},
		{"mock", "local", false},
		{"mock", "bulwark/mock", false},
	} {
		if got := sameSource(tt.a, tt.b); got != tt.want {
			t.Errorf("sameSource(%q, %q) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}

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
		err = CheckPin("fw", src, c, providerlock.TerraformEntry{Version: tt.pinned, Hashes: []string{"h1:x"}}, "x/bulwark.lock")
		var pe *PinOutsideConstraintError
		if got := errors.As(err, &pe); got != tt.refused {
			t.Errorf("%q pinned %s: %v, want refused %v", tt.constraint, tt.pinned, err, tt.refused)
		} else if got && (!strings.Contains(err.Error(), tt.pinned) || !strings.Contains(err.Error(), tt.constraint) || !strings.Contains(err.Error(), "x/bulwark.lock")) {
			t.Errorf("message %q names not the pin, the constraint and the lock", err)
		}
	}
}
