package stack

import "testing"

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
