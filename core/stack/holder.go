package stack

import (
	"context"

	"github.com/bulwark-iac/bulwark/core/storage"
)

// inspector is what a backend may tell of its lock besides Holder: the
// record a dead holder left (the file backend).
type inspector interface {
	Inspect(ctx context.Context) (live, stale *storage.Holder, err error)
}

// LiveHolder is who holds be's lock and is alive (as the next Lock would
// find it: a holder whose process is gone is not), or nil.
func LiveHolder(ctx context.Context, be storage.Backend) *storage.Holder {
	if in, ok := be.(inspector); ok {
		live, _, err := in.Inspect(ctx)
		if err != nil {
			return nil
		}
		return live
	}
	h, _ := be.Holder(ctx)
	return h
}
