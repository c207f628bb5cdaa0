package tfinstall

import (
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// IntegrityError refuses a package whose hash the lock does not list.
type IntegrityError struct {
	Source Source
	Path   string
	Want   []Hash // the lock's hashes of the kind compared
	Got    Hash
}

func (e *IntegrityError) Error() string {
	want := make([]string, len(e.Want))
	for i, h := range e.Want {
		want[i] = string(h)
	}
	return fmt.Sprintf("provider %s: %s has hash %s, but bulwark.lock says %s: refusing to run it (if the change is intended, run `bulwark providers install %s` again)",
		e.Source, e.Path, e.Got, strings.Join(want, " or "), e.Source)
}

// NotLockedError says the lock holds no hash a package can be checked
// against.
type NotLockedError struct{ Source Source }

func (e *NotLockedError) Error() string {
	return fmt.Sprintf("provider %s: bulwark.lock holds no h1: or zh: hash for it: run `bulwark providers install %s` to record one", e.Source, e.Source)
}

// Verify checks a package as it is now against the lock's hashes: its h1:
// when the lock lists any, else (a packed package the lock knows by its
// zip only) the zh: of the zip it was unpacked from, and that the folder
// still holds exactly the zip's files.
func Verify(p *Package, want []Hash) error {
	got, err := p.Hash()
	if err != nil {
		return fmt.Errorf("provider %s: %w", p.Source, err)
	}
	return check(p, want, got)
}

func check(p *Package, want []Hash, got Hash) error {
	var h1 []Hash
	var zh []Hash
	for _, h := range want {
		switch h.Scheme() {
		case SchemeH1:
			h1 = append(h1, h)
		case SchemeZH:
			zh = append(zh, h)
		}
	}
	if len(h1) > 0 {
		if !slices.Contains(h1, got) {
			return &IntegrityError{Source: p.Source, Path: p.Dir, Want: h1, Got: got}
		}
		return nil
	}
	if len(zh) > 0 && p.Zip != "" {
		if err := checkZip(p.Source, p.Zip, zh); err != nil {
			return err
		}
		content, err := HashZipContent(p.Zip)
		if err != nil {
			return fmt.Errorf("provider %s: %w", p.Source, err)
		}
		if content != got {
			return &IntegrityError{Source: p.Source, Path: p.Dir, Want: []Hash{content}, Got: got}
		}
		return nil
	}
	if len(zh) > 0 {
		return &IntegrityError{Source: p.Source, Path: p.Dir, Want: zh, Got: got}
	}
	return &NotLockedError{Source: p.Source}
}

// CopyVerified copies a package's files into dst (a private folder of the
// caller's, made if missing), hashing the bytes as it copies them, and
// returns the copy's executable path once the copy's h1: passes Verify's
// check against want. The copy is what runs: whatever happens to the
// package's folder after the check, the bytes executed are the bytes
// verified. On a mismatch the copy is removed.
func CopyVerified(p *Package, dst string, want []Hash) (string, error) {
	if err := os.MkdirAll(dst, 0o700); err != nil {
		return "", err
	}
	sums := make([]fileSum, 0, len(p.Files))
	for _, f := range p.Files {
		sum, err := copyFile(filepath.Join(p.Dir, filepath.FromSlash(f)), filepath.Join(dst, filepath.FromSlash(f)), f == p.Exe)
		if err != nil {
			os.RemoveAll(dst)
			return "", fmt.Errorf("provider %s: copy %s: %w", p.Source, f, err)
		}
		sums = append(sums, fileSum{name: f, sum: sum})
	}
	got, err := hash1(sums)
	if err == nil {
		err = check(p, want, got)
	}
	if err != nil {
		os.RemoveAll(dst)
		return "", err
	}
	return filepath.Join(dst, filepath.FromSlash(p.Exe)), nil
}

func copyFile(src, dst string, exe bool) ([]byte, error) {
	in, err := os.Open(src)
	if err != nil {
		return nil, err
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return nil, err
	}
	perm := os.FileMode(0o400)
	if exe {
		perm = 0o500
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return nil, err
	}
	h := sha256.New()
	_, err = io.Copy(io.MultiWriter(out, h), in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return h.Sum(nil), err
}

// Pin returns the hashes a lock records for a package found on this
// machine: its h1:, and the zh: of the zip it was unpacked from, if any.
// A bare executable whose name says no version cannot be pinned: a lock
// entry names a version.
func Pin(p *Package) ([]Hash, error) {
	if p.Version == "" {
		return nil, fmt.Errorf("provider %s: %s says no version: name it %s_vVERSION, or keep it in a filesystem mirror's layout, to pin it", p.Source, p.ExePath(), p.Source.ExeName())
	}
	h1, err := p.Hash()
	if err != nil {
		return nil, fmt.Errorf("provider %s: %w", p.Source, err)
	}
	out := []Hash{h1}
	if p.Zip != "" {
		zh, err := HashZip(p.Zip)
		if err != nil {
			return nil, fmt.Errorf("provider %s: %w", p.Source, err)
		}
		out = append(out, zh)
	}
	slices.Sort(out)
	return out, nil
}
