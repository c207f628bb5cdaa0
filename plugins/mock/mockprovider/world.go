package mockprovider

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"

	"github.com/bulwark-iac/bulwark/sdk"
)

// WorldFile is the name of the file, in the data folder, that holds the
// mock's world.
const WorldFile = "world.json"

// worldVersion is the format version of WorldFile.
const worldVersion = 1

// world is everything the mock remembers between calls and runs.
type world struct {
	Version   int         `json:"version"`
	Resources []*resource `json:"resources"`
	// FailDelete holds the fail_delete counters, keyed by resource name.
	FailDelete map[string]*counter `json:"fail_delete,omitempty"`
}

// resource is one simulated resource.
type resource struct {
	ID             string         `json:"id"`
	Type           string         `json:"type"`
	Name           string         `json:"name"`
	IdempotencyKey string         `json:"idempotency_key"`
	Attributes     sdk.Attributes `json:"attributes"`
}

// counter is a fail_delete counter: Configured is the value of the config
// that armed it, Remaining how many Deletes are still to fail.
type counter struct {
	Configured int `json:"configured"`
	Remaining  int `json:"remaining"`
}

func worldPath(dataDir string) string { return filepath.Join(dataDir, WorldFile) }

// loadWorld reads the world; a missing file is an empty world.
func loadWorld(dataDir string) (*world, error) {
	b, err := os.ReadFile(worldPath(dataDir))
	if errors.Is(err, fs.ErrNotExist) {
		return &world{Version: worldVersion}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read mock world: %w", err)
	}
	var w world
	if err := json.Unmarshal(b, &w); err != nil {
		return nil, fmt.Errorf("mock world %s is corrupt: %w", worldPath(dataDir), err)
	}
	if w.Version != worldVersion {
		return nil, fmt.Errorf("mock world %s has format version %d; this provider reads %d", worldPath(dataDir), w.Version, worldVersion)
	}
	return &w, nil
}

// save writes the world atomically.
func (w *world) save(dataDir string) error {
	if w.Resources == nil {
		w.Resources = []*resource{}
	}
	b, err := json.MarshalIndent(w, "", "  ")
	if err != nil {
		return fmt.Errorf("encode mock world: %w", err)
	}
	return writeFileAtomic(worldPath(dataDir), append(b, '\n'))
}

func (w *world) find(match func(*resource) bool) *resource {
	for _, r := range w.Resources {
		if match(r) {
			return r
		}
	}
	return nil
}

func (w *world) byID(id string) *resource {
	return w.find(func(r *resource) bool { return r.ID == id })
}

func (w *world) byKey(key string) *resource {
	return w.find(func(r *resource) bool { return r.IdempotencyKey == key })
}

func (w *world) byTypeName(typ, name string) *resource {
	return w.find(func(r *resource) bool { return r.Type == typ && r.Name == name })
}

func (w *world) remove(id string) {
	for i, r := range w.Resources {
		if r.ID == id {
			w.Resources = append(w.Resources[:i], w.Resources[i+1:]...)
			return
		}
	}
}

// newID returns "mock-<type>-<name>-<8 hex>", unique in the world.
func (w *world) newID(typ, name string) (string, error) {
	for {
		var b [4]byte
		if _, err := rand.Read(b[:]); err != nil {
			return "", fmt.Errorf("generate id: %w", err)
		}
		id := fmt.Sprintf("mock-%s-%s-%s", typ, name, hex.EncodeToString(b[:]))
		if w.byID(id) == nil {
			return id, nil
		}
	}
}

// armFailDelete reconciles the fail_delete counters with the config: a name
// the config adds, or whose count it changes, is (re)armed with that count; a
// name the config no longer mentions is forgotten. It reports whether
// anything changed.
func (w *world) armFailDelete(cfg map[string]int) bool {
	changed := false
	for name, n := range cfg {
		if c, ok := w.FailDelete[name]; ok && c.Configured == n {
			continue
		}
		if w.FailDelete == nil {
			w.FailDelete = map[string]*counter{}
		}
		w.FailDelete[name] = &counter{Configured: n, Remaining: n}
		changed = true
	}
	for name := range w.FailDelete {
		if _, ok := cfg[name]; !ok {
			delete(w.FailDelete, name)
			changed = true
		}
	}
	return changed
}

// consumeFailDelete reports whether this Delete of name must fail, and
// counts it.
func (w *world) consumeFailDelete(name string) bool {
	c, ok := w.FailDelete[name]
	if !ok || c.Remaining <= 0 {
		return false
	}
	c.Remaining--
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
