// Package lock is the exclusive per-stack lock every mutating command holds.
//
// What is locked is the stack folder itself: an flock(2) on a descriptor of
// the folder, opened without following a symbolic link. No file name takes
// part in the exclusion, so deleting, renaming or replacing anything inside
// the folder (the lock file included) cannot let a second holder in, and a
// lock file that is a link is never followed. The kernel releases the flock
// when the holder dies, however it dies, so a lock left by a killed process
// is free to take, never guessed at.
//
// The holder writes who it is (operation, pid, host, since) into
// <stack folder>/lock, so a second command can name it, and a taker can say
// it found and replaced a stale record. The record is written into a file
// the holder creates itself and renames into place (a link or file planted
// at the name is replaced, never written through), and is cleared through
// the holder's own descriptor on Release.
//
// Reading the lock never takes it: Inspect reads the record and asks the
// kernel whether the record's file is held (an open-file-description lock
// the holder keeps on it, queried with F_OFD_GETLK on Linux), so status and
// doctor running in a loop cannot make an Acquire fail. When the record was
// removed or replaced under a live holder, /proc/locks still shows the
// folder's flock, and Inspect reports a holder it cannot name. Elsewhere
// than Linux the record's pid decides, conservatively (another host's
// record counts as live).
package lock

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/bulwark-iac/bulwark/core/nofollow"
	"github.com/bulwark-iac/bulwark/core/storage"
)

// FileName is the name of the holder record in a stack's folder.
const FileName = "lock"

// Lock is a held lock.
type Lock struct {
	dir    *os.File     // the stack folder, flocked (unix) or held open so it cannot be renamed (windows)
	unlock func() error // releases the OS lock tryLock took
	rec    *os.File     // the holder record this holder created, OFD-locked
	// held is what the stack folder locked is (dir's identity, which an
	// open descriptor keeps whatever happens to the path), read once:
	// StillAt compares the path with it before every write.
	held folderID
	// Stale is the record a dead holder left behind, when there was one.
	Stale *storage.Holder
}

// Acquire takes the lock of the stack folder dir at once or fails with a
// *storage.LockedError naming the holder. It never waits. A dir or lock
// file that is a symbolic link is refused (nofollow.ErrRefused).
func Acquire(dir string, h storage.Holder) (*Lock, error) {
	d, err := openDir(dir)
	if err != nil {
		return nil, err
	}
	unlock, ok, err := tryLock(d, dir)
	if err != nil {
		d.Close()
		return nil, fmt.Errorf("lock %s: %w", dir, err)
	}
	if !ok {
		d.Close()
		rec, _ := readHolder(dir)
		return nil, &storage.LockedError{Location: filepath.Join(dir, FileName), Holder: rec}
	}
	l := &Lock{dir: d, unlock: unlock}
	fail := func(err error) (*Lock, error) {
		l.abandon()
		return nil, err
	}
	// The folder locked must still be the one at the path: a folder swapped
	// between the open and the flock would be a lock on nothing.
	if err := samePath(d, dir); err != nil {
		return fail(err)
	}
	if l.held, err = idOf(d); err != nil {
		return fail(fmt.Errorf("lock %s: %w", dir, err))
	}
	if l.Stale, err = readHolder(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fail(fmt.Errorf("lock: %w", err))
	}
	removeTorn(dir)
	if l.rec, err = writeHolder(dir, h); err != nil {
		return fail(err)
	}
	return l, nil
}

