package mockprovider

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sync"
	"sync/atomic"
)

// compactAfter is the least number of log records that makes a change
// compact the world (rewrite WorldFile, remove LogFile); past it, a
// compaction comes once the log holds as many records as the world holds
// resources, so a change costs O(1) amortised at any size.
const compactAfter = 1024

// worldStore is the world of one provider process: held in memory, brought
// up to date from the files at the start of every call (other processes
// sharing the world folder change them too: a stat of each file when
// nothing changed, the new log lines when only the log grew, a reload when
// WorldFile was replaced), and every change appended to LogFile and fsynced
// before the call that made it returns. The provider's mu guards every
// field but written and synced (held shared only to look the world up);
// changes also hold the world folder's flock.
type worldStore struct {
	dir  string
	w    *world      // nil: to be loaded
	snap os.FileInfo // the WorldFile w holds (nil: none)
	// logFI is the LogFile w holds the first logOff bytes (logRecs
	// records) of; nil: none.
	logFI   os.FileInfo
	logOff  int64
	logRecs int
	logf    *os.File // LogFile opened for appending by this process

	// written counts the appends to the log; synced how many of them are
	// known durable. Concurrent changes share one fsync (group commit).
	written, synced atomic.Int64
	syncMu          sync.Mutex
}

// refresh brings the world in memory up to date with the files.
func (s *worldStore) refresh() error {
	if s.w == nil {
		return s.reload()
	}
	snap, err := stat(worldPath(s.dir))
	if err != nil {
		return err
	}
	if !sameVersion(snap, s.snap) {
		return s.reload()
	}
	lfi, err := stat(logPath(s.dir))
	switch {
	case err != nil:
		return err
	case lfi == nil && s.logFI == nil:
		return nil
	case lfi == nil, s.logFI != nil && !os.SameFile(lfi, s.logFI), lfi.Size() < s.logOff:
		// Removed or replaced without a new WorldFile: not by a
		// compaction (that replaces WorldFile first).
		return s.reload()
	case lfi.Size() == s.logOff:
		return nil
	}
	return s.readTail()
}

// reload reads the world from the files. WorldFile is checked to be the same
// before and after the log is read, so a compaction in between (which folds
// the log into a new WorldFile and removes it) is never half seen.
func (s *worldStore) reload() error {
	s.w = nil
	for attempt := 0; ; attempt++ {
		b, snap, err := readFile(worldPath(s.dir))
		if err != nil {
			return err
		}
		w := newWorld()
		if snap != nil {
			if w, err = decodeWorld(worldPath(s.dir), b); err != nil {
				return err
			}
		}
		lb, lfi, err := readFile(logPath(s.dir))
		if err != nil {
			return err
		}
		n, recs, err := w.applyLog(logPath(s.dir), lb)
		if err != nil {
			return err
		}
		after, err := stat(worldPath(s.dir))
		if err != nil {
			return err
		}
		if sameVersion(after, snap) {
			s.w, s.snap, s.logFI, s.logOff, s.logRecs = w, snap, lfi, n, recs
			return nil
		}
		if attempt == 100 {
			return fmt.Errorf("mock world %s keeps changing while it is read", s.dir)
		}
	}
}

