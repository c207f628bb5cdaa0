package filestore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"github.com/bulwark-iac/bulwark/core/nofollow"
	"github.com/bulwark-iac/bulwark/core/secrets"
	"github.com/bulwark-iac/bulwark/core/state"
	"github.com/bulwark-iac/bulwark/core/storage"
	"github.com/bulwark-iac/bulwark/sdk/atomicfile"
)

// revisionFile is the form of a revision body on disk: the spec sealed,
// sensitive variables sealed.
type revisionFile struct {
	Spec      string         `json:"spec"`
	Variables map[string]any `json:"variables,omitempty"`
	Sensitive []string       `json:"sensitive,omitempty"`
}

func (b *Backend) revisionPath(n int) string {
	return filepath.Join(b.dir, revisionsDir, strconv.Itoa(n)+".json")
}

// Revision returns revision n's body: from its own file, or from the
// snapshot of a stack folder written before revisions had their own.
func (b *Backend) Revision(ctx context.Context, n int) (*storage.RevisionBody, error) {
	raw, err := nofollow.ReadFile(b.revisionPath(n))
	if errors.Is(err, fs.ErrNotExist) {
		return b.legacyRevision(n)
	}
	if err != nil {
		return nil, fmt.Errorf("revision %d: %w", n, err)
	}
	var f revisionFile
	if err := json.Unmarshal(raw, &f); err != nil {
		return nil, fmt.Errorf("revision %d (%s): %w: %v", n, b.revisionPath(n), state.ErrCorrupt, err)
	}
	body := &storage.RevisionBody{Spec: f.Spec, Variables: f.Variables, Sensitive: f.Sensitive}
	if err := b.open(&body.Spec, body.Variables, body.Sensitive); err != nil {
		return nil, fmt.Errorf("revision %d: %w", n, err)
	}
	return body, nil
}

func (b *Backend) legacyRevision(n int) (*storage.RevisionBody, error) {
	st, err := state.Load(b.path(stateFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("revision %d: %w", n, storage.ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	if _, err := state.OpenState(st, b.opts.Sealing); err != nil {
		return nil, fmt.Errorf("revision %d: %w", n, err)
	}
	rev, ok := st.Revision(n)
	if !ok || rev.Spec == "" {
		return nil, fmt.Errorf("revision %d: %w", n, storage.ErrNotFound)
	}
	if secrets.IsSealed(rev.Spec) {
		return nil, fmt.Errorf("revision %d: %w", n, storage.ErrSpecSealed)
	}
	return &storage.RevisionBody{Spec: rev.Spec}, nil
}

// open opens a sealed spec text and the sealed sensitive variables.
func (b *Backend) open(spec *string, vars map[string]any, sensitive []string) error {
	sl := b.opts.Sealing
	if secrets.IsSealed(*spec) {
		if sl.Sealer == nil {
			return storage.ErrSpecSealed
		}
		v, err := sl.Sealer.OpenValue(*spec)
		if err != nil {
			return err
		}
		text, ok := v.(string)
		if !ok {
			return errors.New("sealed spec is not text")
		}
		*spec = text
	}
	for _, k := range sensitive {
		sv, ok := vars[k].(string)
		if !ok || !secrets.IsSealed(sv) || sl.Sealer == nil {
			continue
		}
		v, err := sl.Sealer.OpenValue(sv)
		if err != nil {
			return fmt.Errorf("variable %s: %w", k, err)
		}
		vars[k] = v
		if sl.Reveal != nil {
			sl.Reveal(v)
		}
	}
	return nil
}

// PutRevision writes revision n's body to its own file, sealed.
func (w *writer) PutRevision(ctx context.Context, n int, body storage.RevisionBody) error {
	if err := w.usable(); err != nil {
		return err
	}
	f, err := w.sealBody(body)
	if err != nil {
		return fmt.Errorf("revision %d: %w", n, err)
	}
	raw, err := json.Marshal(f)
	if err != nil {
		return fmt.Errorf("revision %d: %w", n, err)
	}
	if _, err := nofollow.Mkdir(filepath.Join(w.b.dir, revisionsDir), 0o700); err != nil {
		return fmt.Errorf("revision %d: %w", n, err)
	}
	p := w.b.revisionPath(n)
	if err := nofollow.CheckReplaceable(p); err != nil {
		return fmt.Errorf("revision %d: %w", n, err)
	}
	if err := atomicfile.Write(p, raw, 0o600); err != nil {
		return fmt.Errorf("revision %d: %w", n, err)
	}
	w.mu.Lock()
	w.wrote = true
	w.mu.Unlock()
	w.afterWrite()
	return nil
}

func (w *writer) sealBody(body storage.RevisionBody) (revisionFile, error) {
	sb, err := storage.SealRevision(body, w.b.opts.Sealing)
	if err != nil {
		return revisionFile{}, err
	}
	return revisionFile{Spec: sb.Spec, Variables: sb.Variables, Sensitive: sb.Sensitive}, nil
}

// DeleteRevision removes revision n's body.
func (w *writer) DeleteRevision(ctx context.Context, n int) error {
	if err := w.usable(); err != nil {
		return err
	}
	if err := os.Remove(w.b.revisionPath(n)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("revision %d: %w", n, err)
	}
	return nil
}
