package providers

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

// A throttled error diagnostic is found wherever an error carries it; a
// warning marked throttled, or an error not marked, is no throttle.
func TestIsThrottled(t *testing.T) {
	slow := Throttled(2*time.Second, "rate exceeded")
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"plain error", errors.New("boom"), false},
		{"one diagnostic", slow, true},
		{"among others", Diagnostics{Errorf("other"), slow}, true},
		{"wrapped", fmt.Errorf("create: %w", Diagnostics{slow}), true},
		{"warning", Diagnostics{{Severity: SeverityWarning, Summary: "w", Throttled: true}}, false},
		{"ordinary error", Diagnostics{Errorf("bad")}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, ok := IsThrottled(tt.err)
			if ok != tt.want {
				t.Fatalf("IsThrottled = %v, want %v", ok, tt.want)
			}
			if ok && d.RetryAfter != 2*time.Second {
				t.Errorf("RetryAfter = %v, want 2s", d.RetryAfter)
			}
		})
	}
	if d := Throttled(-time.Second, "x"); d.RetryAfter != 0 || d.Severity != SeverityError || !d.Throttled {
		t.Errorf("Throttled(-1s) = %+v, want an error with no wait", d)
	}
}

// Every answered call asks IsThrottled of its error, nil almost always:
// that answer costs no allocation.
func TestIsThrottledNilAllocatesNothing(t *testing.T) {
	if n := testing.AllocsPerRun(100, func() {
		if _, ok := IsThrottled(nil); ok {
			t.Fatal("nil is throttled")
		}
	}); n != 0 {
		t.Fatalf("IsThrottled(nil) allocates %v times, want 0", n)
	}
}