// removeTorn removes the records a killed holder was writing and never
// renamed into place. Called with the lock held.
func removeTorn(dir string) {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "."+FileName+".tmp-") {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

// writeHolder writes h into a fresh file of its own, marks that file held,
// and renames it over the record's name.
func writeHolder(dir string, h storage.Holder) (*os.File, error) {
	path := filepath.Join(dir, FileName)
	if err := nofollow.CheckReplaceable(path); err != nil {
		return nil, fmt.Errorf("lock: %w", err)
	}
	f, err := createRecord(dir)
	if err != nil {
		return nil, fmt.Errorf("lock %s: record holder: %w", path, err)
	}
	b, _ := json.Marshal(h)
	_, err = f.Write(append(b, '\n'))
	if err == nil {
		err = markHeld(f)
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, fmt.Errorf("lock %s: record holder: %w", path, err)
	}
	return f, nil
}

// createRecord creates a new holder record file in dir, never opening an
// existing one and never following a link. Through nofollow, the file stays
// renameable while open on every platform (Windows included, where a file
// os.CreateTemp opens cannot be renamed until it is closed).
func createRecord(dir string) (*os.File, error) {
	for range 100 {
		f, err := nofollow.Open(filepath.Join(dir, "."+FileName+".tmp-"+rand.Text()), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		return f, err
	}
	return nil, fmt.Errorf("no free temporary name in %s", dir)
}

// Peek reports who holds the lock in dir, or nil when nobody does.
func Peek(dir string) (*storage.Holder, error) {
	live, _, err := Inspect(dir)
	return live, err
}

// readHolder reads the record in dir without following a link. A missing,
// empty or unparsable record is nil.
func readHolder(dir string) (*storage.Holder, error) {
	f, err := nofollow.Open(filepath.Join(dir, FileName), os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return parseHolder(f), nil
}

func parseHolder(f *os.File) *storage.Holder {
	b, err := io.ReadAll(io.LimitReader(f, 64<<10))
	if err != nil || len(b) == 0 {
		return nil
	}
	var h storage.Holder
	if json.Unmarshal(b, &h) != nil || h.PID == 0 {
		return nil
	}
	return &h
}

// StillAt reports (nil) whether dir names the folder this lock holds: a
// stack folder renamed or replaced while its lock is held leaves the lock
// on the folder that moved, and what is then written by name at dir would
// go to another folder than the journal's.
func (l *Lock) StillAt(dir string) error {
	if l == nil || l.dir == nil {
		return errors.New("lock: not held")
	}
	same, err := l.held.at(dir)
	if err != nil {
		return err
	}
	if !same {
		return fmt.Errorf("%s is no longer the folder this lock holds", dir)
	}
	return nil
}

// Release clears the holder record and releases the lock.
func (l *Lock) Release() error {
	if l == nil || l.dir == nil {
		return nil
	}
	if l.rec != nil {
		// Through the holder's own descriptor: the name may now be
		// something else's.
		_ = l.rec.Truncate(0)
	}
	return l.abandon()
}

// abandon drops the lock and the record's mark without clearing the record,
// as a kill would.
func (l *Lock) abandon() error {
	var err error
	if l.rec != nil {
		err = l.rec.Close()
		l.rec = nil
	}
	if l.dir != nil {
		if uerr := l.unlock(); err == nil {
			err = uerr
		}
		if cerr := l.dir.Close(); err == nil {
			err = cerr
		}
		l.dir = nil
	}
	return err
}

// Inspect reports the lock in dir without taking it: the live holder when
// it is held, else the record a dead holder left (a kill -9 skips Release),
// else nothing. A lock file that is a symbolic link is refused.
func Inspect(dir string) (live, stale *storage.Holder, err error) {
	if err := nofollow.CheckDir(dir); errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	} else if err != nil {
		return nil, nil, fmt.Errorf("lock: %w", err)
	}
	f, err := nofollow.Open(filepath.Join(dir, FileName), os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		if folderHeld(dir) {
			return &storage.Holder{}, nil, nil // held, its record removed
		}
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("lock: %w", err)
	}
	defer f.Close()
	h := parseHolder(f)
	held, err := isHeld(f, h)
	if err != nil {
		return nil, nil, fmt.Errorf("lock %s: %w", f.Name(), err)
	}
	if !held && folderHeld(dir) {
		// Held, and the record at the name is not the holder's (it was
		// replaced): the holder is unknown, the record is not its.
		return &storage.Holder{}, nil, nil
	}
	if !held {
		return nil, h, nil
	}
	if h == nil {
		h = &storage.Holder{}
	}
	return h, nil, nil
}
