package localprovider

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// PendingFile is the file, in the root, that records the transient folders
// this provider made
// and has not finished with: a Create's folder under construction, a
// Delete's folder renamed for removal. It is the only authority for
// removing a transient folder: a folder that merely looks like one (a
// user's ".del-0123456789abcdef") is never touched. It exists only while
// something is pending.
const PendingFile = ".bulwark-local-pending.json"

// pendingLock is the file in the root whose flock guards PendingFile: the
// processes that share a root (stacks, machines on a share) change the
// record one at a time, each reading it afresh.
const pendingLock = ".bulwark-local-pending.lock"

// pendingVersion is the format version of PendingFile.
const pendingVersion = 1

// Kinds of pending folders.
const (
	pendingCreate = "create" // a Create's folder, built under a temporary name
	pendingDelete = "delete" // a Delete's folder, renamed before its removal
)

// Prefixes of the provider's transient folders, followed by 16 random hex
// digits. Folder names starting with "." are reserved for the provider, so
// no resource is ever one; scans skip them.
const (
	tmpPrefix = ".tmp-"
	delPrefix = ".del-"
)

// pendingEntry is one transient folder.
type pendingEntry struct {
	Kind string `json:"kind"`
	// Path is the folder's absolute path.
	Path string `json:"path"`
	// Key is the idempotency key of the Create (create), or the key the
	// deleted resource carried when checked (delete; empty in a record an
	// older version wrote).
	Key string `json:"idempotency_key,omitempty"`
	// ID is the id of the resource deleted (delete only).
	ID string `json:"id,omitempty"`
}

// pending is what PendingFile holds.
type pending struct {
	Version int            `json:"version"`
	Entries []pendingEntry `json:"entries"`
}

func loadPending(file string) (*pending, error) {
	b, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return &pending{Version: pendingVersion}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the pending folders record: %w", err)
	}
	var p pending
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("%s is corrupt: %w", file, err)
	}
	if p.Version != pendingVersion {
		return nil, fmt.Errorf("%s has format version %d; this provider reads %d", file, p.Version, pendingVersion)
	}
	return &p, nil
}

// save writes the record atomically, or removes the file when nothing is
// pending.
func (p *pending) save(file string) error {
	if len(p.Entries) == 0 {
		err := os.Remove(file)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		return syncDir(filepath.Dir(file))
	}
	b, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return fmt.Errorf("encode the pending folders record: %w", err)
	}
	return writeFileAtomic(file, append(b, '\n'))
}

func (p *pending) add(e pendingEntry) { p.Entries = append(p.Entries, e) }

func (p *pending) drop(path string) {
	p.Entries = slices.DeleteFunc(p.Entries, func(e pendingEntry) bool { return e.Path == path })
}

// creates returns the Create folders recorded for key.
func (p *pending) creates(key string) []pendingEntry {
	var out []pendingEntry
	for _, e := range p.Entries {
		if e.Kind == pendingCreate && e.Key == key {
			out = append(out, e)
		}
	}
	return out
}

// transientName returns a fresh name "<prefix><16 random hex digits>".
func transientName(prefix string) (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("generate a folder name: %w", err)
	}
	return prefix + hex.EncodeToString(b[:]), nil
}

// freshTransient returns a path beside its siblings in parent, named with
// prefix, where nothing exists yet.
func freshTransient(parent, prefix string) (string, error) {
	for {
		name, err := transientName(prefix)
		if err != nil {
			return "", err
		}
		path := filepath.Join(parent, name)
		if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
			return path, nil
		} else if err != nil {
			return "", err
		}
	}
}

// ours reports whether a recorded entry still names a folder this provider
// may remove: below root, named like its kind, a real folder (not a
// symlink). A record edited by hand cannot point the provider elsewhere.
func ours(root string, e pendingEntry) (exists, ok bool) {
	prefix := tmpPrefix
	if e.Kind == pendingDelete {
		prefix = delPrefix
	}
	clean := filepath.Clean(e.Path)
	if clean != e.Path || !filepath.IsAbs(clean) || !inside(root, clean, false) || !strings.HasPrefix(filepath.Base(clean), prefix) {
		return false, false
	}
	fi, err := os.Lstat(clean)
	if errors.Is(err, fs.ErrNotExist) {
		return false, true
	}
	if err != nil || !fi.IsDir() {
		return false, false
	}
	return true, true
}

// lockPending takes the root's pending lock (an exclusive flock), for a
// session that may write.
func (p *provider) lockPending() (func(), error) {
	f, err := lockFile(filepath.Join(p.root, pendingLock))
	if err != nil {
		return nil, fmt.Errorf("lock the pending folders record: %w", err)
	}
	return func() { f.Close() }, nil
}

// editPending changes the record under the lock, read afresh.
func (p *provider) editPending(fn func(rec *pending)) error {
	unlock, err := p.lockPending()
	if err != nil {
		return err
	}
	defer unlock()
	rec, err := loadPending(p.pendingFile)
	if err != nil {
		return err
	}
	fn(rec)
	return rec.save(p.pendingFile)
}

// adoptLegacyPending moves the entries of a record an older version kept in
// the data folder into the root's, and removes it.
func (p *provider) adoptLegacyPending() error {
	if p.legacyPending == "" {
		return nil
	}
	old, err := loadPending(p.legacyPending)
	if err != nil || len(old.Entries) == 0 {
		return err
	}
	if err := p.editPending(func(rec *pending) {
		for _, e := range old.Entries {
			if !slices.ContainsFunc(rec.Entries, func(x pendingEntry) bool { return x.Path == e.Path }) {
				rec.add(e)
			}
		}
	}); err != nil {
		return err
	}
	old.Entries = nil
	return old.save(p.legacyPending)
}
