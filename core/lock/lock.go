// Package lock is the exclusive per-stack lock every mutating command holds.
//
// It is an flock(2) on <stack folder>/lock (github.com/gofrs/flock): the
// kernel releases it when the holder dies, however it dies, so a lock left by
// a killed process is free to take, never guessed at. The holder writes who it
// is (operation, pid, host, since) into the file, so a second command can name
// it, and a taker can say it found and replaced a stale record.
package lock

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/gofrs/flock"
)

// FileName is the lock's name in a stack's folder.
const FileName = "lock"

// Holder says who holds, or held, a lock.
type Holder struct {
	Op    string    `json:"op"`
	PID   int       `json:"pid"`
	Host  string    `json:"host"`
	Since time.Time `json:"since"`
}

func (h Holder) String() string {
	return fmt.Sprintf("operation %s (pid %d on %s, since %s)", h.Op, h.PID, h.Host, h.Since.Format(time.RFC3339))
}

// LockedError is returned when another process holds the lock.
type LockedError struct {
	Path   string
	Holder *Holder // nil when the holder has not written its record yet
}

func (e *LockedError) Error() string {
	if e.Holder == nil {
		return fmt.Sprintf("stack is locked (%s) by another process", e.Path)
	}
	return fmt.Sprintf("stack is locked by %s", e.Holder)
}

// ErrLocked matches any LockedError with errors.Is.
var ErrLocked = errors.New("stack is locked")

func (e *LockedError) Is(target error) bool { return target == ErrLocked }

// Lock is a held lock.
type Lock struct {
	fl *flock.Flock
	// Stale is the record a dead holder left behind, when there was one.
	Stale *Holder
}

// Acquire takes the lock in dir at once or fails with a *LockedError naming
// the holder. It never waits.
func Acquire(dir string, h Holder) (*Lock, error) {
	path := filepath.Join(dir, FileName)
	fl := flock.New(path, flock.SetFlag(os.O_CREATE|os.O_RDWR), flock.SetPermissions(0o600))
	ok, err := fl.TryLock()
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if !ok {
		return nil, &LockedError{Path: path, Holder: readHolder(path)}
	}
	l := &Lock{fl: fl, Stale: readHolder(path)}
	b, _ := json.Marshal(h)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0o600)
	if err == nil {
		_, err = f.Write(append(b, '\n'))
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		fl.Unlock()
		return nil, fmt.Errorf("lock %s: record holder: %w", path, err)
	}
	return l, nil
}

// Peek reports who holds the lock in dir, or nil when nobody does.
func Peek(dir string) (*Holder, error) {
	live, _, err := Inspect(dir)
	return live, err
}

func readHolder(path string) *Holder {
	b, err := os.ReadFile(path)
	if err != nil || len(b) == 0 {
		return nil
	}
	var h Holder
	if json.Unmarshal(b, &h) != nil || h.PID == 0 {
		return nil
	}
	return &h
}

// Release clears the holder record and releases the lock.
func (l *Lock) Release() error {
	if l == nil || l.fl == nil {
		return nil
	}
	_ = os.Truncate(l.fl.Path(), 0)
	return l.fl.Unlock()
}

// Inspect reports the lock in dir: the live holder when it is held, else the
// record a dead holder left (a kill -9 skips Release), else nothing.
func Inspect(dir string) (live, stale *Holder, err error) {
	path := filepath.Join(dir, FileName)
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return nil, nil, nil
	}
	fl := flock.New(path, flock.SetFlag(os.O_RDWR), flock.SetPermissions(0o600))
	ok, err := fl.TryLock()
	if err != nil {
		return nil, nil, fmt.Errorf("lock %s: %w", path, err)
	}
	h := readHolder(path)
	if ok {
		fl.Unlock()
		return nil, h, nil
	}
	if h == nil {
		h = &Holder{}
	}
	return h, nil, nil
}
