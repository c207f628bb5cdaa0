// Package filestore is the file backend of core/storage, the default: a
// stack's durable home is one folder (mode 0700) of the machine that runs
// bulwark.
//
//	<stack folder>/journal.jsonl   the live journal segment, and the write-ahead log of the state
//	<stack folder>/journal/N.jsonl  sealed segments (journal/base-N.jsonl: the compacted history up to N; journal/N.ops: N's op index)
//	<stack folder>/state.json      a snapshot of the state (written at Checkpoint)
//	<stack folder>/revisions/N.json  revision N's body (spec text, variables), sealed
//	<stack folder>/backups/state-OP.json  a copy of the state before update OP
//	<stack folder>/lock            who holds the lock (see ./lock)
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
// lock is ./lock's flock of the folder itself.
//
// A stack folder written before this package (a state.json whose revisions
// hold their spec text, a journal without changes) loads as it is; its
// first Checkpoint moves the revisions' texts to their own files.
//
// What every backend does alike (sealing a change, stamping records, the
// lineage rule, holder defaults, the compaction rule) is core/storage's
// and core/journal's; this package is where the files are. By concern:
// filestore.go (opening), load.go (snapshot and replay), segments.go (the
// journal's segments), read.go (Load, Journal, Stats), lock.go (Lock,
// Release), writer.go (Commit), revisions.go, backups.go, checkpoint.go
// (snapshot and compaction), moved.go (state migrate's fence).
package filestore

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/bulwark-iac/bulwark/core/journal"
	"github.com/bulwark-iac/bulwark/core/state"
	"github.com/bulwark-iac/bulwark/core/storage"
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
	return &Backend{dir: dir, opts: opts, location: location(dir)}
}

// location is dir as a file URL, made absolute against the working
// folder New was called in (bulwark never changes it). Made once: every
// journal commit names it (storage.NextLineage), and filepath.Abs asks the
// kernel about two folders each time (os.Getwd).
func location(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		abs = dir
	}
	return "file://" + filepath.ToSlash(abs)
}

// Backend is one stack folder. It is safe for concurrent use.
type Backend struct {
	dir      string
	opts     storage.Options
	location string // Location's answer

	mu sync.Mutex
	w  *writer // the lock this Backend holds, if any
}

var _ storage.Backend = (*Backend)(nil)

// Dir is the stack folder.
func (b *Backend) Dir() string { return b.dir }

func (b *Backend) path(name string) string { return filepath.Join(b.dir, name) }

// Location is the stack folder as a file URL.
func (b *Backend) Location() string { return b.location }

// Close releases nothing a Writer holds; it is here for the interface.
func (b *Backend) Close() error { return nil }
