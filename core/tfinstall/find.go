package tfinstall

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Package is a provider package found on disk, unpacked: the files Dir
// holds that make it up (Files) and the executable among them.
type Package struct {
	Source Source
	// Version is the package's version ("1.2.3"); "" for a bare executable
	// terraform-provider-TYPE whose name says none (its bytes are then
	// pinned by the lock's hash alone).
	Version  string
	Platform Platform
	// Dir is the unpacked package folder (for a bare executable, the
	// folder that holds it); Files are the package's files in it, relative
	// and slash-separated, as they are hashed (h1:).
	Dir   string
	Files []string
	// Exe is the executable's name among Files.
	Exe string
	// Zip is the packed archive Dir was unpacked from, "" if none.
	Zip string
	// Location is the searched folder that held it.
	Location string
}

// ExePath is the executable's absolute path.
func (p *Package) ExePath() string { return filepath.Join(p.Dir, filepath.FromSlash(p.Exe)) }

// Hash computes the package's h1: hash from its files as they are now.
func (p *Package) Hash() (Hash, error) { return HashFiles(p.Dir, p.Files) }

// Finder finds installed provider packages.
type Finder struct {
	Locations Locations
	// Platform is the platform wanted; the zero value is the current one.
	Platform Platform
	// UnpackDir is where a packed .zip is unpacked to run (in the unpacked
	// layout); "" refuses packed packages.
	UnpackDir string
}

// Request is what to find.
type Request struct {
	Source      Source
	Constraints Constraints
	// Version, when set (from the lock), is the only version accepted.
	Version string
	// Hashes (from the lock), when set, a packed .zip must match (its zh:,
	// or the h1: of its files) before it is unpacked.
	Hashes []Hash
}

// Seen is a version found that was not taken, and why.
type Seen struct {
	Version  string
	Platform Platform
	Path     string
}

// NotFoundError says no folder holds a package the request allows.
type NotFoundError struct {
	Source      Source
	Constraints Constraints
	Version     string // the locked version, if any
	Platform    Platform
	Looked      []string
	Seen        []Seen
}

func (e *NotFoundError) Error() string {
	var b strings.Builder
	want := "any version"
	if e.Version != "" {
		want = "version " + e.Version + " (pinned in bulwark.lock)"
	} else if e.Constraints.String() != "" {
		want = "a version matching " + fmt.Sprintf("%q", e.Constraints.String())
	}
	fmt.Fprintf(&b, "provider %s: no package of %s for %s", e.Source, want, e.Platform)
	fmt.Fprintf(&b, "; looked in %s", strings.Join(e.Looked, ", "))
	if len(e.Seen) > 0 {
		var seen []string
		for _, s := range e.Seen {
			v := s.Version
			if v == "" {
				v = "unversioned"
			}
			seen = append(seen, fmt.Sprintf("%s (%s) at %s", v, s.Platform, s.Path))
		}
		fmt.Fprintf(&b, "; saw, not matching: %s", strings.Join(seen, ", "))
	} else {
		b.WriteString("; found no version of it")
	}
	b.WriteString(" (install it with `bulwark providers install " + e.Source.String() + "`, or put it in a filesystem mirror)")
	return b.String()
}

// candidate is one package a folder holds.
type candidate struct {
	version  string // canonical; "" when the executable's name says none
	platform Platform
	dir      string   // unpacked package folder, or the bare executable's folder
	files    []string // set for a bare executable
	exe      string   // relative to dir; "" for a packed one
	zip      string   // the packed archive
	location string
}

func (c candidate) path() string {
	if c.zip != "" {
		return c.zip
	}
	if c.files != nil {
		return filepath.Join(c.dir, c.exe)
	}
	return c.dir
}

