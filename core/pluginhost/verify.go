package pluginhost

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/bulwark-iac/bulwark/core/nofollow"
	"github.com/bulwark-iac/bulwark/core/pidcheck"
)

// privateDir makes, once, the host's own folder for verified copies under
// Options.CopyDir (see there).
func (h *Host) privateDir() (string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.private != "" {
		return h.private, nil
	}
	base := h.opts.CopyDir
	if base == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			return "", fmt.Errorf("no folder for it (%w): set XDG_CACHE_HOME or HOME", err)
		}
		base = filepath.Join(cache, "bulwark", "plugins")
	}
	// The folder the executables are copied into must be a real one: a
	// link would put them wherever it points.
	if _, err := nofollow.Mkdir(base, 0o700); err != nil {
		return "", err
	}
	prefix := runPrefix()
	sweepRuns(base, prefix)
	dir, err := os.MkdirTemp(base, fmt.Sprintf("%s%d-", prefix, os.Getpid()))
	if err != nil {
		return "", err
	}
	h.private = dir
	return dir, nil
}

// runPrefix starts the names of this machine's copy folders:
// run-HOST-PID-RANDOM, so a leftover can be told to be this machine's.
func runPrefix() string {
	host, _ := os.Hostname()
	host = strings.Map(func(r rune) rune {
		if r == '/' || r == filepath.Separator || r == '*' {
			return '_'
		}
		return r
	}, host)
	return "run-" + host + "-"
}

// sweepRuns removes the copy folders that hosts of this machine killed
// before their Close left behind: those whose process is gone. Another
// machine's, and a live process's, are left alone.
func sweepRuns(base, prefix string) {
	entries, _ := os.ReadDir(base)
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), prefix)
		if !ok || !e.IsDir() {
			continue
		}
		pidText, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		if err != nil || pid <= 0 || pid == os.Getpid() {
			continue
		}
		if pidcheck.Gone(pid) {
			os.RemoveAll(filepath.Join(base, e.Name()))
		}
	}
}

// IntegrityError refuses a plugin whose bytes differ from bulwark.lock.
type IntegrityError struct {
	Provider string
	Path     string
	Want     string // sha256 in bulwark.lock
	Got      string // sha256 of the bytes found
}

func (e *IntegrityError) Error() string {
	return fmt.Sprintf("provider %s: %s has sha256 %s, but bulwark.lock says %s: refusing to run it (if the change is intended, run `bulwark providers lock SPEC` again)",
		e.Provider, e.Path, e.Got, e.Want)
}

// verifiedCopy copies the plugin at path into a private folder of the
// host's, hashing the bytes as it copies them, and returns the copy's path
// when its hash is want. The copy is what runs: whatever happens to path
// after the check, the bytes executed are the bytes verified.
func (h *Host) verifiedCopy(source, path, want string) (string, error) {
	dir, err := h.privateDir()
	if err != nil {
		return "", fmt.Errorf("provider %s: verified copy: %w", source, err)
	}
	src, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer src.Close()
	// A Terraform source (NAMESPACE/TYPE) names no folder.
	dst, err := os.CreateTemp(dir, Prefix+strings.ReplaceAll(source, "/", "_")+"-*")
	if err != nil {
		return "", err
	}
	hash := sha256.New()
	_, err = io.Copy(io.MultiWriter(dst, hash), src)
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(dst.Name(), 0o500)
	}
	if err != nil {
		os.Remove(dst.Name())
		return "", fmt.Errorf("provider %s: copy %s: %w", source, path, err)
	}
	if got := hex.EncodeToString(hash.Sum(nil)); got != want {
		os.Remove(dst.Name())
		return "", &IntegrityError{Provider: source, Path: path, Want: want, Got: got}
	}
	return filepath.Clean(dst.Name()), nil
}
