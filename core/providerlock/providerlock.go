// Package providerlock reads and writes bulwark.lock, the file beside a spec
// that pins the sha256 of every provider plugin the spec uses.
//
// When the file exists, every command that starts a provider for that spec
// refuses a plugin whose bytes differ and runs a private copy of the bytes
// it verified (see pluginhost.Config.SHA256). It is meant to be committed
// next to the spec, like a go.sum.
package providerlock

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"github.com/bulwark-iac/bulwark/sdk/atomicfile"
)

// FileName is the lock file's name, in the spec's folder.
const FileName = "bulwark.lock"

// Version is the format this package writes.
const Version = 1

// Entry pins one plugin.
type Entry struct {
	SHA256 string `json:"sha256"`
}

// File is a bulwark.lock.
type File struct {
	Version   int              `json:"version"`
	Providers map[string]Entry `json:"providers"` // keyed by plugin name (source)
}

// PathFor returns where the lock of the spec at specPath lives.
func PathFor(specPath string) string {
	return filepath.Join(filepath.Dir(specPath), FileName)
}

// Read reads a lock file; a missing file is (nil, nil).
func Read(path string) (*File, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	var f File
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if f.Version != Version {
		return nil, fmt.Errorf("read %s: unsupported version %d", path, f.Version)
	}
	for name, e := range f.Providers {
		if len(e.SHA256) != 64 {
			return nil, fmt.Errorf("read %s: provider %s: bad sha256 %q", path, name, e.SHA256)
		}
	}
	return &f, nil
}

// Write writes f atomically, its providers sorted (encoding/json sorts map
// keys), so the file diffs cleanly.
func Write(path string, f *File) error {
	f.Version = Version
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(path, append(b, '\n'), 0o644)
}

// Names returns the pinned plugin names, sorted.
func (f *File) Names() []string {
	out := make([]string, 0, len(f.Providers))
	for n := range f.Providers {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// NotPinnedError is returned for a provider the lock does not name.
type NotPinnedError struct {
	Source string
	Path   string
}

func (e *NotPinnedError) Error() string {
	return fmt.Sprintf("provider %s is not pinned in %s: run `bulwark providers lock SPEC` to add it", e.Source, e.Path)
}
