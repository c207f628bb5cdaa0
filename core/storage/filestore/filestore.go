// Package filestore is the file backend of core/storage, the default: a
// stack's durable home is one folder (mode 0700) of the machine that runs
// bulwark.
//
//	<stack folder>/journal.jsonl   the live journal segment, and the write-ahead log of the state
//	<stack folder>/journal/N.jsonl  sealed segments (journal/base-N.jsonl: the compacted history up to N; journal/N.ops: N's op index)
//	<stack folder>/state.json      a snapshot of the state (written at Checkpoint)
//	<stack folder>/revisions/N.json  revision N's body (spec text, variables), sealed
//	<stack folder>/backups/state-OP.json  a copy of the state before update OP
//	<stack folder>/lock            who holds the lock (see core/lock)
//
// A Commit is one append of its records to the journal and one fsync,
// shared with concurrent commits (the journal's group commit): the state
// change rides on the commit's last record (Record.Change, its sensitive
// values sealed, with the serial it makes), so what a step writes is what it
// changed, never the whole state. Load reads the snapshot and replays the
// changes the live segment holds past its serial, streaming it. Checkpoint
// writes the snapshot (temp file, fsync, rename: a crash leaves the old one
// or the new one), then seals the live segment and compacts by rotating
// segments (see segmentsDir): no segment is ever rewritten.
//
// The records of one commit are written in one write; each says how many
// of its commit follow it (Record.Rest), so a commit torn by a power cut (a
// tail that ends inside it) is cut off whole, as a torn line is: Load after
// any crash returns the state as of an acknowledged commit, or of the one in
// flight, never a torn one.
//
// Nothing here follows a symbolic link (the stack folder, the snapshot, the
// journal, the lock record, a backup or a revision that is one is refused),
// and everything is written with mode 0600 by renaming a new file into place
// or appending through a descriptor opened without following links. The
// lock is core/lock's flock of the folder itself.
//
// A stack folder written before this package (a state.json whose revisions
// hold their spec text, a journal without changes) loads as it is; its
// first Checkpoint moves the revisions' texts to their own files.
package filestore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/bulwark-iac/bulwark/core/journal"
	"github.com/bulwark-iac/bulwark/core/lock"
	"github.com/bulwark-iac/bulwark/core/nofollow"
	"github.com/bulwark-iac/bulwark/core/secrets"
	"github.com/bulwark-iac/bulwark/core/state"
	"github.com/bulwark-iac/bulwark/core/storage"
	"github.com/bulwark-iac/bulwark/core/value"
	"github.com/bulwark-iac/bulwark/sdk/atomicfile"
)

// The names in a stack folder; nothing outside this package knows them.
const (
	stateFile    = state.FileName
	journalFile  = journal.FileName
	revisionsDir = "revisions"
	backupsDir   = "backups"
	backupPrefix = "state-"
	backupSuffix = ".json"
	// movedFile holds the URL `bulwark state migrate` moved the stack to.
	movedFile = "moved"
)

