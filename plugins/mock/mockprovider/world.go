package mockprovider

import (
	"bytes"
	"cmp"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/bulwark-iac/bulwark/sdk"
)

// WorldFile is the name of the file, in the world folder, that holds the
// mock's world as of its last compaction.
const WorldFile = "world.json"

// LogFile is the name of the file, beside WorldFile, that holds the changes
// made since: one JSON object a line (see logRecord), appended and fsynced
// before the call that made the change returns. The world is WorldFile with
// LogFile's lines applied in order. A compaction (when the log has grown as
// long as the world, and when the provider process ends normally) rewrites
// WorldFile and removes LogFile; so after a command the world is WorldFile
// alone, and only a process killed mid-run leaves a log behind.
const LogFile = "world.log"

// worldVersion is the format version of WorldFile.
const worldVersion = 1

// worldFile is WorldFile's content.
type worldFile struct {
	Version   int         `json:"version"`
	Resources []*resource `json:"resources"`
	// FailDelete holds the fail_delete counters, keyed by resource name.
	FailDelete map[string]*counter `json:"fail_delete,omitempty"`
}

// logRecord is one line of LogFile: exactly one of its fields is set. Each
// says what a thing is now, never how it changed, so applying a log twice
// (a crash between a compaction's rewrite of WorldFile and its removal of
// the log) gives the same world as applying it once.
type logRecord struct {
	Put     *resource     `json:"put,omitempty"`     // the resource, whole
	Delete  string        `json:"delete,omitempty"`  // the id of a resource now gone
	Counter *namedCounter `json:"counter,omitempty"` // a fail_delete counter
}

// namedCounter is a fail_delete counter in the log; Forget drops it.
type namedCounter struct {
	Name string `json:"name"`
	counter
	Forget bool `json:"forget,omitempty"`
}

// resource is one simulated resource.
type resource struct {
	ID             string         `json:"id"`
	Type           string         `json:"type"`
	Name           string         `json:"name"`
	IdempotencyKey string         `json:"idempotency_key"`
	Attributes     sdk.Attributes `json:"attributes"`

	seq int64 // order of appearance, so WorldFile keeps its order
}

// counter is a fail_delete counter: Configured is the value of the config
// that armed it, Remaining how many Deletes are still to fail.
type counter struct {
	Configured int `json:"configured"`
	Remaining  int `json:"remaining"`
}

// typeName is a resource's identity in the world: its type, its name and
// its zone. Two resources of one name can exist at once in two zones, so a
// replace that moves one to another zone makes the new one before it
// deletes the old one (the schema's Coexistence says so).
type typeName struct{ typ, name, zone string }

// zoneOf is the zone a configuration or a resource's attributes give ("" for none).
func zoneOf(attrs map[string]any) string {
	z, _ := attrs[attrZone].(string)
	return z
}

// world is everything the mock remembers between calls and runs, in memory,
// indexed by id, idempotency key and (type, name). Its changing methods
// record what they change in pending, for the log.
type world struct {
	byID    map[string]*resource
	byKey   map[string]*resource
	byTN    map[typeName]*resource
	nextSeq int64
	// dups is set when a world written by hand holds two resources under
	// one key or one (type, name): the indexes then name the first, and a
	// removal looks for the next one.
	dups       bool
	failDelete map[string]*counter
	pending    []logRecord
}

func newWorld() *world {
	return &world{byID: map[string]*resource{}, byKey: map[string]*resource{}, byTN: map[typeName]*resource{}}
}

// decodeWorld reads WorldFile's content.
func decodeWorld(path string, b []byte) (*world, error) {
	var f worldFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("mock world %s is corrupt: %w", path, err)
	}
	if f.Version != worldVersion {
		return nil, fmt.Errorf("mock world %s has format version %d; this provider reads %d", path, f.Version, worldVersion)
	}
	w := newWorld()
	for _, r := range f.Resources {
		if r != nil {
			w.index(r)
		}
	}
	w.failDelete = f.FailDelete
	return w, nil
}

