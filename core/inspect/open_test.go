package inspect

import (
	"testing"

	"github.com/bulwark-iac/bulwark/core/spec"
	"github.com/bulwark-iac/bulwark/core/stack"
	"github.com/bulwark-iac/bulwark/core/storage"
	"github.com/bulwark-iac/bulwark/core/storage/filestore"
	"github.com/bulwark-iac/bulwark/core/storage/storagetest"
)

// status and history read the state, the journal and the lock through one
// open of the backend, closed once: on PostgreSQL every open is a server
// session.
func TestStatusAndHistoryOpenTheBackendOnce(t *testing.T) {
	dir := t.TempDir()
	counter := storagetest.NewOpenCounter(func(so storage.Options) storage.Backend {
		return filestore.New(stack.StackDir(dir, so.Stack), so)
	})
	opts := stack.Options{StorageOptions: stack.StorageOptions{StateDir: dir, StateURL: "fake://counting", Open: counter.Open}}
	sp := &spec.Spec{Stack: "s"}
	for _, tt := range []struct {
		name string
		run  func() error
	}{
		{"status", func() error { _, err := Status(sp, opts); return err }},
		{"history", func() error { _, err := StackHistory(sp, opts); return err }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			counter.Reset()
			if err := tt.run(); err != nil {
				t.Fatal(err)
			}
			if opens, closes := counter.Counts(); opens != 1 || closes != 1 {
				t.Errorf("opened the backend %d times and closed it %d: want once each", opens, closes)
			}
		})
	}
}
