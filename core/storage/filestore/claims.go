package filestore

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/bulwark-iac/bulwark/core/nofollow"
	"github.com/bulwark-iac/bulwark/core/storage"
	"github.com/bulwark-iac/bulwark/core/storage/filestore/lock"
)

// claimsLock is the claims lock of a state folder: its folder .claims,
// locked as a stack folder is (flock on the folder itself: what a file in
// it says decides nothing, and a holder that dies loses it).
type claimsLock struct {
	dir string
	l   *lock.Lock
}

// Claims tries once to take the claims lock of the state folder root (the
// folder of stack folders): held by another, a *storage.LockedError. A
// .claims that is a symbolic link or no folder is refused, never followed.
func Claims(root string, h storage.Holder) (storage.ClaimsLock, error) {
	dir := filepath.Join(root, storage.ClaimsName)
	if _, err := nofollow.Mkdir(dir, 0o700); err != nil {
		return nil, fmt.Errorf("claims lock %s: %w", dir, err)
	}
	l, err := lock.Acquire(dir, h)
	if err != nil {
		return nil, err
	}
	return &claimsLock{dir: dir, l: l}, nil
}

// ClaimsAt is Claims for the state folder a file:// URL (or a bare path)
// names, as Open reads it.
func ClaimsAt(rawURL string, h storage.Holder) (storage.ClaimsLock, error) {
	root := rawURL
	if strings.Contains(rawURL, "://") {
		u, err := url.Parse(rawURL)
		if err != nil || u.Scheme != "file" || (u.Host != "" && u.Host != "localhost") {
			return nil, fmt.Errorf("state %s: not a file:// URL of this machine", rawURL)
		}
		root = u.Path
	}
	if root == "" {
		return nil, fmt.Errorf("state %q: no folder", rawURL)
	}
	return Claims(root, h)
}

func (c *claimsLock) Held(context.Context) error {
	if err := c.l.StillAt(c.dir); err != nil {
		return fmt.Errorf("claims lock %s: %w: %w", c.dir, storage.ErrLost, err)
	}
	return nil
}

func (c *claimsLock) Release(context.Context) error { return c.l.Release() }