// encode returns WorldFile's content for w.
func (w *world) encode() ([]byte, error) {
	rs := slices.Collect(maps.Values(w.byID))
	slices.SortFunc(rs, func(a, b *resource) int { return cmp.Compare(a.seq, b.seq) })
	if rs == nil {
		rs = []*resource{}
	}
	b, err := json.MarshalIndent(worldFile{Version: worldVersion, Resources: rs, FailDelete: w.failDelete}, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode mock world: %w", err)
	}
	return append(b, '\n'), nil
}

// index adds r, or replaces the resource with its id, without recording it.
func (w *world) index(r *resource) {
	if old := w.byID[r.ID]; old != nil {
		r.seq = old.seq
		w.unindex(old)
	} else {
		w.nextSeq++
		r.seq = w.nextSeq
	}
	w.byID[r.ID] = r
	if r.IdempotencyKey != "" {
		if _, taken := w.byKey[r.IdempotencyKey]; taken {
			w.dups = true
		} else {
			w.byKey[r.IdempotencyKey] = r
		}
	}
	tn := typeName{r.Type, r.Name, zoneOf(r.Attributes)}
	if _, taken := w.byTN[tn]; taken {
		w.dups = true
	} else {
		w.byTN[tn] = r
	}
}

// unindex drops r from the indexes.
func (w *world) unindex(r *resource) {
	delete(w.byID, r.ID)
	tn := typeName{r.Type, r.Name, zoneOf(r.Attributes)}
	keyed := r.IdempotencyKey != "" && w.byKey[r.IdempotencyKey] == r
	named := w.byTN[tn] == r
	if keyed {
		delete(w.byKey, r.IdempotencyKey)
	}
	if named {
		delete(w.byTN, tn)
	}
	if !w.dups || (!keyed && !named) {
		return
	}
	// A world written by hand: the next resource in order under the same
	// key, or the same (type, name), takes the index.
	var nextKeyed, nextNamed *resource
	for _, o := range w.byID {
		if keyed && o.IdempotencyKey == r.IdempotencyKey && (nextKeyed == nil || o.seq < nextKeyed.seq) {
			nextKeyed = o
		}
		if named && (typeName{o.Type, o.Name, zoneOf(o.Attributes)}) == tn && (nextNamed == nil || o.seq < nextNamed.seq) {
			nextNamed = o
		}
	}
	if nextKeyed != nil {
		w.byKey[r.IdempotencyKey] = nextKeyed
	}
	if nextNamed != nil {
		w.byTN[tn] = nextNamed
	}
}

// apply applies one log record, without recording it.
func (w *world) apply(rec logRecord) {
	switch {
	case rec.Put != nil:
		w.index(rec.Put)
	case rec.Delete != "":
		if r := w.byID[rec.Delete]; r != nil {
			w.unindex(r)
		}
	case rec.Counter != nil:
		if rec.Counter.Forget {
			delete(w.failDelete, rec.Counter.Name)
			return
		}
		if w.failDelete == nil {
			w.failDelete = map[string]*counter{}
		}
		c := rec.Counter.counter
		w.failDelete[rec.Counter.Name] = &c
	}
}

// applyLog applies the complete lines of b (a log from its start, or from
// the end of a line) and returns how many bytes it consumed and how many
// records they held. An incomplete last line is a change still being
// written (or one a crash tore before it was acknowledged): it is left for
// later.
func (w *world) applyLog(path string, b []byte) (consumed int64, records int, err error) {
	for {
		i := bytes.IndexByte(b[consumed:], '\n')
		if i < 0 {
			return consumed, records, nil
		}
		line := b[consumed : consumed+int64(i)]
		var rec logRecord
		if err := json.Unmarshal(line, &rec); err != nil {
			return consumed, records, fmt.Errorf("mock world log %s is corrupt at byte %d: %w", path, consumed, err)
		}
		w.apply(rec)
		consumed += int64(i) + 1
		records++
	}
}

