package tfinstall

import (
	"archive/zip"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Hash is one of Terraform's package hashes, with its scheme prefix:
// "h1:BASE64" (the unpacked package's files) or "zh:HEX" (the .zip).
type Hash string

// The schemes Terraform writes in lock files.
const (
	SchemeH1 = "h1:"
	SchemeZH = "zh:"
)

// Scheme returns "h1:", "zh:" or "" for a hash of neither scheme.
func (h Hash) Scheme() string {
	switch s := string(h); {
	case strings.HasPrefix(s, SchemeH1):
		return SchemeH1
	case strings.HasPrefix(s, SchemeZH):
		return SchemeZH
	}
	return ""
}

// ParseHash checks a hash's scheme and encoding.
func ParseHash(s string) (Hash, error) {
	h := Hash(s)
	switch h.Scheme() {
	case SchemeH1:
		b, err := base64.StdEncoding.DecodeString(s[len(SchemeH1):])
		if err != nil || len(b) != sha256.Size {
			return "", fmt.Errorf("hash %q: h1: wants the base64 of a SHA-256", s)
		}
	case SchemeZH:
		b, err := hex.DecodeString(s[len(SchemeZH):])
		if err != nil || len(b) != sha256.Size || strings.ToLower(s) != s {
			return "", fmt.Errorf("hash %q: zh: wants the lowercase hex of a SHA-256", s)
		}
	default:
		return "", fmt.Errorf("hash %q: want an h1: or zh: hash", s)
	}
	return h, nil
}

// HashFiles computes the h1: hash of files, paths relative to dir with
// slashes: golang.org/x/mod/sumdb/dirhash.Hash1, which is what Terraform's
// PackageHashV1 computes (dirhash.HashDir of the unpacked package).
func HashFiles(dir string, files []string) (Hash, error) {
	sums := make([]fileSum, 0, len(files))
	for _, f := range files {
		sum, err := fileSHA256(filepath.Join(dir, filepath.FromSlash(f)))
		if err != nil {
			return "", err
		}
		sums = append(sums, fileSum{name: f, sum: sum})
	}
	return hash1(sums)
}

// HashDir computes the h1: hash of every file under dir, as Terraform
// hashes an unpacked package folder.
func HashDir(dir string) (Hash, error) {
	files, err := packageFiles(dir)
	if err != nil {
		return "", err
	}
	return HashFiles(dir, files)
}

// HashZipContent computes the h1: hash of a .zip's files: the h1: the
// folder it unpacks into has. (Folder entries are not files: they are
// skipped, as in the unpacked folder.)
func HashZipContent(path string) (Hash, error) {
	z, err := zip.OpenReader(path)
	if err != nil {
		return "", err
	}
	defer z.Close()
	var sums []fileSum
	for _, f := range z.File {
		if f.FileInfo().IsDir() {
			continue
		}
		r, err := f.Open()
		if err != nil {
			return "", err
		}
		h := sha256.New()
		_, err = io.Copy(h, r)
		r.Close()
		if err != nil {
			return "", fmt.Errorf("%s: %s: %w", path, f.Name, err)
		}
		sums = append(sums, fileSum{name: f.Name, sum: h.Sum(nil)})
	}
	return hash1(sums)
}

// HashZip computes the zh: hash of a .zip: the hex SHA-256 of its bytes.
func HashZip(path string) (Hash, error) {
	sum, err := fileSHA256(path)
	if err != nil {
		return "", err
	}
	return ZHFromSum(sum), nil
}

// ZHFromSum makes the zh: hash of a .zip from its SHA-256.
func ZHFromSum(sum []byte) Hash { return Hash(SchemeZH + hex.EncodeToString(sum)) }

// fileSum is one file's SHA-256, by its slash-separated relative name.
type fileSum struct {
	name string
	sum  []byte
}

// hash1 is dirhash.Hash1 over sums computed elsewhere (while copying or
// unzipping, so the bytes are read once): a SHA-256 over the lines
// "HEXSUM  NAME\n", sorted by name, in base64.
func hash1(sums []fileSum) (Hash, error) {
	sums = slices.Clone(sums)
	slices.SortFunc(sums, func(a, b fileSum) int { return strings.Compare(a.name, b.name) })
	h := sha256.New()
	for _, s := range sums {
		if strings.Contains(s.name, "\n") {
			return "", errors.New("a file name with a newline cannot be hashed")
		}
		fmt.Fprintf(h, "%x  %s\n", s.sum, s.name)
	}
	return Hash(SchemeH1 + base64.StdEncoding.EncodeToString(h.Sum(nil))), nil
}

func fileSHA256(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return nil, err
	}
	return h.Sum(nil), nil
}

// packageFiles lists the files under dir, relative, slash-separated, as
// dirhash.DirFiles does. A link or any other non-regular file is refused:
// what it points to could change after the hash.
func packageFiles(dir string) ([]string, error) {
	var files []string
	dir = filepath.Clean(dir)
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s: not a regular file", p)
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		files = append(files, filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.Sort(files)
	return files, nil
}
