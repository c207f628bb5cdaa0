package filestore

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/bulwark-iac/bulwark/core/journal"
	"github.com/bulwark-iac/bulwark/core/nofollow"
)

// The journal's segments. The live segment is journal.jsonl, the one file
// appended to. A Checkpoint seals it, once the snapshot covers its changes,
// by renaming it into the journal folder as the next numbered segment
// (journal/00000007.jsonl); a new live segment is then made. Compaction
// writes a base segment (journal/base-00000007.jsonl): the summary lines
// and the kept records of every segment up to the number it bears, which
// it replaces; the segments it replaces are then removed whole. Reading in
// order is reading the base with the highest number, the sealed segments
// numbered past it, then the live one; a base or segment a newer base
// covers is left over from a compaction a crash cut short, is never read,
// and is removed by the next one. So no segment is ever rewritten: a
// crash between any two writes leaves either the old files or the new
// ones in force, each whole (a base is written to a temporary name,
// fsynced and renamed).
const (
	segmentsDir = "journal"
	segmentExt  = ".jsonl"
	opsExt      = ".ops"
	basePrefix  = "base-"
)

func (b *Backend) segPath(n int) string {
	return filepath.Join(b.dir, segmentsDir, fmt.Sprintf("%08d%s", n, segmentExt))
}

// opsPath is sealed segment n's op index: its operation records alone, in
// order, written (atomically) before the segment is sealed, so a reader of
// the operations (a session looking for an unfinished one, a compaction's
// decision) reads a line or two per operation, not every step record of
// the history. It is derived: a segment without one is read whole.
func (b *Backend) opsPath(n int) string {
	return filepath.Join(b.dir, segmentsDir, fmt.Sprintf("%08d%s", n, opsExt))
}

func (b *Backend) basePath(n int) string {
	return filepath.Join(b.dir, segmentsDir, fmt.Sprintf("%s%08d%s", basePrefix, n, segmentExt))
}

// layout is what the journal folder holds.
type layout struct {
	base   int   // the base in force's number (0: none)
	sealed []int // the sealed segments past it, in order
	next   int   // the number the next sealed segment gets
	stale  []string
	bytes  int64 // every file's size
}

func (l layout) same(o layout) bool { return l.base == o.base && slices.Equal(l.sealed, o.sealed) }

func (b *Backend) layout() (layout, error) {
	out := layout{next: 1}
	dir := filepath.Join(b.dir, segmentsDir)
	if err := nofollow.CheckDir(dir); errors.Is(err, fs.ErrNotExist) {
		return out, nil
	} else if err != nil {
		return out, fmt.Errorf("read journal: %w", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return out, fmt.Errorf("read journal: %w", err)
	}
	var bases, sealed, opsFiles []int
	for _, e := range entries {
		name := e.Name()
		if fi, err := e.Info(); err == nil && fi.Mode().IsRegular() {
			out.bytes += fi.Size()
		}
		if stem, ok := strings.CutSuffix(name, opsExt); ok {
			if n, err := strconv.Atoi(stem); err == nil && n > 0 && fmt.Sprintf("%08d", n) == stem {
				opsFiles = append(opsFiles, n)
			}
			continue
		}
		stem, ok := strings.CutSuffix(name, segmentExt)
		if !ok {
			continue
		}
		stem, isBase := strings.CutPrefix(stem, basePrefix)
		n, err := strconv.Atoi(stem)
		if err != nil || n <= 0 || fmt.Sprintf("%08d", n) != stem {
			continue // not a segment's name (a temporary file)
		}
		if isBase {
			bases = append(bases, n)
		} else {
			sealed = append(sealed, n)
		}
	}
	slices.Sort(bases)
	slices.Sort(sealed)
	if len(bases) > 0 {
		out.base = bases[len(bases)-1]
		for _, n := range bases[:len(bases)-1] {
			out.stale = append(out.stale, b.basePath(n))
		}
	}
	for _, n := range sealed {
		if n <= out.base {
			out.stale = append(out.stale, b.segPath(n))
		} else {
			out.sealed = append(out.sealed, n)
		}
	}
	for _, n := range opsFiles {
		if n <= out.base {
			out.stale = append(out.stale, b.opsPath(n))
		}
	}
	out.next = out.base + 1
	if len(out.sealed) > 0 {
		out.next = out.sealed[len(out.sealed)-1] + 1
	}
	return out, nil
}

// segment is one open segment file.
type segment struct {
	path string
	f    *os.File
	n    int      // its number (0: the live one)
	ops  *os.File // its op index, if it has one (sealed segments)
}

func openSegment(path string) (*segment, error) {
	f, err := nofollow.Open(path, os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read journal: %w", err)
	}
	return &segment{path: path, f: f}, nil
}

func (s *segment) Close() error {
	if s.ops != nil {
		s.ops.Close()
	}
	return s.f.Close()
}

// opsOnly reports whether kinds are all the op index's (operation and
// summary records).
func opsOnly(kinds []string) bool {
	for _, k := range kinds {
		if k != journal.KindOp && k != journal.KindSummary {
			return false
		}
	}
	return len(kinds) > 0
}

// eachOf is eachWhole over sg, or over its op index when kinds are the
// index's and it has one.
func eachOf(sg *segment, o journal.Options, fn func(r *journal.Record, end int64) error) ([]*journal.CorruptError, error) {
	if sg.ops != nil && opsOnly(o.Kinds) {
		return journal.EachIn(sg.ops, sg.path+" (its op index "+filepath.Base(sg.ops.Name())+")", o, fn)
	}
	return eachWhole(sg, o, fn)
}

type segments struct{ files []*segment }

func (s *segments) close() {
	for _, f := range s.files {
		f.Close()
	}
}

// openSegments opens the segments in reading order, with the live one
// last when live is set. A reader without the lock may race a Checkpoint sealing or
// compacting: the files are all opened, then the folder listed again, and
// when it changed meanwhile all is opened again; an open file reads whole
// whatever is renamed or removed after.
func (b *Backend) openSegments(live bool) (*segments, error) {
	for range 10 {
		l1, err := b.layout()
		if err != nil {
			return nil, err
		}
		out := &segments{}
		paths := []string{}
		nums := []int{}
		if l1.base > 0 {
			paths, nums = append(paths, b.basePath(l1.base)), append(nums, l1.base)
		}
		for _, n := range l1.sealed {
			paths, nums = append(paths, b.segPath(n)), append(nums, n)
		}
		if live {
			paths, nums = append(paths, b.path(journalFile)), append(nums, 0)
		}
		gone := false
		for i, p := range paths {
			sg, err := openSegment(p)
			if err != nil {
				out.close()
				return nil, err
			}
			if sg == nil {
				if nums[i] != 0 {
					gone = true // removed by a compaction meanwhile
				}
				continue
			}
			sg.n = nums[i]
			if sg.n != 0 && p == b.segPath(sg.n) {
				if f, err := nofollow.Open(b.opsPath(sg.n), os.O_RDONLY, 0); err == nil {
					sg.ops = f
				}
			}
			out.files = append(out.files, sg)
		}
		l2, err := b.layout()
		if err != nil {
			out.close()
			return nil, err
		}
		if !gone && l1.same(l2) {
			return out, nil
		}
		out.close()
	}
	return nil, fmt.Errorf("read journal %s: it kept changing while it was read (another bulwark compacting it): try again", filepath.Join(b.dir, segmentsDir))
}
