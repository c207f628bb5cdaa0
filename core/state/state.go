// Package state holds what bulwark knows about a stack's resources: for each,
// its provider, type, id, attributes and protection level, and the pending
// interventions that need a person.
//
// A Store keeps one stack's state in <dir>/state.json. Every change goes
// through Mutate, which writes the whole file atomically (temp file, fsync,
// rename, fsync of the folder) with mode 0600 before it returns, so a crash
// at any instant leaves either the old state or the new one. The file carries
// a sha256 checksum of its content; Load refuses a file whose checksum does
// not match, and a resource whose recorded protection level is not one of
// ephemeral, durable, protected (an unknown level is never guessed at: a
// wrong guess could let a delete through).
//
// Nothing here follows a symbolic link: a stack folder or a state.json that
// is one is refused, and a write replaces the file by renaming a new one
// over it, never writing through what is at the name.
package state

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/bulwark-iac/bulwark/core/nofollow"
	"github.com/bulwark-iac/bulwark/core/protection"
	"github.com/bulwark-iac/bulwark/core/secrets"
	"github.com/bulwark-iac/bulwark/core/value"
	"github.com/bulwark-iac/bulwark/sdk/atomicfile"
)

// FileName is the name of the state file in a stack's folder.
const FileName = "state.json"

// Version is the state file format this package writes.
const Version = 1

// Resource is one resource bulwark manages.
type Resource struct {
	Name     string `json:"name"`
	Type     string `json:"type"`
	Provider string `json:"provider"` // local provider name in the spec
	Source   string `json:"source"`   // plugin name
	ID       string `json:"id"`
	// Protection is the resource's level, recorded as its word
	// (ephemeral, durable, protected); never Unspecified in a state that
	// loads.
	Protection protection.Level `json:"protection"`
	DependsOn  []string         `json:"depends_on,omitempty"`
	Config     map[string]any   `json:"config,omitempty"`
	Attributes map[string]any   `json:"attributes,omitempty"`
	CreatedBy  string           `json:"created_by,omitempty"` // operation that created it
	UpdatedBy  string           `json:"updated_by,omitempty"` // last operation that changed it
	// IdempotencyKey is the key the Create that made it carried ("" for
	// one imported, or recorded before keys were).
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	// Imported: taken over by `bulwark import` or the spec's `import:`,
	// not created by bulwark; no rollback deletes it.
	Imported bool `json:"imported,omitempty"`
	// RetainedBy is the operation that kept this resource as retained: a
	// rollback (of a failed apply, or `rollback --to N`) that the ladder
	// made keep it (durable or protected) though the revision it went back
	// to lacks it. A retained resource is still this stack's; no apply
	// deletes it (one whose spec has it again takes it back as an ordinary
	// resource), a teardown deletes it under its level, `state forget`
	// releases it. "" for every other resource, and in states written
	// before retention was recorded.
	RetainedBy string `json:"retained_by,omitempty"`
	// Prior is what an update replaced, kept so that the operation that made
	// the update can undo it, even after a crash.
	Prior *Prior `json:"prior,omitempty"`
	// DeposedFrom and DeposedBy are set on the record of an object a
	// replace set aside (Terraform's "deposed" object): the old resource
	// of address DeposedFrom, replaced by operation DeposedBy, recorded
	// under DeposedName(DeposedFrom, DeposedBy) until the operation's
	// cleanup deletes it, or its rollback makes it current again. Nothing
	// is ever orphaned: from before the new one is made until the old one
	// is deleted, the state records it.
	DeposedFrom string `json:"deposed_from,omitempty"`
	DeposedBy   string `json:"deposed_by,omitempty"`
	// Sensitive names the attributes whose values are sensitive (from the
	// provider's schema, or because they hold a secret); the file holds
	// them sealed (see Sealing). SensitiveID among them says the resource's
	// ID holds a secret (a provider computed it from one): the file holds
	// the ID sealed too.
	Sensitive []string `json:"sensitive,omitempty"`
	// Private is the provider's private data for the resource, in clear
	// in memory; what is stored holds it sealed, always, like a sensitive
	// value (see Private).
	Private Private `json:"private,omitzero"`
	// Validated is the key of the config the provider last validated with
	// no diagnostic at all for this resource, when it was created or
	// changed (see stack's validationKey: the provider's source and
	// version, the type and the config, hashed; never a config with a
	// sensitive attribute). A later operation whose key is the same does
	// not ask the provider to validate it again.
	Validated string `json:"validated,omitempty"`

	// UnknownProtection is the protection word read when it names no
	// level (Protection is then Unspecified): never written, kept so that
	// CheckLevels, which refuses such a resource, names the very word
	// (see level.go). "" in every state that loads.
	UnknownProtection string `json:"-"`
}

