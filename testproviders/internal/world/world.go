// Package world is the test providers' stand-in for a cloud API: a folder
// holding one JSON file per object, DIR/TYPE/ID.json. Tests read it to see
// what a run left behind, whatever the host did (including a kill -9 of
// Terraform or bulwark halfway through an apply).
//
// Each write goes to a temporary file in the same folder that is then
// renamed over the object's file, so a reader sees the old object or the new
// one, never half of one. Nothing is fsynced: the objects must survive the
// death of a process, not of the machine, and the benchmarks that drive
// 1,000 objects through these providers should measure the host, not disk
// flushes.
package world

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// ErrNotFound is returned by Get for an object the world does not hold.
var ErrNotFound = errors.New("no such object")

// EnvDir names the folder when the provider configuration does not.
const EnvDir = "BULWARK_TFTEST_WORLD"

// Thing is the object behind both providers' thing resources. Maps and
// slices are stored as given (nil as null, empty as empty) so that reading
// an object back gives the provider the same shape its configuration had.
type Thing struct {
	Type        string            `json:"type"`
	ID          string            `json:"id"`
	ARN         string            `json:"arn"`
	Name        string            `json:"name"`
	Size        int64             `json:"size"`
	Description *string           `json:"description"`
	Secret      *string           `json:"secret"`
	LegacyNote  *string           `json:"legacy_note"`
	Tags        map[string]string `json:"tags"`
	Revision    int64             `json:"revision"`
	// Token is rotated by every create and update and kept by the
	// framework provider in its private state too: an update whose private
	// token differs from the object's fails, which shows whether the host
	// carries private state from one call to the next.
	Token string `json:"token,omitempty"`

	Network *Network `json:"network"`
	Rules   []Rule   `json:"rules"`
	Ports   []Port   `json:"ports"`

	// The framework provider's nested attributes.
	Endpoint  *Endpoint           `json:"endpoint"`
	Listeners map[string]Listener `json:"listeners"`

	// Created and Updated are wall-clock stamps for people reading the
	// folder; no provider reads them back.
	Created time.Time `json:"created"`
	Updated time.Time `json:"updated"`
}

// Network is a single nested block.
type Network struct {
	CIDR   *string `json:"cidr"`
	Public *bool   `json:"public"`
}

// Rule is one element of a list block.
type Rule struct {
	Name     string `json:"name"`
	Priority *int64 `json:"priority"`
}

// Port is one element of a set block.
type Port struct {
	Number   int64   `json:"number"`
	Protocol *string `json:"protocol"`
}

// Endpoint is a single nested attribute.
type Endpoint struct {
	Host string `json:"host"`
	Port *int64 `json:"port"`
}

// Listener is one value of a map nested attribute.
type Listener struct {
	Port     int64   `json:"port"`
	Protocol *string `json:"protocol"`
}

// Item is the object behind the item resources: the smallest managed
// object, for benchmarks that should measure the host rather than a
// framework's walk over a large schema.
type Item struct {
	Type  string  `json:"type"`
	ID    string  `json:"id"`
	Name  string  `json:"name"`
	Value *string `json:"value"`
}

// Store is the world in folder Dir.
type Store struct {
	Dir string
}

// Open returns the world in dir, or in $BULWARK_TFTEST_WORLD when dir is
// empty, creating the folder.
func Open(dir string) (*Store, error) {
	if dir == "" {
		dir = os.Getenv(EnvDir)
	}
	if dir == "" {
		return nil, fmt.Errorf("no world folder: set world in the provider configuration or %s", EnvDir)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, fmt.Errorf("world: %w", err)
	}
	return &Store{Dir: abs}, nil
}

// NewID returns a fresh object id: 16 hex digits.
func NewID() string {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return hex.EncodeToString(b[:])
}

// NewToken returns a fresh private-state token.
func NewToken() string { return "t-" + NewID() }

func (s *Store) path(typ, id string) (string, error) {
	if !validName(typ) || !validName(id) {
		return "", fmt.Errorf("world: invalid object %q of type %q", id, typ)
	}
	return filepath.Join(s.Dir, typ, id+".json"), nil
}

// validName keeps ids (which import takes from a user) inside the folder.
func validName(s string) bool {
	if s == "" || s == "." || s == ".." || len(s) > 200 {
		return false
	}
	return !strings.ContainsAny(s, `/\`+"\x00")
}

// Put writes the object atomically, replacing any object of that id.
func (s *Store) Put(t *Thing) error { return s.write(t.Type, t.ID, t) }

// Get reads the object; ErrNotFound when there is none.
func (s *Store) Get(typ, id string) (*Thing, error) {
	var t Thing
	if err := s.read(typ, id, &t); err != nil {
		return nil, err
	}
	return &t, nil
}

// PutItem writes the item atomically, replacing any item of that id.
func (s *Store) PutItem(it *Item) error { return s.write(it.Type, it.ID, it) }

// GetItem reads the item; ErrNotFound when there is none.
func (s *Store) GetItem(typ, id string) (*Item, error) {
	var it Item
	if err := s.read(typ, id, &it); err != nil {
		return nil, err
	}
	return &it, nil
}

func (s *Store) write(typ, id string, v any) error {
	p, err := s.path(typ, id)
	if err != nil {
		return err
	}
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	dir := filepath.Dir(p)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("world: %w", err)
	}
	f, err := os.CreateTemp(dir, ".tmp-"+id+"-*")
	if err != nil {
		return fmt.Errorf("world: %w", err)
	}
	_, werr := f.Write(append(data, '\n'))
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("world: write %s: %w", p, err)
	}
	if err := os.Rename(f.Name(), p); err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("world: %w", err)
	}
	return nil
}

func (s *Store) read(typ, id string, v any) error {
	p, err := s.path(typ, id)
	if err != nil {
		return err
	}
	data, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%s %s: %w", typ, id, ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("world: %w", err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("world: %s: %w", p, err)
	}
	return nil
}

// Delete removes the object; deleting one that is gone is no error, as
// with most cloud APIs seen through Terraform.
func (s *Store) Delete(typ, id string) error {
	p, err := s.path(typ, id)
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("world: %w", err)
	}
	return nil
}

// List returns every object of type typ, sorted by id.
func (s *Store) List(typ string) ([]*Thing, error) {
	if !validName(typ) {
		return nil, fmt.Errorf("world: invalid type %q", typ)
	}
	entries, err := os.ReadDir(filepath.Join(s.Dir, typ))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("world: %w", err)
	}
	var out []*Thing
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") || !strings.HasSuffix(name, ".json") {
			continue
		}
		t, err := s.Get(typ, strings.TrimSuffix(name, ".json"))
		if errors.Is(err, ErrNotFound) {
			continue // deleted while we listed
		}
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// FindByName returns the one object of type typ named name.
func (s *Store) FindByName(typ, name string) (*Thing, error) {
	all, err := s.List(typ)
	if err != nil {
		return nil, err
	}
	var found []*Thing
	for _, t := range all {
		if t.Name == name {
			found = append(found, t)
		}
	}
	switch len(found) {
	case 0:
		return nil, fmt.Errorf("%s named %q: %w", typ, name, ErrNotFound)
	case 1:
		return found[0], nil
	}
	return nil, fmt.Errorf("%d objects of type %s are named %q", len(found), typ, name)
}

// Latency sleeps d, or until ctx ends: the providers' latency_ms knob, the
// stand-in for an API's round trip.
func Latency(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// ARN is the arn-like name both providers compute for an object.
func ARN(provider, typ, id string) string {
	return "arn:bulwark:" + provider + ":local:" + strings.TrimPrefix(typ, provider+"_") + "/" + id
}