// Find returns the package of the first location, in order, that holds a
// version the request allows: the newest such version in it (an unpacked
// folder before a packed zip of the same version). A packed zip is checked
// against req.Hashes, then unpacked under UnpackDir, and the unpacked copy
// is returned.
func (f *Finder) Find(ctx context.Context, req Request) (*Package, error) {
	plat := f.Platform
	if plat == (Platform{}) {
		plat = CurrentPlatform()
	}
	nf := &NotFoundError{Source: req.Source, Constraints: req.Constraints, Version: req.Version, Platform: plat}
	pluginDirs := map[string]bool{}
	for _, d := range f.Locations.PluginDirs {
		pluginDirs[d] = true
	}
	for _, loc := range f.Locations.All() {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		nf.Looked = append(nf.Looked, loc)
		cands, err := scan(loc, req.Source, pluginDirs[loc])
		if err != nil {
			return nil, err
		}
		var ok []candidate
		for _, c := range cands {
			if c.platform != plat || !allows(req, c.version) {
				nf.Seen = append(nf.Seen, Seen{Version: c.version, Platform: c.platform, Path: c.path()})
				continue
			}
			ok = append(ok, c)
		}
		if len(ok) == 0 {
			continue
		}
		best := newest(ok)
		if best.zip == "" {
			return best.pkg(req.Source)
		}
		return f.unpack(ctx, req, best)
	}
	return nil, nf
}

// allows says whether a candidate's version is acceptable. A bare
// executable without a version is: its version cannot be checked, and the
// lock's hash pins its bytes.
func allows(req Request, v string) bool {
	if v == "" {
		return true
	}
	if req.Version != "" {
		want, ok := canonicalVersion(req.Version)
		return ok && want == v
	}
	return req.Constraints.Allows(v)
}

// newest picks the newest version; of one version, the unpacked folder.
func newest(cs []candidate) candidate {
	versions := make([]string, 0, len(cs))
	for _, c := range cs {
		versions = append(versions, c.version)
	}
	sortVersions(versions)
	top := versions[0]
	if _, ok := canonicalVersion(top); !ok {
		top = "" // only unversioned executables
	}
	var best *candidate
	for i := range cs {
		c := &cs[i]
		if c.version != top {
			continue
		}
		if best == nil || (best.zip != "" && c.zip == "") {
			best = c
		}
	}
	return *best
}

func (c candidate) pkg(src Source) (*Package, error) {
	p := &Package{Source: src, Version: c.version, Platform: c.platform, Dir: c.dir, Exe: c.exe, Location: c.location}
	if c.files != nil {
		p.Files = c.files
	} else {
		files, err := packageFiles(c.dir)
		if err != nil {
			return nil, fmt.Errorf("provider %s: %w", src, err)
		}
		p.Files = files
	}
	abs, err := filepath.Abs(p.Dir)
	if err != nil {
		return nil, err
	}
	p.Dir = abs
	return p, nil
}

// scan lists the packages of src that loc holds, for every platform.
func scan(loc string, src Source, pluginDir bool) ([]candidate, error) {
	var out []candidate
	for _, host := range matchingDirs(loc, src.Host, normaliseHost) {
		for _, ns := range matchingDirs(host, src.Namespace, parsePart) {
			for _, typ := range matchingDirs(ns, src.Type, parsePart) {
				cs, err := scanTypeDir(loc, typ, src)
				if err != nil {
					return nil, err
				}
				out = append(out, cs...)
			}
		}
	}
	if pluginDir {
		out = append(out, scanBare(loc, loc, src, Platform{})...)
		// Terraform 0.12's layout: DIR/OS_ARCH/terraform-provider-TYPE_vX.
		entries, _ := os.ReadDir(loc)
		for _, e := range entries {
			if p, err := ParsePlatform(e.Name()); err == nil && e.IsDir() {
				out = append(out, scanBare(loc, filepath.Join(loc, e.Name()), src, p)...)
			}
		}
	}
	return out, nil
}

// matchingDirs returns the folders in parent whose name, normalised, is
// want: mirrors are laid out by hand, and Terraform compares them so.
func matchingDirs(parent, want string, norm func(string) (string, error)) []string {
	entries, err := os.ReadDir(parent)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		if !isDir(parent, e) {
			continue
		}
		if n, err := norm(e.Name()); err == nil && n == want {
			out = append(out, filepath.Join(parent, e.Name()))
		}
	}
	return out
}

