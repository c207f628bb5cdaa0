package filestore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/bulwark-iac/bulwark/core/nofollow"
	"github.com/bulwark-iac/bulwark/core/state"
	"github.com/bulwark-iac/bulwark/core/storage"
)

// Backups lists the backups, oldest first.
func (b *Backend) Backups(ctx context.Context) ([]storage.BackupInfo, error) {
	entries, err := os.ReadDir(filepath.Join(b.dir, backupsDir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("backups: %w", err)
	}
	var out []storage.BackupInfo
	for _, e := range entries {
		n := e.Name()
		if !strings.HasPrefix(n, backupPrefix) || !strings.HasSuffix(n, backupSuffix) || !e.Type().IsRegular() {
			continue
		}
		info := storage.BackupInfo{Name: strings.TrimSuffix(strings.TrimPrefix(n, backupPrefix), backupSuffix)}
		if fi, err := e.Info(); err == nil {
			info.Time, info.Bytes = fi.ModTime().UTC(), fi.Size()
		}
		if st, err := state.Load(filepath.Join(b.dir, backupsDir, n)); err == nil {
			info.Serial = st.Serial
		}
		out = append(out, info)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func (b *Backend) backupPath(name string) (string, error) {
	if name == "" || strings.ContainsAny(name, `/\`) || strings.HasPrefix(name, ".") {
		return "", fmt.Errorf("backup %q: not a backup name", name)
	}
	return filepath.Join(b.dir, backupsDir, backupPrefix+name+backupSuffix), nil
}

// Backup reads one backup, its values opened. A backup of another lineage
// is refused.
func (b *Backend) Backup(ctx context.Context, name string) (*state.State, error) {
	p, err := b.backupPath(name)
	if err != nil {
		return nil, err
	}
	st, err := state.Load(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("backup %s: %w", name, storage.ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	if _, err := state.OpenState(st, b.opts.Sealing); err != nil {
		return nil, fmt.Errorf("backup %s: %w", p, err)
	}
	cur, err := b.Load(ctx)
	if err != nil {
		return nil, err
	}
	if st.Stack != b.opts.Stack || (cur.Lineage != "" && st.Lineage != "" && st.Lineage != cur.Lineage) {
		return nil, &storage.LineageError{What: "backup", Location: p, Want: cur.Lineage, Found: st.Lineage}
	}
	return st, nil
}

// sealedSnapshot is the state as a file holds it: revisions without their
// texts, sensitive values sealed. w.mu is held. It copies no more than it
// must: a resource is never changed in place once applied (see
// storage.Change.Apply), so the snapshot shares those with nothing to seal
// and holds a sealed copy of the others (state.SealResource); its map,
// lists and metadata are its own. The whole state is not copied (it was
// twice, through JSON: O(N) encoding at every checkpoint and backup).
func (w *writer) sealedSnapshot() (*state.State, error) {
	snap := *w.st
	snap.Resources = make(map[string]*state.Resource, len(w.st.Resources))
	for n, r := range w.st.Resources {
		sr, err := state.SealResource(r, w.b.opts.Sealing)
		if err != nil {
			return nil, err
		}
		snap.Resources[n] = sr
	}
	snap.Forgotten = slices.Clone(w.st.Forgotten)
	snap.Interventions = slices.Clone(w.st.Interventions)
	revs := slices.Clone(w.st.Revisions)
	for i := range revs {
		revs[i].Spec = "" // bodies are PutRevision's
	}
	// Sensitive outputs and revision variables, sealed in a copy of their
	// own (as seal does for a commit's metadata).
	extras, err := state.SealState(&state.State{Revisions: revs, Outputs: w.st.Outputs}, w.b.opts.Sealing)
	if err != nil {
		return nil, err
	}
	snap.Revisions, snap.Outputs = extras.Revisions, extras.Outputs
	if w.b.opts.Sealing.Sealer == nil {
		// Nothing was copied by sealing: the outputs map is the view's.
		snap.Outputs = maps.Clone(w.st.Outputs)
		for i := range snap.Revisions {
			snap.Revisions[i].Variables = maps.Clone(snap.Revisions[i].Variables)
		}
	}
	return &snap, nil
}

// PutBackup writes a copy of the state as of now under name, and keeps the
// newest keep backups.
func (w *writer) PutBackup(ctx context.Context, name string, keep int) (bool, error) {
	if err := w.usable(); err != nil {
		return false, err
	}
	p, err := w.b.backupPath(name)
	if err != nil {
		return false, err
	}
	if _, err := os.Lstat(p); err == nil {
		return false, nil
	}
	w.mu.Lock()
	serial := w.st.Serial
	w.mu.Unlock()
	if w.newestBackupSerial() == serial {
		return false, nil // nothing changed since: no second copy
	}
	w.mu.Lock()
	snap, err := w.sealedSnapshot()
	w.mu.Unlock()
	if err != nil {
		return false, fmt.Errorf("backup: %w", err)
	}
	if _, err := nofollow.Mkdir(filepath.Join(w.b.dir, backupsDir), 0o700); err != nil {
		return false, fmt.Errorf("backup: %w", err)
	}
	if err := state.WriteFile(p, snap); err != nil {
		return false, fmt.Errorf("backup: %w", err)
	}
	w.mu.Lock()
	w.wrote = true
	w.mu.Unlock()
	w.afterWrite()
	return true, w.pruneBackups(keep)
}

// newestBackupSerial is the serial the newest backup holds, -1 when there
// is none (or it cannot be read: a copy is then taken).
func (w *writer) newestBackupSerial() int64 {
	names, err := w.backupFiles()
	if err != nil || len(names) == 0 {
		return -1
	}
	st, err := state.Load(filepath.Join(w.b.dir, backupsDir, names[len(names)-1]))
	if err != nil {
		return -1
	}
	return st.Serial
}

// DropBackup removes the backup stored under name; a link there is
// removed, never followed.
func (w *writer) DropBackup(ctx context.Context, name string) error {
	if err := w.usable(); err != nil {
		return err
	}
	p, err := w.b.backupPath(name)
	if err != nil {
		return err
	}
	// The folder is the stack's own, never a link to one elsewhere: a
	// file there of the same name is not bulwark's to delete.
	switch err := nofollow.CheckDir(filepath.Dir(p)); {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("drop backup %s: %w", name, err)
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("drop backup %s: %w", name, err)
	}
	return nil
}

// CopyBackup stores st, a backup read from another backend (bulwark state
// migrate), under info.Name, sealed as PutBackup seals; the file's time is
// info.Time (what Backups reports). A backup already stored under the name
// is kept as it is. Nothing is pruned.
func (w *writer) CopyBackup(ctx context.Context, info storage.BackupInfo, st *state.State) error {
	if err := w.usable(); err != nil {
		return err
	}
	p, err := w.b.backupPath(info.Name)
	if err != nil {
		return err
	}
	if _, err := os.Lstat(p); err == nil {
		return nil
	}
	snap, err := storage.SealSnapshot(st.Clone(), w.b.opts.Sealing)
	if err != nil {
		return fmt.Errorf("backup %s: %w", info.Name, err)
	}
	if _, err := nofollow.Mkdir(filepath.Join(w.b.dir, backupsDir), 0o700); err != nil {
		return fmt.Errorf("backup %s: %w", info.Name, err)
	}
	if err := state.WriteFile(p, snap); err != nil {
		return fmt.Errorf("backup %s: %w", info.Name, err)
	}
	if !info.Time.IsZero() {
		if err := os.Chtimes(p, info.Time, info.Time); err != nil {
			return fmt.Errorf("backup %s: %w", info.Name, err)
		}
	}
	w.mu.Lock()
	w.wrote = true
	w.mu.Unlock()
	w.afterWrite()
	return nil
}

// pruneBackups removes all but the newest keep backups. Their names are
// operation ids (ULIDs), so they sort by age; nothing else in the folder
// is touched, and a link is removed, never followed.
func (w *writer) pruneBackups(keep int) error {
	if keep <= 0 {
		return nil
	}
	dir := filepath.Join(w.b.dir, backupsDir)
	names, err := w.backupFiles()
	if err != nil {
		return fmt.Errorf("backups: %w", err)
	}
	for len(names) > keep {
		if err := os.Remove(filepath.Join(dir, names[0])); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("backups: prune: %w", err)
		}
		names = names[1:]
	}
	return nil
}

// backupFiles lists the backups' file names, oldest first (their names
// are operation ids, ULIDs, which sort by age).
func (w *writer) backupFiles() ([]string, error) {
	entries, err := os.ReadDir(filepath.Join(w.b.dir, backupsDir))
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		if n := e.Name(); strings.HasPrefix(n, backupPrefix) && strings.HasSuffix(n, backupSuffix) {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names, nil
}

// ReplaceBackup stores st in place of backup name, sealed under the
// backend's sealing now (secrets rotate): a temporary file renamed over
// the old one (never through a link), which keeps its time.
func (w *writer) ReplaceBackup(ctx context.Context, name string, st *state.State) error {
	if err := w.usable(); err != nil {
		return err
	}
	p, err := w.b.backupPath(name)
	if err != nil {
		return err
	}
	if err := nofollow.CheckDir(filepath.Dir(p)); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("backup %s: %w", name, storage.ErrNotFound)
		}
		return fmt.Errorf("backup %s: %w", name, err)
	}
	fi, err := os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("backup %s: %w", name, storage.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("backup %s: %w", name, err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("backup %s: %s is not a regular file: refusing to replace it", name, p)
	}
	snap, err := storage.SealSnapshot(st.Clone(), w.b.opts.Sealing)
	if err != nil {
		return fmt.Errorf("backup %s: %w", name, err)
	}
	if err := state.WriteFile(p, snap); err != nil {
		return fmt.Errorf("backup %s: %w", name, err)
	}
	if err := os.Chtimes(p, fi.ModTime(), fi.ModTime()); err != nil {
		return fmt.Errorf("backup %s: %w", name, err)
	}
	w.mu.Lock()
	w.wrote = true
	w.mu.Unlock()
	w.afterWrite()
	return nil
}
