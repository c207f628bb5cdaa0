package tfinstall

import (
	"archive/zip"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// maxUnpacked bounds what one package may unpack to: the largest providers
// unpack to under 1 GiB; a zip bomb stops here.
const maxUnpacked = 4 << 30

// unpack checks a packed candidate against the request's hashes, then
// unpacks it under UnpackDir and returns the unpacked package.
func (f *Finder) unpack(ctx context.Context, req Request, c candidate) (*Package, error) {
	if f.UnpackDir == "" {
		return nil, fmt.Errorf("provider %s: %s is packed, and there is no folder to unpack it to (set %s)", req.Source, c.zip, EnvProviderDir)
	}
	if err := checkZip(req.Source, c.zip, req.Hashes); err != nil {
		return nil, err
	}
	target := unpackedDir(f.UnpackDir, req.Source, c.version, c.platform)
	files, _, err := unpackTo(ctx, c.zip, target)
	if err != nil {
		return nil, fmt.Errorf("provider %s: unpack %s: %w", req.Source, c.zip, err)
	}
	exe := findExe(target, req.Source.Type, c.version)
	if exe == "" {
		return nil, fmt.Errorf("provider %s: %s %w", req.Source, c.zip, errNoExe)
	}
	return &Package{Source: req.Source, Version: c.version, Platform: c.platform, Dir: target, Files: files, Exe: exe, Zip: c.zip, Location: c.location}, nil
}

// checkZip refuses a zip that matches none of want's hashes of its kind:
// its zh: when want lists any, else the h1: of its files. An empty want
// (nothing locked yet) checks nothing.
func checkZip(src Source, zipPath string, want []Hash) error {
	var zh, h1 []Hash
	for _, h := range want {
		switch h.Scheme() {
		case SchemeZH:
			zh = append(zh, h)
		case SchemeH1:
			h1 = append(h1, h)
		}
	}
	switch {
	case len(zh) > 0:
		got, err := HashZip(zipPath)
		if err != nil {
			return fmt.Errorf("provider %s: %w", src, err)
		}
		if !slices.Contains(zh, got) {
			return &IntegrityError{Source: src, Path: zipPath, Want: zh, Got: got}
		}
	case len(h1) > 0:
		got, err := HashZipContent(zipPath)
		if err != nil {
			return fmt.Errorf("provider %s: %w", src, err)
		}
		if !slices.Contains(h1, got) {
			return &IntegrityError{Source: src, Path: zipPath, Want: h1, Got: got}
		}
	}
	return nil
}

// unpackedDir is a package's folder in the unpacked layout under root.
func unpackedDir(root string, src Source, version string, p Platform) string {
	return filepath.Join(root, src.Host, src.Namespace, src.Type, version, p.String())
}

// unpackTo unpacks a zip into target, replacing what target held unless it
// already holds exactly the zip's files; it returns the files and their
// h1: hash. The zip is unpacked beside target first, then renamed into
// place, so a reader never sees half a package.
func unpackTo(ctx context.Context, zipPath, target string) ([]string, Hash, error) {
	parent := filepath.Dir(target)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, "", err
	}
	tmp, err := os.MkdirTemp(parent, ".unpack-*")
	if err != nil {
		return nil, "", err
	}
	defer os.RemoveAll(tmp)
	sums, err := unzip(ctx, zipPath, tmp)
	if err != nil {
		return nil, "", err
	}
	h, err := hash1(sums)
	if err != nil {
		return nil, "", err
	}
	files := make([]string, 0, len(sums))
	for _, s := range sums {
		files = append(files, s.name)
	}
	slices.Sort(files)
	if have, err := HashDir(target); err == nil && have == h {
		return files, h, nil
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return nil, "", err
	}
	// A rename onto a folder that exists fails: then another process may
	// have just unpacked the same files (kept, and in use), or target
	// holds something else (moved aside, then replaced).
	err = os.Rename(tmp, target)
	if err == nil {
		return files, h, nil
	}
	if have, herr := HashDir(target); herr == nil && have == h {
		return files, h, nil
	}
	old := tmp + ".old"
	if err := os.Rename(target, old); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, "", err
	}
	if err := os.Rename(tmp, target); err != nil {
		return nil, "", err
	}
	os.RemoveAll(old)
	return files, h, nil
}

// unzip writes a zip's files under dst and returns their SHA-256s. A name
// that would land outside dst, a link, or more than maxUnpacked bytes is
// refused.
func unzip(ctx context.Context, zipPath, dst string) ([]fileSum, error) {
	z, err := zip.OpenReader(zipPath)
	if err != nil {
		return nil, err
	}
	defer z.Close()
	var sums []fileSum
	var total int64
	for _, f := range z.File {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		name := f.Name
		if name == "" || strings.Contains(name, `\`) || path.IsAbs(name) || !filepath.IsLocal(filepath.FromSlash(name)) || path.Clean(name) != strings.TrimSuffix(name, "/") {
			return nil, fmt.Errorf("%s: unsafe file name %q", zipPath, name)
		}
		mode := f.Mode()
		if mode.IsDir() {
			if err := os.MkdirAll(filepath.Join(dst, filepath.FromSlash(name)), 0o755); err != nil {
				return nil, err
			}
			continue
		}
		if !mode.IsRegular() {
			return nil, fmt.Errorf("%s: %s is not a regular file", zipPath, name)
		}
		out := filepath.Join(dst, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			return nil, err
		}
		perm := os.FileMode(0o644)
		if mode.Perm()&0o111 != 0 {
			perm = 0o755
		}
		sum, n, err := writeZipFile(f, out, perm, maxUnpacked-total)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", zipPath, name, err)
		}
		total += n
		sums = append(sums, fileSum{name: name, sum: sum})
	}
	return sums, nil
}

func writeZipFile(f *zip.File, out string, perm os.FileMode, limit int64) ([]byte, int64, error) {
	r, err := f.Open()
	if err != nil {
		return nil, 0, err
	}
	defer r.Close()
	w, err := os.OpenFile(out, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return nil, 0, err
	}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(w, h), io.LimitReader(r, limit+1))
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err == nil && n > limit {
		err = fmt.Errorf("unpacks to more than %d bytes", int64(maxUnpacked))
	}
	return h.Sum(nil), n, err
}