// isDir follows a link: a mirror may link its folders elsewhere.
func isDir(parent string, e fs.DirEntry) bool {
	if e.IsDir() {
		return true
	}
	if e.Type()&fs.ModeSymlink != 0 {
		fi, err := os.Stat(filepath.Join(parent, e.Name()))
		return err == nil && fi.IsDir()
	}
	return false
}

// scanTypeDir lists HOST/NAMESPACE/TYPE's packages: VERSION/OS_ARCH/
// folders (unpacked) and terraform-provider-TYPE_VERSION_OS_ARCH.zip files
// (packed).
func scanTypeDir(loc, dir string, src Source) ([]candidate, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil
	}
	var out []candidate
	for _, e := range entries {
		name := e.Name()
		if isDir(dir, e) {
			v, ok := canonicalVersion(name)
			if !ok {
				continue
			}
			plats, _ := os.ReadDir(filepath.Join(dir, name))
			for _, pe := range plats {
				p, err := ParsePlatform(pe.Name())
				if err != nil || !isDir(filepath.Join(dir, name), pe) {
					continue
				}
				pdir := filepath.Join(dir, name, pe.Name())
				exe := findExe(pdir, src.Type, v)
				if exe == "" {
					continue
				}
				out = append(out, candidate{version: v, platform: p, dir: pdir, exe: exe, location: loc})
			}
			continue
		}
		rest, ok := strings.CutPrefix(name, exePrefix+src.Type+"_")
		if !ok {
			continue
		}
		rest, ok = strings.CutSuffix(rest, ".zip")
		if !ok {
			continue
		}
		ver, platText, ok := strings.Cut(rest, "_")
		if !ok {
			continue
		}
		v, vok := canonicalVersion(ver)
		p, perr := ParsePlatform(platText)
		if !vok || perr != nil {
			continue
		}
		out = append(out, candidate{version: v, platform: p, zip: filepath.Join(dir, name), location: loc})
	}
	return out, nil
}

// findExe returns the executable of an unpacked package folder:
// terraform-provider-TYPE_vVERSION, else the one executable file whose
// name starts terraform-provider-TYPE (Terraform accepts any such name).
func findExe(dir, typ, version string) string {
	want := exePrefix + typ + "_v" + version
	if isExecutable(filepath.Join(dir, want)) {
		return want
	}
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), exePrefix+typ) && isExecutable(filepath.Join(dir, e.Name())) {
			names = append(names, e.Name())
		}
	}
	slices.Sort(names)
	if len(names) == 0 {
		return ""
	}
	return names[0]
}

func isExecutable(path string) bool {
	fi, err := os.Lstat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

// scanBare lists bare executables in dir: terraform-provider-TYPE (no
// version) and terraform-provider-TYPE_vVERSION (Terraform 0.12's names,
// with an optional _xN protocol suffix). Each is a package of one file,
// for plat (the zero value: the current platform).
func scanBare(loc, dir string, src Source, plat Platform) []candidate {
	if plat == (Platform{}) {
		plat = CurrentPlatform()
	}
	entries, _ := os.ReadDir(dir)
	var out []candidate
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), exePrefix+src.Type)
		if !ok || !isExecutable(filepath.Join(dir, e.Name())) {
			continue
		}
		v := ""
		if rest != "" {
			ver, ok := strings.CutPrefix(rest, "_v")
			if !ok {
				continue
			}
			if i := strings.Index(ver, "_x"); i >= 0 {
				ver = ver[:i]
			}
			if v, ok = canonicalVersion(ver); !ok {
				continue
			}
		}
		out = append(out, candidate{version: v, platform: plat, dir: dir, files: []string{e.Name()}, exe: e.Name(), location: loc})
	}
	return out
}

// errNoExe refuses a package without its executable.
var errNoExe = errors.New("holds no executable terraform-provider-TYPE")
