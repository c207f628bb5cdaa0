package stack

import (
	"context"
	"errors"
	"fmt"

	"github.com/bulwark-iac/bulwark/core/engine"
	"github.com/bulwark-iac/bulwark/core/providers"
)

// stopUnsent lets each of op's steps give up its Execute when op stops (a
// first interrupt) while the step's first call still waits to be sent: a
// provider that throttles has the plugin host hold calls back (its gate),
// for seconds at a time, and a first interrupt should not wait for the
// rate limit to send work the run will then roll back. The Execute's calls
// are made under a providers.SendStop on op.Stop: one that gives up before
// anything was sent under it returns providers.ErrNotSent, which the step
// returns as engine.ErrNotSent, and the engine ends the step "not_sent"
// (it changed nothing: nothing to undo, nothing for resume to look for).
// Once any call has gone out, every later one is sent as it comes, and the
// step ends as any other does; so it does when its Execute changed the
// state before the call that gave up (a change parked on its stage, which
// would ride on the "not_sent" record: a record that says nothing was
// done must not carry a change), or recorded one at once (an import's
// record, written under the claims lock, marks its SendStop sent).
//
// The gate holds calls back only once its provider has answered one
// throttled: a provider that never does (Terraform's protocols have no such
// answer) is never held back, and its steps never give up.
func (s *session) stopUnsent(op *engine.Operation) {
	if op.Stop == nil {
		return
	}
	for _, st := range op.Steps {
		exec := st.Execute
		if exec == nil {
			continue
		}
		st.Execute = func(ctx context.Context, key string) error {
			ctx, ss := providers.WithSendStop(ctx, op.Stop)
			err := exec(ctx, key)
			if err != nil && ss.Unsent() && errors.Is(err, providers.ErrNotSent) && !s.store.ForStep(st.ID).Pending() {
				return fmt.Errorf("%w: %w", engine.ErrNotSent, err)
			}
			return err
		}
	}
}
