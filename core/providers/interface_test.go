package providers

import (
	"errors"
	"fmt"
	"testing"
)

// ErrReleaseUnsupported keeps the words the CLI has always printed and is
// an ErrUnsupported, wrapped or not.
func TestErrReleaseUnsupported(t *testing.T) {
	wrapped := fmt.Errorf("provider p: release db: %w", ErrReleaseUnsupported)
	for _, err := range []error{ErrReleaseUnsupported, wrapped} {
		if !errors.Is(err, ErrUnsupported) || !errors.Is(err, ErrReleaseUnsupported) {
			t.Errorf("%v: not an ErrUnsupported and an ErrReleaseUnsupported", err)
		}
	}
	if got := ErrReleaseUnsupported.Error(); got != "the provider cannot release claims" {
		t.Errorf("ErrReleaseUnsupported = %q", got)
	}
	if errors.Is(ErrUnsupported, ErrReleaseUnsupported) {
		t.Error("any ErrUnsupported is an ErrReleaseUnsupported")
	}
}
