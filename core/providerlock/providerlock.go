// Package providerlock reads and writes bulwark.lock, the file beside a spec
// that pins the sha256 of every provider plugin the spec uses, and the
// version and Terraform hashes (h1:, zh:) of every Terraform-protocol
// provider package.
//
// When the file exists, every command that starts a provider for that spec
// refuses a plugin whose bytes differ and runs a private copy of the bytes
// it verified (see pluginhost.Config.SHA256). It is meant to be committed
// next to the spec, like a go.sum.
//
// The package also does the work of the commands that write the file and
// describe what it pins, so that they only parse flags and print: Lock
// (`providers lock`), InstallSpec and InstallSources (`providers install`)
// in pin.go, and Describe (`providers SPEC`) in describe.go.
package providerlock

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

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

// TerraformEntry pins one Terraform-protocol provider package, as
// Terraform's .terraform.lock.hcl does: the version chosen, the constraint
// it was chosen under, and the package's hashes ("h1:…" over the unpacked
// files, "zh:…" of the .zip archives), sorted. Whatever runs must match one
// of them.
type TerraformEntry struct {
	Version     string   `json:"version"`
	Constraints string   `json:"constraints,omitempty"`
	Hashes      []string `json:"hashes"`
}

// File is a bulwark.lock.
//
// Terraform providers were added to version 1 without a version change: a
// file without them is unchanged, and a file with them still loads in a
// bulwark that predates them (it ignores the field, and cannot run such
// providers anyway).
type File struct {
	Version   int              `json:"version"`
	Providers map[string]Entry `json:"providers"` // keyed by plugin name (source)
	// Terraform is keyed by the fully qualified source address,
	// HOST/NAMESPACE/TYPE (registry.terraform.io/hashicorp/random).
	Terraform map[string]TerraformEntry `json:"terraform_providers,omitempty"`
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
	for name, e := range f.Terraform {
		if err := e.check(); err != nil {
			return nil, fmt.Errorf("read %s: terraform provider %s: %w", path, name, err)
		}
	}
	return &f, nil
}

// Write writes f atomically, its providers sorted (encoding/json sorts map
// keys), so the file diffs cleanly.
func Write(path string, f *File) error {
	f.Version = Version
	// Constraints as written ("~> 3.6"), not HTML-escaped: the file is
	// read and reviewed by people.
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(f); err != nil {
		return err
	}
	return atomicfile.Write(path, b.Bytes(), 0o644)
}

// check refuses an entry no package could be verified against.
func (e TerraformEntry) check() error {
	if e.Version == "" {
		return fmt.Errorf("no version")
	}
	if len(e.Hashes) == 0 {
		return fmt.Errorf("no hashes")
	}
	for _, h := range e.Hashes {
		if !strings.HasPrefix(h, "h1:") && !strings.HasPrefix(h, "zh:") {
			return fmt.Errorf("hash %q: want h1: or zh:", h)
		}
	}
	return nil
}

// SetTerraform records a Terraform provider package. The hashes of an entry
// already recorded at the same version are kept beside the new ones (they
// may be another platform's), as Terraform merges its lock file; a new
// version replaces them.
func (f *File) SetTerraform(source string, e TerraformEntry) {
	if f.Terraform == nil {
		f.Terraform = map[string]TerraformEntry{}
	}
	if old, ok := f.Terraform[source]; ok && old.Version == e.Version {
		e.Hashes = append(slices.Clone(old.Hashes), e.Hashes...)
	}
	e.Hashes = slices.Clone(e.Hashes)
	slices.Sort(e.Hashes)
	e.Hashes = slices.Compact(e.Hashes)
	f.Terraform[source] = e
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

// TerraformNotPinnedError is returned for a Terraform provider the lock
// does not name.
type TerraformNotPinnedError struct {
	Source string // HOST/NAMESPACE/TYPE
	Path   string
}

func (e *TerraformNotPinnedError) Error() string {
	return fmt.Sprintf("terraform provider %s is not pinned in %s: run `bulwark providers install %s` to add it", e.Source, e.Path, e.Source)
}

// HashMismatchError refuses to pin a Terraform provider package whose
// hashes share none with the ones the lock already records for the same
// version: the bytes found are not the bytes pinned (a package changed, or
// another one put in its place). The lock is not written.
type HashMismatchError struct {
	Source  string // HOST/NAMESPACE/TYPE
	Version string
	Locked  []string // the lock's hashes
	Found   []string // the package's
	Path    string   // the lock file
}

func (e *HashMismatchError) Error() string {
	return fmt.Sprintf("terraform provider %s %s: the package found has hash %s, but %s records %s for that version: refusing to pin other bytes under it (if the change is intended, remove its entry from %s and pin it again)",
		e.Source, e.Version, strings.Join(e.Found, ", "), e.Path, strings.Join(e.Locked, ", "), e.Path)
}

// CheckTerraform refuses (HashMismatchError) hashes for a package of
// source at version when f already records that version with hashes none
// of which is among them, as Terraform refuses a package that matches no
// checksum its lock file records. A version not recorded yet is no
// mismatch: it replaces the entry.
func (f *File) CheckTerraform(path, source, version string, hashes []string) error {
	if f == nil {
		return nil
	}
	old, ok := f.Terraform[source]
	if !ok || old.Version != version {
		return nil
	}
	for _, h := range hashes {
		if slices.Contains(old.Hashes, h) {
			return nil
		}
	}
	return &HashMismatchError{Source: source, Version: version, Locked: slices.Clone(old.Hashes), Found: slices.Clone(hashes), Path: path}
}
