// Package wasmcache gives go-graphviz's compilation cache a folder only
// this user controls, for the length of go-graphviz's package init.
//
// go-graphviz (internal/wasm, bind.go) compiles Graphviz's WebAssembly
// module in its init and keeps wazero's compilation cache, compiled native
// code checked by a CRC only, in os.TempDir()/go-graphviz: a folder it
// creates 0755 or uses as it finds it. On a shared machine anyone who made
// /tmp/go-graphviz first could put code there that bulwark-graphviz (the
// program that imports go-graphviz, beside bulwark) would then run, before
// main. This package's init points os.TempDir() at a
// private folder before that init runs, and Restore, called by dotlayout's
// init (which runs after go-graphviz's), puts the environment back as it
// was.
//
// The order is the Go spec's (Package initialization, since Go 1.21):
// packages are initialized in import-path order, each step taking the
// first uninitialized package whose imports are all initialized. This
// package imports only standard packages that go-graphviz's internal/wasm
// imports too, so it is ready no later than that one, and its path
// (github.com/bulwark-iac/...) sorts before github.com/goccy/... and
// github.com/tetratelabs/...: it is initialized first. It must therefore
// stay imported by dotlayout and import nothing but os, path/filepath,
// runtime and syscall (TestImportsStandardOnly checks the list).
package wasmcache

import (
	"os"
	"path/filepath"
)

const (
	appFolder   = "bulwark"        // under os.UserCacheDir()
	cacheFolder = "graphviz-cache" // under appFolder: go-graphviz's TMPDIR
	tempPattern = "bulwark-graphviz-"
)

// setup is what init changed, for Restore.
type setup struct {
	dir   string // what os.TempDir() returns until Restore
	temp  bool   // dir is a folder of our own made for this process only
	saved []savedVar
}

// savedVar is one environment variable as it was before init.
type savedVar struct {
	name, value string
	set         bool
}

// prepared is set once by init and read once by Restore. A package-level
// value is unavoidable here: one package's init can hand a value to a later
// one in no other way. Nothing else reads or writes it.
var prepared *setup

func init() {
	prepared = prepare(os.UserCacheDir)
}

// Restore puts back the environment variables init changed, exactly
// (unset ones unset again), and removes the temporary folder if one was
// used. dotlayout's init calls it; later calls do nothing.
func Restore() error {
	s := prepared
	prepared = nil
	if s == nil {
		return nil
	}
	return s.restore()
}

// prepare chooses the folder and points os.TempDir() at it: the private
// cache folder when it passes the checks, else a new temporary folder of
// our own (no cache kept then: correct, only slower), else os.DevNull
// (go-graphviz cannot create its folder there and keeps no cache).
func prepare(cacheRoot func() (string, error)) *setup {
	s := &setup{}
	dir, err := privateDir(cacheRoot)
	if err != nil {
		dir, s.temp = tempDir()
	}
	s.dir = dir
	for _, name := range tempEnv() {
		v, ok := os.LookupEnv(name)
		s.saved = append(s.saved, savedVar{name: name, value: v, set: ok})
		_ = os.Setenv(name, dir)
	}
	return s
}

// tempDir makes a new folder in the user's own temporary folder, before it
// is changed: created 0700 under a name nobody could guess, in a folder
// where nobody else can rename it away and put another in its place
// (checkRoot: /tmp is sticky). Else os.DevNull: go-graphviz's Mkdir of
// os.DevNull/go-graphviz fails and it compiles without a cache.
func tempDir() (string, bool) {
	if checkRoot(os.TempDir()) == nil {
		if dir, err := os.MkdirTemp("", tempPattern); err == nil {
			return dir, true
		}
	}
	return os.DevNull, false
}

func (s *setup) restore() error {
	var first error
	for _, v := range s.saved {
		var err error
		if v.set {
			err = os.Setenv(v.name, v.value)
		} else {
			err = os.Unsetenv(v.name)
		}
		if err != nil && first == nil {
			first = err
		}
	}
	if s.temp {
		if err := os.RemoveAll(s.dir); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// privateDir returns cacheRoot()/bulwark/graphviz-cache, creating the
// folders 0700, once it has checked that nobody but this user (and root)
// can write to it or swap any folder on its path (checkRoot, checkPrivate).
func privateDir(cacheRoot func() (string, error)) (string, error) {
	root, err := cacheRoot()
	if err != nil {
		return "", err
	}
	if !filepath.IsAbs(root) {
		return "", &os.PathError{Op: "wasmcache", Path: root, Err: os.ErrInvalid}
	}
	// The user cache folder itself (~/.cache) is made if missing, not
	// the folders above it: a HOME that does not exist stays so.
	if err := os.Mkdir(root, 0o700); err != nil && !os.IsExist(err) {
		return "", err
	}
	if err := checkRoot(root); err != nil {
		return "", err
	}
	dir := root
	for _, name := range []string{appFolder, cacheFolder} {
		dir = filepath.Join(dir, name)
		// Mkdir, not MkdirAll: a symlink in place of the folder is left
		// as it is (and refused below), nothing is created through it.
		if err := os.Mkdir(dir, 0o700); err != nil && !os.IsExist(err) {
			return "", err
		}
		if err := checkPrivate(dir); err != nil {
			return "", err
		}
	}
	return dir, nil
}
