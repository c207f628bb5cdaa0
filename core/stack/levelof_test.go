package stack

import (
	"context"
	"errors"
	"testing"

	"github.com/bulwark-iac/bulwark/core/protection"
	"github.com/bulwark-iac/bulwark/core/spec"
	"github.com/bulwark-iac/bulwark/core/state"
)

// The deletion path's own guard: a record whose stored protection word
// named no level is refused as protected, even when the spec calls the
// resource ephemeral and the reason is a teardown. (Load refuses such a
// record first; this is what holds should one reach the path anyway.)
func TestDeletionPathRefusesAnUnknownRecordedWord(t *testing.T) {
	s := &session{sp: &spec.Spec{Resources: []*spec.Resource{{Name: "db", Protection: protection.Ephemeral}}}}
	for _, why := range []reason{reasonTeardown, reasonDeleteFirst} {
		res := &state.Resource{Name: "db", Type: "t", Provider: "p", ID: "1", UnknownProtection: "Ephemeral "}
		action, _, err := s.deleteResource(context.Background(), nil, res, why, nil)
		if action != "refuse" || !errors.Is(err, ErrProtected) {
			t.Errorf("reason %v: deleteResource = %q, %v; want refuse, ErrProtected", why, action, err)
		}
	}
}