// put records r (new or changed, whole).
func (w *world) put(r *resource) {
	w.index(r)
	w.pending = append(w.pending, logRecord{Put: r})
}

func (w *world) byIDOf(id string) *resource { return w.byID[id] }

func (w *world) byKeyOf(key string) *resource { return w.byKey[key] }

func (w *world) byTypeName(typ, name, zone string) *resource {
	return w.byTN[typeName{typ, name, zone}]
}

// remove records that the resource with id is gone.
func (w *world) remove(id string) {
	if r := w.byID[id]; r != nil {
		w.unindex(r)
		w.pending = append(w.pending, logRecord{Delete: id})
	}
}

// size is the number of resources.
func (w *world) size() int { return len(w.byID) }

// newID returns "mock-<type>-<name>-<8 hex>", unique in the world.
func (w *world) newID(typ, name string) (string, error) {
	for {
		var b [4]byte
		if _, err := rand.Read(b[:]); err != nil {
			return "", fmt.Errorf("generate id: %w", err)
		}
		id := fmt.Sprintf("mock-%s-%s-%s", typ, name, hex.EncodeToString(b[:]))
		if w.byID[id] == nil {
			return id, nil
		}
	}
}

func (w *world) setCounter(name string, c counter) {
	if w.failDelete == nil {
		w.failDelete = map[string]*counter{}
	}
	w.failDelete[name] = &c
	w.pending = append(w.pending, logRecord{Counter: &namedCounter{Name: name, counter: c}})
}

// armFailDelete reconciles the fail_delete counters with the config: a name
// the config adds, or whose count it changes, is (re)armed with that count; a
// name the config no longer mentions is forgotten.
func (w *world) armFailDelete(cfg map[string]int) {
	for _, name := range slices.Sorted(maps.Keys(cfg)) {
		n := cfg[name]
		if c, ok := w.failDelete[name]; ok && c.Configured == n {
			continue
		}
		w.setCounter(name, counter{Configured: n, Remaining: n})
	}
	for _, name := range slices.Sorted(maps.Keys(w.failDelete)) {
		if _, ok := cfg[name]; !ok {
			delete(w.failDelete, name)
			w.pending = append(w.pending, logRecord{Counter: &namedCounter{Name: name, Forget: true}})
		}
	}
}

// consumeFailDelete reports whether this Delete of name must fail, and
// counts it.
func (w *world) consumeFailDelete(name string) bool {
	c, ok := w.failDelete[name]
	if !ok || c.Remaining <= 0 {
		return false
	}
	w.setCounter(name, counter{Configured: c.Configured, Remaining: c.Remaining - 1})
	return true
}

// attributes returns a copy of r's attributes, with the computed arn (derived
// from the id, so never stored: a resource put in the world by hand has one
// too).
func (r *resource) attributes() sdk.Attributes {
	a := maps.Clone(r.Attributes)
	if a == nil {
		a = sdk.Attributes{}
	}
	a[attrARN] = arn(r.Type, r.Name, r.ID)
	return a
}

// readFile reads the file at path whole, with what os.Stat says of the
// file read (nil, nil, nil when there is none).
func readFile(path string) ([]byte, os.FileInfo, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read mock world: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, fmt.Errorf("read mock world: %w", err)
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, nil, fmt.Errorf("read mock world: %w", err)
	}
	return b, fi, nil
}

// stat is os.Stat with a missing file as nil.
func stat(path string) (os.FileInfo, error) {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("mock world: %w", err)
	}
	return fi, nil
}

// sameVersion reports whether a and b are the same file with the same size
// and modification time (both nil: both missing). Every writer of WorldFile
// replaces it by a rename, so a new version is a new file.
func sameVersion(a, b os.FileInfo) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return os.SameFile(a, b) && a.Size() == b.Size() && a.ModTime().Equal(b.ModTime())
}

func worldPath(dir string) string { return filepath.Join(dir, WorldFile) }

func logPath(dir string) string { return filepath.Join(dir, LogFile) }