// DeposedName is the name the state records the old object of address
// under while operation op replaces it. The "#" cannot appear in an
// address, so it never meets a spec's resource.
func DeposedName(address, op string) string { return address + "#" + op }

// Address is the address the provider knows the resource by: its name, or
// for a deposed object the address it was deposed from.
func (r *Resource) Address() string {
	if r.DeposedFrom != "" {
		return r.DeposedFrom
	}
	return r.Name
}

// Deposed reports whether r is the old object of a replace, set aside.
func (r *Resource) Deposed() bool { return r != nil && r.DeposedFrom != "" }

// PrivateData returns the provider's private data (nil when there is none,
// or it is still sealed: loaded without the stack's key).
//
// Private data that does not decode gives nil: a state that holds such a
// value is refused first (CheckPrivate), so that no provider is silently
// handed none.
func (r *Resource) PrivateData() []byte {
	if r == nil {
		return nil
	}
	return r.Private.Bytes()
}

// PrivateError refuses a state whose recorded private data for a resource
// is not what bulwark writes (base64, or sealed): damaged or edited by hand.
type PrivateError struct {
	Resource string
	Err      error
}

func (e *PrivateError) Error() string {
	return fmt.Sprintf("resource %q: its recorded private data does not decode (%v): the state is damaged or was edited; bulwark will not call its provider without it. Restore the newest good backup (bulwark doctor lists them), or `bulwark state forget` the resource and `bulwark import` it again", e.Resource, e.Err)
}

func (e *PrivateError) Is(target error) bool { return target == ErrCorrupt }

func (e *PrivateError) Unwrap() error { return e.Err }

// CheckPrivate refuses (a *PrivateError, errors.Is ErrCorrupt) a state
// whose resource records private data PrivateData cannot decode; the
// resources named in except are not looked at (state forget drops one).
func CheckPrivate(st *State, except ...string) error {
	for _, name := range st.Names() {
		r := st.Resources[name]
		if slices.Contains(except, name) {
			continue
		}
		if err := r.Private.decodeError(); err != nil {
			return &PrivateError{Resource: name, Err: err}
		}
	}
	return nil
}

// SetPrivate records what a provider answered as the resource's private
// data. Empty keeps what is recorded: the contract lets a provider that
// says nothing keep its data.
func (r *Resource) SetPrivate(b []byte) {
	if len(b) > 0 {
		r.Private = PrivateOf(b)
	}
}

// Prior is a resource's configuration before an operation updated it.
type Prior struct {
	Op         string         `json:"op"`
	Config     map[string]any `json:"config,omitempty"`
	Attributes map[string]any `json:"attributes,omitempty"`
	// Protection is the level before the update; Unspecified (recorded
	// as "") when none was recorded.
	Protection protection.Level `json:"protection"`
	DependsOn  []string         `json:"depends_on,omitempty"`
	// RetainedBy is the resource's retained mark before the update (see
	// Resource.RetainedBy): an update that took a retained resource back
	// and is then undone leaves it retained again.
	RetainedBy string `json:"retained_by,omitempty"`

	// UnknownProtection is as Resource's.
	UnknownProtection string `json:"-"`
}

// Intervention is a failure that needs a person: it stays until acknowledged.
type Intervention struct {
	Op       string    `json:"op"`
	Resource string    `json:"resource"`
	Error    string    `json:"error"`
	Since    time.Time `json:"since"`
}

