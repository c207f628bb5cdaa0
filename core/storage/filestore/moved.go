package filestore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/bulwark-iac/bulwark/core/nofollow"
	"github.com/bulwark-iac/bulwark/core/storage"
	"github.com/bulwark-iac/bulwark/sdk/atomicfile"
)

// moved refuses a stack folder `bulwark state migrate` fenced or moved
// elsewhere, naming the migration and the new place (storage.CheckMoved).
func (b *Backend) moved() error {
	to, err := nofollow.ReadFile(b.path(movedFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("load state: %w", err)
	}
	return storage.CheckMoved(b.opts, b.Location(), string(to), b.path(movedFile)+" (this folder is kept for reference)")
}

// MarkMoved records that the stack now lives at to (a URL without
// credentials): from then on Load and Lock refuse with storage.ErrMoved
// naming it (backends.Migrate).
func (w *writer) MarkMoved(ctx context.Context, to string) error {
	if err := w.usable(); err != nil {
		return err
	}
	if err := nofollow.CheckReplaceable(w.b.path(movedFile)); err != nil {
		return fmt.Errorf("mark moved: %w", err)
	}
	if err := atomicfile.Write(w.b.path(movedFile), []byte(to+"\n"), 0o600); err != nil {
		return fmt.Errorf("mark moved: %w", err)
	}
	w.mu.Lock()
	w.wrote = true
	w.mu.Unlock()
	return nil
}
