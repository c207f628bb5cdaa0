package pluginhost

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

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
	h.mu.Lock()
	if h.private == "" {
		dir, err := os.MkdirTemp("", "bulwark-plugins-")
		if err != nil {
			h.mu.Unlock()
			return "", err
		}
		h.private = dir
	}
	dir := h.private
	h.mu.Unlock()
	src, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer src.Close()
	dst, err := os.CreateTemp(dir, Prefix+source+"-*")
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