// Revision statuses.
const (
	RevisionStaged  = "staged"  // written by an update's stage step, not yet current
	RevisionApplied = "applied" // an apply that succeeded
	RevisionFailed  = "failed"  // staged by an update that did not succeed
)

// Revision is one applied spec, numbered from 1.
type Revision struct {
	N    int       `json:"n"`
	Op   string    `json:"op"`
	Time time.Time `json:"time"`
	File string    `json:"file"`
	// Spec is the spec's text. A storage backend keeps it apart (see
	// storage.RevisionBody): in the state a backend loads it is "" and
	// Digest says which text it was; a state written before that holds
	// it here.
	Spec     string `json:"spec,omitempty"`
	Digest   string `json:"digest,omitempty"`   // SpecDigest of the text
	Provider string `json:"provider,omitempty"` // the --provider the run used
	Status   string `json:"status"`
	// User names who applied it (see storage.CurrentUser); "" in revisions
	// recorded before it was kept.
	User string `json:"user,omitempty"`
	// Targets are the --target addresses of a partial apply: only they
	// and what they depend on were converged to this spec.
	Targets []string `json:"targets,omitempty"`
	// Variables are the values of the spec's variables the revision was
	// applied with (all of them, defaults included), so a rollback to it
	// re-applies exactly them; the values of those SensitiveVariables
	// names are sealed in the file.
	Variables          map[string]any `json:"variables,omitempty"`
	SensitiveVariables []string       `json:"sensitive_variables,omitempty"`
}

// Output is the value of one of the spec's outputs, as of the last
// successful apply; a sensitive one's value is sealed in the file.
type Output struct {
	Value       any    `json:"value"`
	Description string `json:"description,omitempty"`
	Sensitive   bool   `json:"sensitive,omitempty"`
}

// State is a stack's whole state.
type State struct {
	Version int    `json:"version"`
	Stack   string `json:"stack"`
	// Lineage is the stack's identity (a ULID minted when its state is
	// first written): journal records carry it, and a state, journal or
	// backup of another lineage is refused. "" in states written before
	// lineages; one is minted on their next write.
	Lineage string `json:"lineage,omitempty"`
	// Forgotten lists the idempotency keys of resources `state forget`
	// dropped: though this stack issued them, what carries them is no
	// longer this stack's (an import takes it back).
	Forgotten     []string             `json:"forgotten,omitempty"`
	Serial        int64                `json:"serial"` // bumped on every write
	Resources     map[string]*Resource `json:"resources"`
	Interventions []Intervention       `json:"interventions,omitempty"`
	Revisions     []Revision           `json:"revisions,omitempty"`
	// Current is the revision reality was last converged to (0: none).
	Current int `json:"current,omitempty"`
	// Staged is the revision an unfinished update or rollback will make
	// current (0: none).
	Staged int `json:"staged,omitempty"`
	// Outputs are the spec's outputs, by name, evaluated after the last
	// successful apply (or update, or rollback) from the recorded
	// attributes; `bulwark output` prints them without starting a provider.
	Outputs map[string]Output `json:"outputs,omitempty"`
	// Secrets is the stack's secrets provider: where the key that seals
	// its values comes from (never the key). nil: keyfile, as before
	// providers were recorded.
	Secrets *secrets.Config `json:"secrets,omitempty"`
}

// Revision returns revision n, or false.
func (s *State) Revision(n int) (*Revision, bool) {
	for i := range s.Revisions {
		if s.Revisions[i].N == n {
			return &s.Revisions[i], true
		}
	}
	return nil, false
}

// SpecDigest is what a revision records of its spec's text: a sha256, so
// "is this the spec of revision n?" needs no body read.
func SpecDigest(text string) string { return checksum([]byte(text)) }

// CheckLevels refuses any recorded protection level that is not a known one
// (a *LevelError naming path), as Load does: a backend never writes what it
// would refuse to load.
func CheckLevels(path string, st *State) error { return checkLevels(path, st) }

// CheckResourceLevel is CheckLevels for one resource.
func CheckResourceLevel(path string, r *Resource) error {
	return checkLevels(path, &State{Resources: map[string]*Resource{r.Name: r}})
}

