package awsprovider

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/bulwark-iac/bulwark/sdk/atomicfile"
)

// intentsFile is the file in the data folder that records, before each
// Create reaches AWS, which resource the Create's idempotency key is about.
const intentsFile = "create-intents.json"

// intent is what a Create under a key set out to make.
type intent struct {
	Type string    `json:"type"`
	Name string    `json:"name"` // the bucket or table name
	At   time.Time `json:"at"`
}

// intents is the record of Creates by idempotency key. It lets a Create that
// died after AWS made the resource but before the key was written onto it
// recognise the resource as its own when retried, and lets a Read by key
// find the resource's name when the request carries no config. It lives in
// the data folder the host assigns (in memory when there is none). Entries
// go when their resource is deleted.
type intents struct {
	mu   sync.Mutex
	path string // "" keeps them in memory
	mem  map[string]intent
}

func newIntents(dataDir string) *intents {
	in := &intents{mem: map[string]intent{}}
	if dataDir != "" {
		in.path = filepath.Join(dataDir, intentsFile)
	}
	return in
}

// load reads the file; in.mu must be held.
func (in *intents) load() (map[string]intent, error) {
	if in.path == "" {
		return in.mem, nil
	}
	b, err := os.ReadFile(in.path)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]intent{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read create intents: %w", err)
	}
	m := map[string]intent{}
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("read create intents %s: %w", in.path, err)
	}
	return m, nil
}

// save writes the file atomically; in.mu must be held.
func (in *intents) save(m map[string]intent) error {
	if in.path == "" {
		in.mem = m
		return nil
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(in.path, append(b, '\n'), 0o600)
}

// record notes that a Create under key is about to make typ name.
func (in *intents) record(key, typ, name string, now time.Time) error {
	in.mu.Lock()
	defer in.mu.Unlock()
	m, err := in.load()
	if err != nil {
		return err
	}
	if cur, ok := m[key]; ok && cur.Type == typ && cur.Name == name {
		return nil
	}
	m[key] = intent{Type: typ, Name: name, At: now.UTC()}
	return in.save(m)
}

// lookup returns what a Create under key set out to make.
func (in *intents) lookup(key string) (intent, bool, error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	m, err := in.load()
	if err != nil {
		return intent{}, false, err
	}
	it, ok := m[key]
	return it, ok, nil
}

// forget drops every entry about typ name, once it is deleted.
func (in *intents) forget(typ, name string) error {
	in.mu.Lock()
	defer in.mu.Unlock()
	m, err := in.load()
	if err != nil {
		return err
	}
	changed := false
	for k, it := range m {
		if it.Type == typ && it.Name == name {
			delete(m, k)
			changed = true
		}
	}
	if !changed {
		return nil
	}
	return in.save(m)
}

// drop removes the entry of key, once a Create under it knows it made
// nothing.
func (in *intents) drop(key string) error {
	in.mu.Lock()
	defer in.mu.Unlock()
	m, err := in.load()
	if err != nil {
		return err
	}
	if _, ok := m[key]; !ok {
		return nil
	}
	delete(m, key)
	return in.save(m)
}