// readTail applies the log's lines past logOff.
func (s *worldStore) readTail() error {
	f, err := os.Open(logPath(s.dir))
	if errors.Is(err, fs.ErrNotExist) {
		return s.reload()
	}
	if err != nil {
		return fmt.Errorf("read mock world log: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("read mock world log: %w", err)
	}
	if s.logFI != nil && !os.SameFile(fi, s.logFI) || fi.Size() < s.logOff {
		return s.reload()
	}
	b := make([]byte, fi.Size()-s.logOff)
	if _, err := f.ReadAt(b, s.logOff); err != nil {
		if errors.Is(err, io.EOF) {
			return s.reload()
		}
		return fmt.Errorf("read mock world log: %w", err)
	}
	// A compaction between the stat of WorldFile and the open of the log
	// means these lines follow another WorldFile.
	if snap, err := stat(worldPath(s.dir)); err != nil || !sameVersion(snap, s.snap) {
		return s.reload()
	}
	n, recs, err := s.w.applyLog(logPath(s.dir), b)
	if err != nil {
		s.w = nil
		return err
	}
	s.logFI, s.logOff, s.logRecs = fi, s.logOff+n, s.logRecs+recs
	return nil
}

// commit appends the world's pending records to the log (the caller holds
// the flock and refreshed under it) and returns the append's number for
// syncTo; 0 when there was nothing to write. On an error the world in
// memory is dropped, to be read again from the files.
func (s *worldStore) commit() (int64, error) {
	recs := s.w.pending
	s.w.pending = nil
	if len(recs) == 0 {
		return 0, nil
	}
	var buf bytes.Buffer
	for _, r := range recs {
		b, err := json.Marshal(r)
		if err != nil {
			s.w = nil
			return 0, fmt.Errorf("encode mock world change: %w", err)
		}
		buf.Write(b)
		buf.WriteByte('\n')
	}
	if err := s.openLog(); err != nil {
		s.w = nil
		return 0, err
	}
	if _, err := s.logf.Write(buf.Bytes()); err != nil {
		s.w = nil
		return 0, fmt.Errorf("write mock world log: %w", err)
	}
	s.logOff += int64(buf.Len())
	s.logRecs += len(recs)
	mine := s.written.Add(1)
	if s.logRecs >= max(compactAfter, s.w.size()) {
		if err := s.compact(); err != nil {
			s.w = nil
			return 0, err
		}
	}
	return mine, nil
}

// openLog makes logf the log w holds, created when there is none (its
// folder entry made durable), and cuts off a torn last line: an append a
// crash stopped half-way, never acknowledged (the caller holds the flock,
// so no other append is in flight).
func (s *worldStore) openLog() error {
	if s.logf != nil && s.logFI != nil {
		if fi, err := s.logf.Stat(); err == nil && os.SameFile(fi, s.logFI) {
			return s.cutTorn(fi)
		}
	}
	if s.logf != nil {
		s.logf.Close()
		s.logf = nil
	}
	f, err := os.OpenFile(logPath(s.dir), os.O_WRONLY|os.O_APPEND|os.O_CREATE, fileMode)
	if err != nil {
		return fmt.Errorf("open mock world log: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("open mock world log: %w", err)
	}
	if s.logFI != nil && !os.SameFile(fi, s.logFI) {
		f.Close()
		return fmt.Errorf("mock world log %s was replaced while the world was locked", logPath(s.dir))
	}
	if s.logFI == nil {
		if err := syncDir(s.dir); err != nil {
			f.Close()
			return err
		}
	}
	s.logf, s.logFI = f, fi
	return s.cutTorn(fi)
}

func (s *worldStore) cutTorn(fi os.FileInfo) error {
	if fi.Size() > s.logOff {
		if err := s.logf.Truncate(s.logOff); err != nil {
			return fmt.Errorf("repair mock world log: %w", err)
		}
	}
	return nil
}

// compact rewrites WorldFile with the whole world and removes the log (the
// caller holds the flock and refreshed under it). A crash between the two
// leaves a log whose records the new WorldFile already holds: applying them
// again changes nothing.
func (s *worldStore) compact() error {
	b, err := s.w.encode()
	if err != nil {
		return err
	}
	written := s.written.Load()
	if err := writeFileAtomic(worldPath(s.dir), b); err != nil {
		return err
	}
	if err := os.Remove(logPath(s.dir)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove mock world log: %w", err)
	}
	if err := syncDir(s.dir); err != nil {
		return err
	}
	if s.logf != nil {
		s.logf.Close()
		s.logf = nil
	}
	snap, err := stat(worldPath(s.dir))
	if err != nil {
		return err
	}
	s.snap, s.logFI, s.logOff, s.logRecs = snap, nil, 0, 0
	s.markSynced(written)
	return nil
}

// syncTo returns once append number mine is durable: one fsync covers every
// append written before it started, so concurrent changes share it. lock
// and unlock take the provider's mu (shared), under which logf is read.
func (s *worldStore) syncTo(mine int64, lock, unlock func()) error {
	if mine == 0 || s.synced.Load() >= mine {
		return nil
	}
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	if s.synced.Load() >= mine {
		return nil
	}
	lock()
	f, target := s.logf, s.written.Load()
	unlock()
	var err error
	if f != nil {
		err = f.Sync()
	}
	if s.synced.Load() >= mine {
		// A compaction made it durable (and may have closed f).
		return nil
	}
	if f == nil {
		return errors.New("sync mock world log: the log was closed before it was synced")
	}
	if err != nil {
		return fmt.Errorf("sync mock world log: %w", err)
	}
	s.markSynced(target)
	return nil
}

// markSynced records that every append up to n is durable.
func (s *worldStore) markSynced(n int64) {
	for {
		cur := s.synced.Load()
		if cur >= n || s.synced.CompareAndSwap(cur, n) {
			return
		}
	}
}

// close compacts the world when this process left a log, so that after a
// command the world is WorldFile alone; the caller holds the flock.
func (s *worldStore) close() error {
	if err := s.refresh(); err != nil {
		return err
	}
	if s.logFI != nil {
		if err := s.compact(); err != nil {
			return err
		}
	}
	if s.logf != nil {
		s.logf.Close()
		s.logf = nil
	}
	return nil
}