// WriteFile writes st to path as a state file (checksummed, mode 0600,
// atomically: temp file, fsync, rename, fsync of the folder), never
// through a link at path. st is written as it is: seal it first.
func WriteFile(path string, st *State) error { return write(path, st) }

// Names returns the resource names, sorted.
func (s *State) Names() []string {
	out := make([]string, 0, len(s.Resources))
	for n := range s.Resources {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Clone returns a deep copy.
func (s *State) Clone() *State {
	b, err := json.Marshal(s)
	if err != nil {
		panic(fmt.Sprintf("state: clone: %v", err)) // only JSON-safe values are ever stored
	}
	var c State
	if err := json.Unmarshal(b, &c); err != nil {
		panic(fmt.Sprintf("state: clone: %v", err))
	}
	if c.Resources == nil {
		c.Resources = map[string]*Resource{}
	}
	return &c
}

// ErrCorrupt is returned by Load for a state file that does not parse or does
// not match its checksum.
var ErrCorrupt = errors.New("state file is corrupt")

// Store is one stack's state on disk. It is safe for concurrent use.
type Store struct {
	dir string
	// AfterWrite, when set, is called after each durable write (tests use it
	// to crash at that instant).
	AfterWrite func()

	mu sync.Mutex
	st *State
	// sealing seals sensitive values on every write (see OpenSealed);
	// sensitiveOf says which attributes are sensitive; clear is set while
	// the file still holds in clear what it should hold sealed.
	sealing     Sealing
	sensitiveOf func(*Resource) []string
	clear       bool
}

// LevelError refuses a state that records a protection level bulwark does
// not know for a resource.
type LevelError struct {
	Path     string
	Resource string
	Level    string
}

func (e *LevelError) Error() string {
	// A file backend's state has a backups folder beside it; a remote
	// backend's (its Path a URL: postgres://…, s3://…) keeps them itself,
	// and a path joined onto its URL would name nothing.
	from := filepath.Join(filepath.Dir(e.Path), "backups")
	if strings.Contains(e.Path, "://") {
		from = "the backups that backend keeps for this stack (bulwark doctor lists them)"
	}
	return fmt.Sprintf("load state %s: resource %q records protection %q, which is not ephemeral, durable or protected: bulwark will not guess its level (a wrong guess could delete it); restore the newest good copy from %s",
		e.Path, e.Resource, e.Level, from)
}

func (e *LevelError) Is(target error) bool { return target == ErrCorrupt }

// checkLevels refuses any recorded protection level that is not a known one,
// "" included.
func checkLevels(path string, st *State) error {
	for _, name := range st.Names() {
		r := st.Resources[name]
		if !onLadder(r.Protection) || r.UnknownProtection != "" {
			return &LevelError{Path: path, Resource: name, Level: recordedWord(r.Protection, r.UnknownProtection)}
		}
		// A prior's level only bounds an undo from below (the recorded level
		// stays the floor), so a prior with none recorded is ephemeral; an
		// unknown word is still refused.
		if p := r.Prior; p != nil && ((p.Protection != protection.Unspecified && !onLadder(p.Protection)) || p.UnknownProtection != "") {
			return &LevelError{Path: path, Resource: name + " (its prior configuration)", Level: recordedWord(p.Protection, p.UnknownProtection)}
		}
	}
	return nil
}

// Open opens (creating the folder, mode 0700, if needed) the state of stack
// kept in dir, and loads it. A missing file is an empty state.
func Open(dir, stack string) (*Store, error) {
	if _, err := nofollow.Mkdir(dir, 0o700); err != nil {
		return nil, fmt.Errorf("open state: %w", err)
	}
	st, err := Load(filepath.Join(dir, FileName))
	if errors.Is(err, fs.ErrNotExist) {
		st = &State{Version: Version, Stack: stack, Resources: map[string]*Resource{}}
	} else if err != nil {
		return nil, err
	}
	if st.Stack != stack {
		return nil, fmt.Errorf("open state: %s holds stack %q, not %q", dir, st.Stack, stack)
	}
	return &Store{dir: dir, st: st}, nil
}

// Load reads and checks a state file, refusing a symbolic link, as the file
// or as the stack folder that holds it.
func Load(path string) (*State, error) {
	if err := nofollow.CheckDir(filepath.Dir(path)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("load state: %w", err)
	}
	b, err := nofollow.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load state: %w", err)
	}
	// The state's bytes are read in place, not copied out of the file's.
	var env struct {
		Checksum string  `json:"checksum"`
		State    inPlace `json:"state"`
	}
	if err := json.Unmarshal(b, &env); err != nil {
		return nil, fmt.Errorf("load state %s: %w: %v", path, ErrCorrupt, err)
	}
	if got := compactChecksum(env.State); got != env.Checksum {
		return nil, fmt.Errorf("load state %s: %w: checksum %s, recorded %s", path, ErrCorrupt, got, env.Checksum)
	}
	var st State
	if err := json.Unmarshal(env.State, &st); err != nil {
		return nil, fmt.Errorf("load state %s: %w: %v", path, ErrCorrupt, err)
	}
	if st.Version != Version {
		return nil, fmt.Errorf("load state %s: unsupported state version %d", path, st.Version)
	}
	if st.Resources == nil {
		st.Resources = map[string]*Resource{}
	}
	if err := checkLevels(path, &st); err != nil {
		return nil, err
	}
	return &st, nil
}

func checksum(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Dir returns the stack's folder.
func (s *Store) Dir() string { return s.dir }

// Snapshot returns a copy of the current state.
func (s *Store) Snapshot() *State {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st.Clone()
}

// Lineage returns the stack's lineage ("" when none was ever minted or
// adopted).
func (s *Store) Lineage() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st.Lineage
}

// UseLineage gives a state that has none the lineage l, in memory: the next
// write records it. A state that has one keeps it.
func (s *Store) UseLineage(l string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.st.Lineage == "" {
		s.st.Lineage = l
	}
}

// Mutate applies fn to a copy of the state and writes the result durably; the
// change is visible to Snapshot only once it is on disk. An error from fn or
// from the write leaves both the file and the state in memory unchanged.
func (s *Store) Mutate(fn func(*State) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	next := s.st.Clone()
	if err := fn(next); err != nil {
		return err
	}
	next.Serial = s.st.Serial + 1
	// Never write a state that Load would refuse.
	if err := checkLevels(filepath.Join(s.dir, FileName), next); err != nil {
		return fmt.Errorf("save state: %w", err)
	}
	s.markSensitive(next)
	disk, err := sealValues(next, s.sealing)
	if err != nil {
		return fmt.Errorf("save state: %w", err)
	}
	if err := write(filepath.Join(s.dir, FileName), disk); err != nil {
		return err
	}
	s.st = next
	if s.AfterWrite != nil {
		s.AfterWrite()
	}
	return nil
}

func write(path string, st *State) error {
	if err := nofollow.CheckReplaceable(path); err != nil {
		return fmt.Errorf("save state: %w", err)
	}
	// Everything but the resources, encoded once; the resources are
	// written one line each between its "resources" braces, so the state's
	// text is never whole in memory. Its checksum (of the compact form)
	// is hashed as it is written and put in its fixed-width place at the
	// head once it is known.
	top := *st
	top.Resources = map[string]*Resource{}
	rest, err := json.Marshal(&top)
	if err != nil {
		return fmt.Errorf("save state: %w", err)
	}
	// The first such key is the state's own: the fields before it
	// (version, stack, lineage, forgotten, serial) hold no object.
	const key = `"resources":{}`
	at := bytes.Index(rest, []byte(key))
	if at < 0 {
		return fmt.Errorf("save state: no resources key in %.80s", rest)
	}
	const head = "{\n  \"checksum\": \""
	placeholder := "sha256:" + strings.Repeat("0", 64)
	return writeAtomic(path, func(f *os.File) error {
		w := bufio.NewWriterSize(f, 256<<10)
		h := &compactHasher{h: sha256.New()}
		body := io.MultiWriter(w, h)
		w.WriteString(head + placeholder + "\",\n  \"state\": ")
		body.Write(rest[:at+len(key)-1])
		var line []byte // one resource's, reused
		for i, name := range st.Names() {
			line = line[:0]
			if i > 0 {
				line = append(line, ',')
			}
			line = append(line, "\n    "...)
			line = value.AppendJSONString(line, name)
			line = append(line, ':')
			if line, err = st.Resources[name].AppendJSON(line); err != nil {
				return fmt.Errorf("resource %s: %w", name, err)
			}
			body.Write(line)
		}
		body.Write(rest[at+len(key)-1:])
		w.WriteString("\n}\n")
		if err := w.Flush(); err != nil {
			return err
		}
		_, err := f.WriteAt([]byte(h.sum()), int64(len(head)))
		return err
	})
}

// writeAtomic writes path through fill on a temporary file of its folder
// (mode 0600), then fsyncs, renames it into place and fsyncs the folder: a
// crash leaves the old file or the new one (as atomicfile.Write).
func writeAtomic(path string, fill func(*os.File) error) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("save state: %w", err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if err = f.Chmod(0o600); err != nil {
		return fmt.Errorf("save state: %w", err)
	}
	if err = fill(f); err != nil {
		return fmt.Errorf("save state %s: %w", path, err)
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("save state %s: sync: %w", path, err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("save state %s: %w", path, err)
	}
	if err = os.Rename(tmp, path); err != nil {
		return fmt.Errorf("save state %s: %w", path, err)
	}
	return atomicfile.SyncDir(dir)
}

// compactHasher hashes what is written to it in its compact form: every
// byte outside a string that is not white space, every byte of a string.
type compactHasher struct {
	h          hash.Hash
	inStr, esc bool
	buf        [4096]byte
	n          int
}

func (c *compactHasher) Write(p []byte) (int, error) {
	for _, b := range p {
		switch {
		case c.inStr:
			switch {
			case c.esc:
				c.esc = false
			case b == '\\':
				c.esc = true
			case b == '"':
				c.inStr = false
			}
		case b == '"':
			c.inStr = true
		case b == ' ' || b == '\t' || b == '\n' || b == '\r':
			continue
		}
		c.buf[c.n] = b
		c.n++
		if c.n == len(c.buf) {
			c.h.Write(c.buf[:])
			c.n = 0
		}
	}
	return len(p), nil
}

func (c *compactHasher) sum() string {
	c.h.Write(c.buf[:c.n])
	c.n = 0
	return "sha256:" + hex.EncodeToString(c.h.Sum(nil))
}

// inPlace keeps the JSON it is decoded from without copying it: the bytes
// are the decoded buffer's, which the caller keeps unchanged.
type inPlace []byte

func (p *inPlace) UnmarshalJSON(b []byte) error {
	*p = b
	return nil
}

// compactChecksum is checksum(compact(b)) without the compact copy: the
// bytes of b outside its strings that are not white space, hashed as they
// are found.
func compactChecksum(b []byte) string {
	c := &compactHasher{h: sha256.New()}
	c.Write(b)
	return c.sum()
}

// Clone returns a deep copy of r (its value maps and lists copied, not
// shared).
func (r *Resource) Clone() *Resource {
	if r == nil {
		return nil
	}
	c := *r
	c.DependsOn = cloneStrings(r.DependsOn)
	c.Sensitive = cloneStrings(r.Sensitive)
	c.Config = CloneValues(r.Config)
	c.Attributes = CloneValues(r.Attributes)
	if r.Prior != nil {
		p := *r.Prior
		p.Config = CloneValues(r.Prior.Config)
		p.Attributes = CloneValues(r.Prior.Attributes)
		p.DependsOn = cloneStrings(r.Prior.DependsOn)
		c.Prior = &p
	}
	return &c
}

func cloneStrings(s []string) []string {
	if s == nil {
		return nil
	}
	return append([]string(nil), s...)
}

// CloneValues deep-copies a map of JSON values (maps and lists inside are
// copied too): value.CloneMap.
func CloneValues(m map[string]any) map[string]any { return value.CloneMap(m) }
