package inspect

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/bulwark-iac/bulwark/core/spec"
	"github.com/bulwark-iac/bulwark/core/stack"
	"github.com/bulwark-iac/bulwark/core/storage"
	"github.com/bulwark-iac/bulwark/core/storage/filestore"
)

// countedBackend is the file backend counting its Closes.
type countedBackend struct {
	storage.Backend
	closes *atomic.Int32
}

func (b countedBackend) Close() error {
	b.closes.Add(1)
	return b.Backend.Close()
}

// status and history read the state, the journal and the lock through one
// open of the backend, closed once: on PostgreSQL every open is a server
// session.
func TestStatusAndHistoryOpenTheBackendOnce(t *testing.T) {
	dir := t.TempDir()
	var opens, closes atomic.Int32
	opts := stack.Options{StorageOptions: stack.StorageOptions{StateDir: dir, StateURL: "fake://counting",
		Open: func(_ context.Context, _ string, so storage.Options) (storage.Backend, error) {
			opens.Add(1)
			return countedBackend{filestore.New(stack.StackDir(dir, so.Stack), so), &closes}, nil
		}}}
	sp := &spec.Spec{Stack: "s"}
	for _, tt := range []struct {
		name string
		run  func() error
	}{
		{"status", func() error { _, err := Status(sp, opts); return err }},
		{"history", func() error { _, err := StackHistory(sp, opts); return err }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			opens.Store(0)
			closes.Store(0)
			if err := tt.run(); err != nil {
				t.Fatal(err)
			}
			if opens.Load() != 1 || closes.Load() != 1 {
				t.Errorf("opened the backend %d times and closed it %d: want once each", opens.Load(), closes.Load())
			}
		})
	}
}
