package localprovider

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
)

// finishDeletes removes the folders of Deletes cut short before their
// removal finished, as the pending record lists them, and nothing else;
// p.mu must be held and the session must not be read-only.
func (p *provider) finishDeletes() error {
	unlock, err := p.lockPending()
	if err != nil {
		return err
	}
	defer unlock()
	rec, err := loadPending(p.pendingFile)
	if err != nil {
		return err
	}
	changed := false
	for _, e := range slices.Clone(rec.Entries) {
		if e.Kind != pendingDelete {
			continue
		}
		if exists, ok := ours(p.root, e); ok && exists && stillDoomed(e) {
			if err := os.RemoveAll(e.Path); err != nil {
				continue // kept: the next call tries again
			}
			if err := syncDir(filepath.Dir(e.Path)); err != nil {
				return err
			}
		}
		// Removed, already gone, or not one this provider may touch: done.
		rec.drop(e.Path)
		changed = true
	}
	if !changed {
		return nil
	}
	return rec.save(p.pendingFile)
}

// settleCreate decides the outcome of a Create under key that stopped
// before renaming its folder into place, from the folders the pending
// record lists for it: one with complete metadata is finished (renamed into
// place, when that place is free), any other is removed. It returns the
// finished resource, or nil. In a read-only session it changes nothing and
// returns the resource as it will be once finished. p.mu must be held.
func (p *provider) settleCreate(inv *inventory, key string) (*entry, error) {
	if !p.readOnly {
		unlock, err := p.lockPending()
		if err != nil {
			return nil, err
		}
		defer unlock()
	}
	rec, err := loadPending(p.pendingFile)
	if err != nil {
		return nil, err
	}
	todo := rec.creates(key)
	if len(todo) == 0 {
		return nil, nil
	}
	var found *entry
	for _, e := range todo {
		exists, ok := ours(p.root, e)
		var m *metadata
		if exists {
			if got, err := readMetadata(e.Path); err == nil && got.IdempotencyKey == key {
				m = got
			}
		}
		var target string
		finishable := false
		if m != nil && found == nil {
			target = filepath.Join(p.root, filepath.FromSlash(m.Path))
			finishable = filepath.Dir(target) == filepath.Dir(e.Path) && inside(p.root, target, false) && !present(target)
		}
		if p.readOnly {
			if finishable {
				found = &entry{dir: target, meta: m}
			}
			continue
		}
		parent := filepath.Dir(e.Path)
		switch {
		case finishable:
			if err := os.Rename(e.Path, target); err != nil {
				return nil, fmt.Errorf("finish the interrupted create of %s: %w", m.Name, err)
			}
			found = &entry{dir: target, meta: m}
			inv.resources = append(inv.resources, found)
		case ok && exists:
			if err := os.RemoveAll(e.Path); err != nil {
				return nil, fmt.Errorf("remove the interrupted create %s: %w", e.Path, err)
			}
		}
		if exists {
			if err := syncDir(parent); err != nil {
				return nil, err
			}
		}
		rec.drop(e.Path)
	}
	if p.readOnly {
		return found, nil
	}
	return found, rec.save(p.pendingFile)
}

// present reports whether anything (a symlink included) is at path.
func present(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// stillDoomed reports whether the folder a Delete cut short moved out of
// the way is the resource it checked (its id and key, as recorded), so
// finishing the delete removes nothing else: a folder another process put
// in the resource's place before the rename is left where it is (a
// .del- folder, whose metadata says what it is). A record an older version
// wrote names no id or key, and is trusted as before.
func stillDoomed(e pendingEntry) bool {
	if e.ID == "" {
		return true
	}
	m, err := readMetadata(e.Path)
	if err != nil {
		// Half removed already (a crash inside RemoveAll): nothing of it
		// can be another's, which would have complete metadata.
		return errors.Is(err, fs.ErrNotExist)
	}
	return m.ID == e.ID && (e.Key == "" || m.IdempotencyKey == e.Key)
}