// Open is the storage.Opener of file URLs: file:///path names the state
// folder (the folder of stack folders) and the stack's own folder is
// opts.Stack in it. A bare path is taken as a file URL's path.
func Open(_ context.Context, rawURL string, opts storage.Options) (storage.Backend, error) {
	root := rawURL
	if strings.Contains(rawURL, "://") {
		u, err := url.Parse(rawURL)
		if err != nil {
			return nil, fmt.Errorf("state %s: %w", rawURL, err)
		}
		if u.Scheme != "file" {
			return nil, fmt.Errorf("state %s: the file backend opens file:// URLs, not %s://", rawURL, u.Scheme)
		}
		if u.Host != "" && u.Host != "localhost" {
			return nil, fmt.Errorf("state %s: a file URL names a folder of this machine (file:///path)", rawURL)
		}
		root = u.Path
	}
	if root == "" {
		return nil, fmt.Errorf("state %q: no folder", rawURL)
	}
	if opts.Stack == "" || strings.ContainsAny(opts.Stack, `/\`) || opts.Stack == "." || opts.Stack == ".." {
		return nil, fmt.Errorf("state %s: bad stack name %q", rawURL, opts.Stack)
	}
	return New(filepath.Join(root, opts.Stack), opts), nil
}

// New returns the backend of the stack folder dir. Nothing is made on disk
// before the first Lock.
func New(dir string, opts storage.Options) *Backend {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Backend{dir: dir, opts: opts}
}

// Backend is one stack folder. It is safe for concurrent use.
type Backend struct {
	dir  string
	opts storage.Options

	mu sync.Mutex
	w  *writer // the lock this Backend holds, if any
}

var _ storage.Backend = (*Backend)(nil)

// Dir is the stack folder.
func (b *Backend) Dir() string { return b.dir }

func (b *Backend) path(name string) string { return filepath.Join(b.dir, name) }

// Location is the stack folder as a file URL.
func (b *Backend) Location() string {
	abs, err := filepath.Abs(b.dir)
	if err != nil {
		abs = b.dir
	}
	return "file://" + filepath.ToSlash(abs)
}

// Close releases nothing a Writer holds; it is here for the interface.
func (b *Backend) Close() error { return nil }

// loaded is what load read: the state (values opened), the journal's whole
// commits, and where the journal's last whole commit ends.
type loaded struct {
	st      *state.State
	records int              // records of whole commits in the live segment
	ops     []journal.Record // the live segment's operation records
	bad     []*journal.CorruptError
	end     int64 // offset just past the live segment's last whole commit
	torn    bool  // the live segment's tail holds a commit cut short
	disk    int64 // the snapshot's serial (0: none)
	clear   bool  // the snapshot holds in clear what sealing seals
	legacy  bool  // the snapshot's revisions hold their spec texts
	lineage string
}

func (b *Backend) emptyState() *state.State {
	return &state.State{Version: state.Version, Stack: b.opts.Stack, Resources: map[string]*state.Resource{}}
}

// load reads the snapshot and replays the journal over it.
func (b *Backend) load() (*loaded, error) {
	out := &loaded{}
	if err := nofollow.CheckDir(b.dir); errors.Is(err, fs.ErrNotExist) {
		out.st = b.emptyState()
		return out, nil
	} else if err != nil {
		return nil, fmt.Errorf("load state: %w", err)
	}
	if err := b.moved(); err != nil {
		return nil, err
	}
	// The live segment is opened before the snapshot is read: a Checkpoint
	// that seals it meanwhile wrote a snapshot covering it first, so the
	// pair read is consistent whichever snapshot is found.
	live, err := openSegment(b.path(journalFile))
	if err != nil {
		return nil, err
	}
	if live != nil {
		defer live.Close()
	}
	st, err := state.Load(b.path(stateFile))
	var levelErr *state.LevelError
	switch {
	case errors.Is(err, fs.ErrNotExist):
		st = b.emptyState()
	case errors.Is(err, state.ErrCorrupt) && !errors.As(err, &levelErr):
		// Empty, cut short, or not what its checksum says (a disk that
		// lost the last write, a copy that stopped, an edit): say how to
		// repair it. Without the snapshot the state is empty, and the next
		// plan finds the stack's resources by the keys its journal holds
		// (a lost state is a case the ownership checks already handle).
		snap := b.path(stateFile)
		return nil, fmt.Errorf("%w: to repair it, restore the newest good copy from %s (one is written before every update), or move the damaged file aside (mv %s %s.damaged) and run `bulwark plan`: bulwark then finds the stack's resources by the keys its journal holds, and the next apply records them again",
			err, b.path(backupsDir), snap, snap)
	case err != nil:
		return nil, err
	default:
		out.disk = st.Serial
	}
	if st.Stack != b.opts.Stack {
		return nil, &storage.LineageError{What: "state", Location: b.path(stateFile), Want: "of stack " + strconv.Quote(b.opts.Stack), Found: "of stack " + strconv.Quote(st.Stack)}
	}
	if out.clear, err = state.OpenState(st, b.opts.Sealing); err != nil {
		return nil, fmt.Errorf("load state %s: %w", b.path(stateFile), err)
	}
	for i := range st.Revisions {
		rev := &st.Revisions[i]
		if rev.Spec == "" {
			continue
		}
		out.legacy = true
		if rev.Digest == "" && !secrets.IsSealed(rev.Spec) {
			rev.Digest = state.SpecDigest(rev.Spec)
		}
		rev.Spec = "" // its body is Revision(n)'s
	}
	// Only the live segment can hold changes past the snapshot: a segment
	// is sealed only once a snapshot covering it is durable (Checkpoint).
	if err := b.replay(live, st, out); err != nil {
		return nil, err
	}
	where := b.path(journalFile)
	if out.lineage == "" {
		// The live segment is empty (or of records before lineages): the
		// newest sealed segment says whose the journal is.
		if where, out.lineage, err = b.sealedLineage(); err != nil {
			return nil, err
		}
	}
	if st.Lineage != "" && out.lineage != "" && out.lineage != st.Lineage {
		return nil, &storage.LineageError{What: "journal", Location: where, Want: st.Lineage, Found: out.lineage}
	}
	if st.Lineage != "" {
		out.lineage = st.Lineage
	}
	if err := state.CheckLevels(b.path(stateFile), st); err != nil {
		return nil, err
	}
	out.st = st
	return out, nil
}

// replay applies to st the changes of the live segment's whole commits
// past st's serial, streaming it, and learns the segment's lineage, where
// its last whole commit ends and whether a commit is cut short at its tail.
func (b *Backend) replay(live *segment, st *state.State, out *loaded) error {
	if live == nil {
		return nil
	}
	held := 0 // records read of a commit whose last record is not yet read
	bad, err := journal.EachIn(live.f, live.path, journal.Options{}, func(r *journal.Record, end int64) error {
		switch {
		case r.Lineage == "":
		case out.lineage == "":
			out.lineage = r.Lineage
		case r.Lineage != out.lineage:
			return &storage.LineageError{What: "journal", Location: live.path, Want: out.lineage, Found: r.Lineage}
		}
		if r.Rest > 0 {
			held++
			return nil
		}
		out.records += held + 1
		held = 0
		out.end = end
		if r.Kind == journal.KindOp || r.Kind == journal.KindSummary {
			op := *r
			op.Rest, op.Serial, op.Change = 0, 0, nil
			out.ops = append(out.ops, op)
		}
		// Replay what the journal holds past the snapshot, in order; a gap
		// in the serials is a lost change, never skipped over.
		if r.Serial <= st.Serial || len(r.Change) == 0 {
			return nil
		}
		if r.Serial != st.Serial+1 {
			return fmt.Errorf("load state %s: %w: the journal %s holds the change to serial %d after serial %d (a change is missing): restore the newest good copy from %s",
				b.dir, state.ErrCorrupt, live.path, r.Serial, st.Serial, b.path(backupsDir))
		}
		// A change carries its checksum (one an older bulwark wrote has
		// none, and is taken as it is).
		rec, _, err := storage.DiscloseLegacy(r.Change, storage.Where{Backend: b.Location(), Stack: b.opts.Stack,
			Record:  fmt.Sprintf("the state change of journal record %s (%s)", r.ID, live.path),
			Restore: "the backups in " + b.path(backupsDir) + " (written before every update)"})
		if err != nil {
			return err
		}
		var ch storage.Change
		if err := json.Unmarshal(rec, &ch); err != nil {
			return fmt.Errorf("load state %s: %w: the change of journal record %s: %v", b.dir, state.ErrCorrupt, r.ID, err)
		}
		if m := ch.Meta; m != nil {
			extra := &state.State{Revisions: m.Revisions, Outputs: m.Outputs}
			if _, err := state.OpenState(extra, b.opts.Sealing); err != nil {
				return fmt.Errorf("load state %s: %w", b.dir, err)
			}
		}
		for _, p := range ch.Put {
			if p == nil || p.Name == "" {
				return fmt.Errorf("load state %s: %w: journal record %s puts a resource with no name", b.dir, state.ErrCorrupt, r.ID)
			}
			if err := state.OpenResource(p, b.opts.Sealing); err != nil {
				return fmt.Errorf("load state %s: %w", b.dir, err)
			}
		}
		ch.Apply(st)
		return nil
	})
	out.bad = bad
	out.torn = held > 0
	return err
}

// sealedLineage is the lineage the newest sealed segment's (or the base's)
// first record with one names, and that segment ("" when none has one).
// It reads a line or two, not the segment.
func (b *Backend) sealedLineage() (where, lineage string, err error) {
	lay, err := b.layout()
	if err != nil {
		return "", "", err
	}
	var paths []string
	for i := len(lay.sealed) - 1; i >= 0; i-- {
		paths = append(paths, b.segPath(lay.sealed[i]))
	}
	if lay.base > 0 {
		paths = append(paths, b.basePath(lay.base))
	}
	found := errors.New("found")
	for _, p := range paths {
		_, err := journal.Each(p, journal.Options{NoChange: true}, func(r *journal.Record, _ int64) error {
			if r.Lineage == "" {
				return nil
			}
			lineage = r.Lineage
			return found
		})
		if err == found {
			return p, lineage, nil
		}
		if err != nil {
			return "", "", err
		}
	}
	return "", "", nil
}

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

// Load returns the state as of the last acknowledged Commit. While this
// Backend holds the lock it is the writer's (a copy).
func (b *Backend) Load(ctx context.Context) (*state.State, error) {
	b.mu.Lock()
	w := b.w
	b.mu.Unlock()
	if w != nil {
		return w.current(), nil
	}
	l, err := b.load()
	if err != nil {
		return nil, err
	}
	if l.st.Lineage == "" {
		l.st.Lineage = l.lineage
	}
	return l.st, nil
}

// Journal returns the journal's records (of whole commits), oldest first,
// and its bad lines: every segment's, in order. Their changes are not
// decoded (they are the state's, which Load returns).
func (b *Backend) Journal(ctx context.Context) ([]journal.Record, []*journal.CorruptError, error) {
	var recs []journal.Record
	bad, err := b.ScanJournal(ctx, nil, func(r journal.Record) error {
		recs = append(recs, r)
		return nil
	})
	return recs, bad, err
}

// ScanJournal calls fn with each record of a whole commit whose kind is
// one of kinds (every kind but the state's when kinds is empty), oldest
// first, reading the segments a buffer at a time: what it holds is one
// commit, never the journal (storage.JournalScanner). Lines that cannot be
// of kinds are skipped undecoded (and unchecked).
func (b *Backend) ScanJournal(ctx context.Context, kinds []string, fn func(journal.Record) error) ([]*journal.CorruptError, error) {
	if err := nofollow.CheckDir(b.dir); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("read journal: %w", err)
	}
	segs, err := b.openSegments(true)
	if err != nil {
		return nil, err
	}
	defer segs.close()
	var bad []*journal.CorruptError
	for _, sg := range segs.files {
		sb, err := eachOf(sg, journal.Options{Kinds: kinds, NoChange: true}, func(r *journal.Record, _ int64) error {
			if r.Kind == journal.KindState {
				return nil
			}
			r.Rest, r.Serial, r.Change = 0, 0, nil
			return fn(*r)
		})
		bad = append(bad, sb...)
		if err != nil {
			return bad, err
		}
	}
	return bad, nil
}

// eachWhole is journal.EachIn over one segment that holds back the records
// of a commit until its last one (Rest 0) is read, and calls fn with them
// then: a commit cut short at the segment's end is never seen. It returns
// the segment's bad lines. With o.Kinds the lines of other kinds are not
// read, so a commit's end cannot be told: records are passed on as read
// (a commit torn by a power cut is cut off by the next Lock, before any
// command that writes reads the journal).
func eachWhole(sg *segment, o journal.Options, fn func(r *journal.Record, end int64) error) ([]*journal.CorruptError, error) {
	var held []journal.Record
	var ends []int64
	return journal.EachIn(sg.f, sg.path, o, func(r *journal.Record, end int64) error {
		if len(o.Kinds) > 0 {
			return fn(r, end)
		}
		if r.Rest > 0 || len(held) > 0 {
			held = append(held, *r)
			ends = append(ends, end)
			if r.Rest > 0 {
				return nil
			}
			for i := range held {
				if err := fn(&held[i], ends[i]); err != nil {
					return err
				}
			}
			held, ends = held[:0], ends[:0]
			return nil
		}
		return fn(r, end)
	})
}

// Holder reports who holds the lock now, without taking it.
func (b *Backend) Holder(ctx context.Context) (*storage.Holder, error) {
	if err := nofollow.CheckDir(b.dir); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	h, err := lock.Peek(b.dir)
	if err != nil || h == nil {
		return nil, err
	}
	return h, nil
}

// Inspect is Holder that also reports the record a dead holder left.
func (b *Backend) Inspect(ctx context.Context) (live, stale *storage.Holder, err error) {
	l, s, err := lock.Inspect(b.dir)
	if err != nil {
		return nil, nil, err
	}
	return l, s, nil
}

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
		return nil, fmt.Errorf("revision %d: its spec is sealed and no key opens it", n)
	}
	return &storage.RevisionBody{Spec: rev.Spec}, nil
}

// open opens a sealed spec text and the sealed sensitive variables.
func (b *Backend) open(spec *string, vars map[string]any, sensitive []string) error {
	sl := b.opts.Sealing
	if secrets.IsSealed(*spec) {
		if sl.Sealer == nil {
			return errors.New("its spec is sealed and no key opens it")
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

// Stats are the folder's sizes and counts.
func (b *Backend) Stats(ctx context.Context) (storage.Stats, error) {
	var s storage.Stats
	size := func(p string) int64 {
		if fi, err := os.Lstat(p); err == nil && fi.Mode().IsRegular() {
			return fi.Size()
		}
		return 0
	}
	s.StateBytes = size(b.path(stateFile))
	s.JournalBytes = size(b.path(journalFile))
	lay, err := b.layout()
	if err != nil {
		return s, err
	}
	s.JournalBytes += lay.bytes
	if entries, err := os.ReadDir(filepath.Join(b.dir, revisionsDir)); err == nil {
		for _, e := range entries {
			s.RevisionBytes += size(filepath.Join(b.dir, revisionsDir, e.Name()))
		}
	}
	backups, err := b.Backups(ctx)
	if err != nil {
		return s, err
	}
	for _, bk := range backups {
		s.Backups++
		s.BackupBytes += bk.Bytes
	}
	st, err := b.Load(ctx)
	if err != nil {
		return s, err
	}
	s.Resources, s.Revisions = len(st.Resources), len(st.Revisions)
	whole := map[string]bool{}
	if _, err := b.ScanJournal(ctx, nil, func(r journal.Record) error {
		s.JournalRecords++
		if r.Kind == journal.KindSummary {
			s.SummarizedOps += max(r.Repeated, 1) // a collapsed line counts its operations
		} else {
			whole[r.Op] = true
		}
		return nil
	}); err != nil {
		return s, err
	}
	s.WholeOps = len(whole)
	return s, nil
}

// Lock takes the stack folder's lock (making the folder, mode 0700, if it
// is missing), loads the state and opens the journal for appending.
func (b *Backend) Lock(ctx context.Context, h storage.Holder) (storage.Writer, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.w != nil {
		return nil, &storage.LockedError{Location: b.Location(), Holder: &b.w.holder}
	}
	_, rootErr := os.Lstat(filepath.Dir(b.dir))
	created, err := nofollow.Mkdir(b.dir, 0o700)
	if err != nil {
		return nil, fmt.Errorf("state folder: %w", err)
	}
	if h.Since.IsZero() {
		h.Since = b.opts.Now().UTC()
	}
	lk, err := lock.Acquire(b.dir, lock.Holder{Op: h.Op, PID: h.PID, Host: h.Host, Since: h.Since})
	var le *lock.LockedError
	if errors.As(err, &le) {
		h := le.Holder
		// A holder that has just taken the flock writes its record right
		// after: wait for it a little, so the refusal can name it.
		for deadline := time.Now().Add(time.Second); (h == nil || h.PID == 0) && time.Now().Before(deadline); {
			time.Sleep(5 * time.Millisecond)
			if p, perr := lock.Peek(b.dir); perr == nil && p != nil {
				h = p
			} else if perr == nil {
				break // released meanwhile: the refusal stands, unnamed
			}
		}
		if h != nil && h.PID == 0 {
			h = nil
		}
		return nil, &storage.LockedError{Location: b.Location(), Holder: h}
	}
	if err != nil {
		return nil, err
	}
	w := &writer{b: b, lk: lk, holder: h, lost: make(chan struct{}), created: created,
		createdRoot: created && errors.Is(rootErr, fs.ErrNotExist)}
	fail := func(err error) (storage.Writer, error) {
		lk.Release()
		return nil, err
	}
	l, err := b.load()
	if err != nil {
		return fail(err)
	}
	if len(l.bad) > 0 {
		return fail(l.bad[0])
	}
	if l.torn {
		// A commit a crash cut short was never acknowledged: it goes,
		// as a torn line does, before anything is appended after it.
		if err := truncate(b.path(journalFile), l.end); err != nil {
			return fail(fmt.Errorf("open journal %s: %w", b.path(journalFile), err))
		}
	}
	w.st, w.disk, w.reseal, w.migrate = l.st, l.disk, l.clear && b.opts.Sealing.Sealer != nil, l.legacy
	w.liveOps = l.ops
	w.lineage = l.lineage
	w.empty = l.st.Serial == 0 && l.records == 0 && l.lineage == ""
	if w.lineage == "" {
		w.lineage = b.opts.Lineage // state migrate's destination: its source's
	}
	if w.lineage == "" {
		w.lineage = ulid.Make().String()
	}
	w.st.Lineage = w.lineage
	if w.jr, err = journal.Open(b.path(journalFile), b.opts.Now); err != nil {
		return fail(err)
	}
	if l.lineage == "" && l.records > 0 {
		// A journal of records without a lineage (written before them):
		// the snapshot learns the new one at the next Checkpoint.
		w.migrate = true
	}
	b.w = w
	return w, nil
}

func truncate(path string, end int64) error {
	f, err := nofollow.Open(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Truncate(end); err != nil {
		return err
	}
	return f.Sync()
}

// writer is a held lock.
type writer struct {
	b      *Backend
	lk     *lock.Lock
	holder storage.Holder
	lost   chan struct{}
	jr     *journal.Journal
	// created: Lock made the stack folder (and createdRoot its parent):
	// Release removes them when nothing was ever written in them.
	created, createdRoot bool

	// ck is held shared by commits and exclusively by Checkpoint, which
	// reopens the journal.
	ck sync.RWMutex

	mu      sync.Mutex // guards what follows
	st      *state.State
	lineage string
	disk    int64 // serial of the snapshot on disk
	reseal  bool  // the snapshot (and maybe backups) hold in clear what is sealed
	migrate bool  // the snapshot must be rewritten (revision texts, lineage)
	empty   bool  // nothing was ever committed: the first commit may name the lineage
	// liveOps are the operation records of the live segment, in order:
	// its op index once sealed (see opsPath).
	liveOps []journal.Record
	wrote   bool // something was written under this lock
	broken  error
	done    bool
	// deferred are the lines of Deferred Commits not written yet: the
	// next waited Commit writes them before its own, in the same write
	// and fsync (Checkpoint and Release write them too). Held in memory,
	// not written at once without an fsync: a crash loses them exactly as
	// the storage contract allows, which is what the crash tests then
	// exercise (a kill -9 keeps what the page cache has).
	deferred []byte

	// changeBufs holds the buffers Commit encodes changes into (*[]byte).
	changeBufs sync.Pool
}

var _ storage.Writer = (*writer)(nil)

func (w *writer) usable() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case w.done:
		return fmt.Errorf("%w: it was released", storage.ErrLost)
	case w.broken != nil:
		return w.broken
	}
	return w.inPlace()
}

// inPlace fails when the stack folder was renamed or replaced while the
// lock is held (w.mu is held): the journal (written through its
// descriptor) went with the folder, and what is written by name (the
// snapshot, revisions, backups, the next segment) would make a second
// folder at the old path, of mixed lineage, that another command could
// lock and use at once. The lock is then lost: nothing more is written,
// anywhere, and Lost closes so the operation stops before its next write,
// left for resume in the folder that moved.
func (w *writer) inPlace() error {
	err := w.lk.StillAt(w.b.dir)
	if err == nil {
		return nil
	}
	w.broken = fmt.Errorf("%w: the stack folder %s was moved or replaced while this command held its lock (%v): nothing more was written, there or anywhere. Find where the folder went (it holds this operation's journal), move it back to %s, then run `bulwark resume`",
		storage.ErrLost, w.b.dir, err, w.b.dir)
	select {
	case <-w.lost:
	default:
		close(w.lost)
	}
	return w.broken
}

func (w *writer) fail(err error) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.broken == nil {
		w.broken = err
	}
	return err
}

// current returns a copy of the state that shares its resources with the
// writer's (a resource is never changed in place: a commit puts a new one),
// so the session's view and the writer's are one state in memory, not two.
func (w *writer) current() *state.State {
	w.mu.Lock()
	defer w.mu.Unlock()
	c := *w.st
	c.Resources = maps.Clone(w.st.Resources)
	if c.Resources == nil {
		c.Resources = map[string]*state.Resource{}
	}
	c.Forgotten = slices.Clone(w.st.Forgotten)
	c.Interventions = slices.Clone(w.st.Interventions)
	c.Revisions = slices.Clone(w.st.Revisions)
	c.Outputs = maps.Clone(w.st.Outputs)
	return &c
}

func (w *writer) afterWrite() {
	if w.b.opts.AfterWrite != nil {
		w.b.opts.AfterWrite()
	}
}

// Commit appends c's records, the last carrying c's change, in one write,
// and returns once they are durable.
func (w *writer) Commit(ctx context.Context, c storage.Commit) (int64, error) {
	if err := w.usable(); err != nil {
		return 0, err
	}
	if c.Empty() {
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.st.Serial, nil
	}
	if c.Deferred && c.Change.Empty() {
		w.mu.Lock()
		defer w.mu.Unlock()
		lines, err := w.encode(w.deferred, c.Records, nil, 0)
		if err != nil {
			return 0, err
		}
		w.deferred = lines
		return w.st.Serial, nil
	}
	// The change is sealed and encoded before the journal's lock is
	// taken: it depends on nothing another commit changes, and concurrent
	// steps' commits then serialize only on what must be in file order.
	var raw []byte
	if !c.Change.Empty() {
		disk, err := w.seal(c.Change)
		if err != nil {
			return 0, err
		}
		// Encoded into a buffer of the pool: encode copies it into the
		// commit's lines.
		buf, _ := w.changeBufs.Get().(*[]byte)
		if buf == nil {
			buf = new([]byte)
		}
		defer w.changeBufs.Put(buf)
		if *buf, err = appendChange((*buf)[:0], disk); err != nil {
			return 0, fmt.Errorf("commit: encode the change: %w", err)
		}
		// With its checksum (storage.AppendEnclosed), checked when Load
		// replays it: a change edited by hand in the journal is refused,
		// as an edited state.json is.
		raw = storage.AppendEnclosed(make([]byte, 0, len(*buf)+96), *buf)
	}
	w.ck.RLock()
	defer w.ck.RUnlock()
	var serial int64
	var sensitiveGrew bool
	err := w.jr.AppendLines(func(dst []byte) ([]byte, error) {
		w.mu.Lock()
		defer w.mu.Unlock()
		serial = w.st.Serial
		if raw != nil {
			sensitiveGrew = w.sensitiveGrew(c.Change)
			serial++
		}
		if m := c.Change.Meta; m != nil && m.Lineage != "" && m.Lineage != w.lineage && w.empty {
			// A stack copied into this empty folder (state migrate) keeps
			// its lineage: the records say the one its state does, not
			// the one Lock minted for a new stack.
			w.lineage = m.Lineage
		}
		w.empty = false
		recs := c.Records
		if len(recs) == 0 {
			recs = []journal.Record{{Kind: journal.KindState, Status: journal.StepOK}}
		}
		// The deferred records come first: the file keeps the order they
		// were committed in, and this write's fsync makes them durable.
		lines, err := w.encode(append(dst, w.deferred...), recs, raw, serial)
		if err != nil {
			return nil, err
		}
		w.deferred = w.deferred[:0] // its buffer holds the next ones
		if raw != nil {
			c.Change.Apply(w.st)
		}
		w.wrote = true
		if sensitiveGrew {
			w.reseal = true
		}
		return lines, nil
	})
	if err != nil {
		if w.jr.Broken() != nil {
			return 0, w.fail(err)
		}
		return 0, err
	}
	w.afterWrite()
	return serial, nil
}

// encode stamps recs (id, time, lineage) in place and appends their lines
// to b, one commit: each line says how many of the commit follow it
// (Rest), and the last carries the change raw (the state's serial after
// it), if any. On an error b is not to be used. w.mu is held.
func (w *writer) encode(b []byte, recs []journal.Record, raw []byte, serial int64) ([]byte, error) {
	now := w.jr.Now()
	b = slices.Grow(b, 384*len(recs)+len(raw))
	for i := range recs {
		r := &recs[i]
		if r.ID == "" {
			r.ID = ulid.Make().String()
		}
		if r.Time.IsZero() {
			r.Time = now
		}
		r.Lineage = w.lineage
		r.Rest = len(recs) - 1 - i
		withChange := i == len(recs)-1 && raw != nil
		if withChange {
			r.Serial, r.Change = serial, nil
		}
		line, err := r.AppendJSON(b)
		r.Rest, r.Serial, r.Change = 0, 0, nil
		if err != nil {
			return nil, fmt.Errorf("commit: encode: %w", err)
		}
		if withChange {
			// "change" is a record's last field, and raw is what
			// AppendJSON would make of it (appendChange writes
			// json.Marshal's bytes: compact, HTML-escaped), so it goes in
			// as it is, not checked and compacted again.
			line = append(line[:len(line)-1], `,"change":`...)
			line = append(line, raw...)
			line = append(line, '}')
		}
		b = append(line, '\n')
		if r.Kind == journal.KindOp {
			w.liveOps = append(w.liveOps, *r)
		}
	}
	return b, nil
}

// appendChange appends ch's JSON, the very bytes json.Marshal writes for it
// (encode_test.go holds the two equal): a step's change (resources put or
// deleted) without reflection, through state.Resource.AppendJSON; one with
// metadata (an operation's start and end) through json.Marshal.
func appendChange(b []byte, ch storage.Change) ([]byte, error) {
	if ch.Meta != nil {
		out, err := json.Marshal(ch)
		if err != nil {
			return nil, err
		}
		return append(b, out...), nil
	}
	b = append(b, '{')
	if len(ch.Put) > 0 {
		b = append(b, `"put":[`...)
		for i, r := range ch.Put {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = r.AppendJSON(b); err != nil {
				return nil, err
			}
		}
		b = append(b, ']')
	}
	if len(ch.Delete) > 0 {
		if len(ch.Put) > 0 {
			b = append(b, ',')
		}
		b = append(b, `"delete":`...)
		b = value.AppendJSONStrings(b, ch.Delete)
	}
	return append(b, '}'), nil
}

// flushDeferred writes the deferred records, durably.
func (w *writer) flushDeferred() error {
	w.mu.Lock()
	empty := len(w.deferred) == 0
	w.mu.Unlock()
	if empty {
		return nil
	}
	err := w.jr.AppendLines(func(dst []byte) ([]byte, error) {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.wrote = w.wrote || len(w.deferred) > 0
		dst = append(dst, w.deferred...)
		w.deferred = w.deferred[:0]
		return dst, nil
	})
	if err != nil && w.jr.Broken() != nil {
		return w.fail(err)
	}
	if err == nil {
		w.afterWrite()
	}
	return err
}

// seal returns ch as the journal holds it: every put checked (a level Load
// would refuse is never written) and its sensitive values sealed. It reads
// nothing a commit changes, so it runs outside the writer's locks.
func (w *writer) seal(ch storage.Change) (out storage.Change, err error) {
	out = storage.Change{Delete: ch.Delete, Meta: ch.Meta}
	for _, r := range ch.Put {
		if r == nil || r.Name == "" {
			return out, errors.New("commit: a resource put has no name")
		}
		if err := state.CheckResourceLevel(w.b.path(stateFile), r); err != nil {
			return out, fmt.Errorf("save state: %w", err)
		}
		sr, err := state.SealResource(r, w.b.opts.Sealing)
		if err != nil {
			return out, fmt.Errorf("save state: %w", err)
		}
		out.Put = append(out.Put, sr)
	}
	if ch.Meta != nil {
		m := *ch.Meta
		m.Revisions = slices.Clone(m.Revisions)
		for i := range m.Revisions {
			m.Revisions[i].Spec = "" // bodies are PutRevision's
		}
		// Sensitive outputs and revision variables, sealed as a state
		// file seals them.
		sealed, err := state.SealState(&state.State{Revisions: m.Revisions, Outputs: m.Outputs}, w.b.opts.Sealing)
		if err != nil {
			return out, fmt.Errorf("save state: %w", err)
		}
		m.Revisions, m.Outputs = sealed.Revisions, sealed.Outputs
		out.Meta = &m
	}
	return out, nil
}

// sensitiveGrew reports a put of ch that lists as sensitive more than the
// state's record did (what the snapshot holds of it is then in clear until
// the next Checkpoint). w.mu is held.
func (w *writer) sensitiveGrew(ch storage.Change) bool {
	for _, r := range ch.Put {
		if old := w.st.Resources[r.Name]; old != nil && len(r.Sensitive) > len(old.Sensitive) {
			return true
		}
	}
	return false
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
	snap, err := state.SealState(st.Clone(), w.b.opts.Sealing)
	if err != nil {
		return fmt.Errorf("backup %s: %w", info.Name, err)
	}
	for i := range snap.Revisions {
		snap.Revisions[i].Spec = "" // bodies are PutRevision's
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

// Checkpoint writes the snapshot when the state moved past it (or must be
// rewritten: sealed, migrated), then compacts the journal.
func (w *writer) Checkpoint(ctx context.Context, keepOps int) error {
	if err := w.usable(); err != nil {
		return err
	}
	if err := w.flushDeferred(); err != nil {
		return err
	}
	w.ck.Lock()
	defer w.ck.Unlock()
	w.mu.Lock()
	need := w.st.Serial != w.disk || w.reseal || w.migrate
	if w.st.Serial == 0 && !w.wrote && !w.reseal && !w.migrate {
		need = false // nothing was ever written: no snapshot of nothing
	}
	var snap *state.State
	var err error
	var legacy map[int]string
	if need {
		if w.migrate {
			legacy, err = w.legacyTexts()
		}
		if err == nil {
			snap, err = w.sealedSnapshot()
		}
	}
	reseal := w.reseal
	sensitive := map[string][]string{}
	if reseal {
		for n, r := range w.st.Resources {
			sensitive[n] = r.Sensitive
		}
	}
	w.mu.Unlock()
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	if need {
		// Revision texts of an old snapshot go to their own files before
		// the snapshot that no longer holds them replaces it.
		for n, text := range legacy {
			if _, err := os.Lstat(w.b.revisionPath(n)); err == nil {
				continue
			}
			if err := w.PutRevision(ctx, n, storage.RevisionBody{Spec: text}); err != nil {
				return err
			}
		}
		if err := state.WriteFile(w.b.path(stateFile), snap); err != nil {
			// The old snapshot stays whole (temp file, rename) and the
			// journal holds everything past it: nothing is lost.
			return fmt.Errorf("checkpoint: %w", err)
		}
		w.mu.Lock()
		w.disk, w.migrate, w.wrote = snap.Serial, false, true
		w.mu.Unlock()
		w.afterWrite()
	}
	if reseal {
		if err := w.resealBackups(sensitive); err != nil {
			return err
		}
		w.mu.Lock()
		w.reseal = false
		w.mu.Unlock()
	}
	// The snapshot now covers every change the live segment holds: it can
	// be sealed. The journal is compacted only when a segment was: with
	// none new, the last compaction saw the same segments (a command's
	// first Checkpoint finds the live segment its predecessor sealed
	// empty), and reading the operations' lines again is a pass over the
	// whole history for nothing.
	sealed, err := w.rotate()
	if err != nil || !sealed {
		return err
	}
	return w.compact(keepOps)
}

// rotate seals the live segment (when it holds anything) as the journal
// folder's next numbered segment and starts a new one. The caller holds
// w.ck and has made the snapshot cover the live segment's changes.
func (w *writer) rotate() (bool, error) {
	if w.jr.Size() == 0 {
		return false, nil
	}
	dir := filepath.Join(w.b.dir, segmentsDir)
	if _, err := nofollow.Mkdir(dir, 0o700); err != nil {
		return false, fmt.Errorf("seal journal segment: %w", err)
	}
	lay, err := w.b.layout()
	if err != nil {
		return false, err
	}
	to := w.b.segPath(lay.next)
	if _, err := os.Lstat(to); !errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("seal journal segment: %s is in the way", to)
	}
	// Its op index first: a crash before the rename leaves an index of
	// a segment that is not sealed, never read, and rewritten when the
	// live segment is sealed under that number.
	var idx bytes.Buffer
	w.mu.Lock()
	for _, r := range w.liveOps {
		line, err := r.AppendJSON(idx.AvailableBuffer())
		if err != nil {
			w.mu.Unlock()
			return false, fmt.Errorf("seal journal segment: %w", err)
		}
		idx.Write(line)
		idx.WriteByte('\n')
	}
	w.mu.Unlock()
	ip := w.b.opsPath(lay.next)
	if err := nofollow.CheckReplaceable(ip); err != nil {
		return false, fmt.Errorf("seal journal segment: %w", err)
	}
	if err := atomicfile.Write(ip, idx.Bytes(), 0o600); err != nil {
		return false, fmt.Errorf("seal journal segment: %w", err)
	}
	w.afterWrite()
	live := w.b.path(journalFile)
	if err := w.jr.Close(); err != nil {
		return false, w.fail(fmt.Errorf("seal journal segment: %w", err))
	}
	rerr := os.Rename(live, to)
	if rerr == nil {
		if rerr = atomicfile.SyncDir(dir); rerr == nil {
			rerr = atomicfile.SyncDir(w.b.dir)
		}
	}
	// Whatever happened, appending goes on in a live segment: a new one,
	// or the old one when the rename failed.
	if w.jr, err = journal.Open(live, w.b.opts.Now); err != nil {
		return false, w.fail(err)
	}
	if rerr != nil {
		return false, fmt.Errorf("seal journal segment: %w", rerr)
	}
	w.mu.Lock()
	w.liveOps = nil
	w.mu.Unlock()
	if err := atomicfile.SyncDir(w.b.dir); err != nil {
		return true, fmt.Errorf("seal journal segment: %w", err)
	}
	w.afterWrite()
	return true, nil
}

// legacyTexts reads the revision texts an old snapshot holds. w.mu is held.
func (w *writer) legacyTexts() (map[int]string, error) {
	st, err := state.Load(w.b.path(stateFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if _, err := state.OpenState(st, w.b.opts.Sealing); err != nil {
		return nil, err
	}
	out := map[int]string{}
	for _, r := range st.Revisions {
		if r.Spec != "" && !secrets.IsSealed(r.Spec) {
			out[r.N] = r.Spec
		}
	}
	return out, nil
}

// resealBackups seals what the backups of an old state hold in clear.
func (w *writer) resealBackups(sensitive map[string][]string) error {
	sl := w.b.opts.Sealing
	if sl.Sealer == nil {
		return nil
	}
	paths, err := filepath.Glob(filepath.Join(w.b.dir, backupsDir, backupPrefix+"*"+backupSuffix))
	if err != nil {
		return err
	}
	for _, p := range paths {
		if _, err := state.ResealFile(p, sl, func(r *state.Resource) []string { return sensitive[r.Name] }); err != nil {
			return fmt.Errorf("seal backup: %w", err)
		}
	}
	return nil
}

// compact folds the sealed segments of operations older than the newest
// keepOps into a new base segment, when the journal holds more than twice
// keepOps whole operations: each older finished operation becomes one
// summary line, the records of the others (unfinished, stopped for a
// person) are kept whole, and the changes the snapshot holds leave them.
// The new base replaces the segments it folds (and the old base), which
// are then removed whole; the newest operations' segments and the live
// one are never touched. The caller holds w.ck; the live segment was just
// sealed, so the snapshot covers every sealed segment.
func (w *writer) compact(keepOps int) error {
	if keepOps <= 0 {
		keepOps = journal.DefaultKeepOperations
	}
	lay, err := w.b.layout()
	if err != nil {
		return err
	}
	// What a compaction a crash cut short left behind goes first.
	if err := w.removeAll(lay.stale); err != nil {
		return err
	}
	if len(lay.sealed) == 0 {
		return nil
	}
	segs, err := w.b.openSegments(false)
	if err != nil {
		return err
	}
	defer segs.close()
	// The operations, from their op and summary lines alone: the step
	// records are not decoded.
	var ops journal.Ops
	for i, sg := range segs.files {
		bad, err := eachOf(sg, journal.Options{Kinds: []string{journal.KindOp, journal.KindSummary}, NoChange: true}, func(r *journal.Record, _ int64) error {
			ops.Add(r, i)
			return nil
		})
		if err != nil {
			return err
		}
		if len(bad) > 0 {
			return bad[0] // never folded away: doctor names it
		}
	}
	compact := ops.Compactable(keepOps)
	if len(compact) == 0 {
		return nil
	}
	// The segments folded: up to the last that holds a record of an
	// operation summarized. A command's operation is one segment of its
	// own (sealed by the Checkpoint at its end), so these are the oldest
	// operations' alone; the records of any other operation they hold
	// (one stopped for a person, a journal sealed whole before segments)
	// are copied into the base as they are.
	cut := 0
	for id := range compact {
		cut = max(cut, ops.Get(id).LastSeg+1)
	}
	var out []journal.Record
	at := map[string]int{} // a summarized operation's line in out
	// The summaries, from every record of their operations (whether one
	// changed anything is in its step records, which the op index lacks).
	var full journal.Ops
	for _, sg := range segs.files[:cut] {
		if _, err := sg.f.Seek(0, io.SeekStart); err != nil {
			return fmt.Errorf("compact journal: %w", err)
		}
		bad, err := journal.EachIn(sg.f, sg.path, journal.Options{NoChange: true}, func(r *journal.Record, _ int64) error {
			if r.Kind == journal.KindState {
				return nil // its change is the snapshot's
			}
			if !compact[r.Op] {
				c := *r
				c.Rest, c.Serial, c.Change = 0, 0, nil
				out = append(out, c)
				return nil
			}
			if _, ok := at[r.Op]; !ok {
				at[r.Op] = len(out)
				out = append(out, journal.Record{}) // its summary, below
			}
			full.Add(r, 0)
			return nil
		})
		if err != nil {
			return err
		}
		if len(bad) > 0 {
			return bad[0]
		}
	}
	for op, i := range at {
		out[i] = full.Summary(op)
	}
	// Consecutive summaries of operations that changed nothing (repeated
	// no-op applies) become one line, so the journal stops growing under
	// them.
	out = journal.Collapse(out)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	for _, r := range out {
		if err := enc.Encode(r); err != nil {
			return fmt.Errorf("compact journal: %w", err)
		}
	}
	n := segs.files[cut-1].n
	p := w.b.basePath(n)
	if err := nofollow.CheckReplaceable(p); err != nil {
		return fmt.Errorf("compact journal: %w", err)
	}
	if err := atomicfile.Write(p, buf.Bytes(), 0o600); err != nil {
		return fmt.Errorf("compact journal: %w", err)
	}
	w.afterWrite()
	// The base is in force: what it folded is never read again.
	var folded []string
	for _, sg := range segs.files[:cut] {
		if sg.path != p {
			folded = append(folded, sg.path)
			if sg.ops != nil {
				folded = append(folded, w.b.opsPath(sg.n))
			}
		}
	}
	return w.removeAll(folded)
}

// removeAll removes files of the journal folder that a base covers, one
// at a time (each a write boundary), then makes the removals durable.
func (w *writer) removeAll(paths []string) error {
	if len(paths) == 0 {
		return nil
	}
	for _, p := range paths {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("compact journal: %w", err)
		}
		w.afterWrite()
	}
	return atomicfile.SyncDir(filepath.Join(w.b.dir, segmentsDir))
}

// Stale is the holder whose dead lock this writer took over.
func (w *writer) Stale() *storage.Holder { return w.lk.Stale }

// Lost is closed only when the stack folder was moved or replaced under
// the lock (inPlace): the kernel keeps a file lock as long as its holder
// lives.
func (w *writer) Lost() <-chan struct{} { return w.lost }

// Release closes the journal and gives the lock up. A stack folder the lock
// made, in which nothing was written, is removed (with the state folder,
// when the lock made that too and it is empty).
func (w *writer) Release(ctx context.Context) error {
	w.mu.Lock()
	done := w.done
	w.mu.Unlock()
	if done {
		return nil
	}
	var err error
	if w.jr != nil && w.usable() == nil {
		// What was deferred is written before the lock goes: the journal
		// loses nothing a run committed unless the run crashed.
		err = w.flushDeferred()
	}
	w.mu.Lock()
	if w.done {
		w.mu.Unlock()
		return nil
	}
	w.done = true
	wrote := w.wrote
	w.mu.Unlock()
	if w.jr != nil {
		if cerr := w.jr.Close(); err == nil {
			err = cerr
		}
	}
	if w.created && !wrote && w.lk.StillAt(w.b.dir) == nil {
		// By name: only while the name is still the folder locked.
		w.removeUnused()
	}
	if rerr := w.lk.Release(); err == nil {
		err = rerr
	}
	w.b.mu.Lock()
	if w.b.w == w {
		w.b.w = nil
	}
	w.b.mu.Unlock()
	return err
}

// removeUnused removes, by name and under the lock, what Lock made in a
// folder it made; anything else found there keeps the folder.
func (w *writer) removeUnused() {
	d := w.b.dir
	if fi, err := os.Lstat(w.b.path(journalFile)); err == nil && (!fi.Mode().IsRegular() || fi.Size() > 0) {
		return
	}
	if _, err := os.Lstat(filepath.Join(d, segmentsDir)); err == nil {
		return
	}
	os.Remove(w.b.path(journalFile))
	os.Remove(filepath.Join(d, lock.FileName))
	if os.Remove(d) == nil && w.createdRoot {
		os.Remove(filepath.Dir(d)) // only when empty: no other stack's
	}
}

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
