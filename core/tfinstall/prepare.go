package tfinstall

import (
	"context"
	"errors"
)

// HashesOf converts a lock entry's hashes.
func HashesOf(ss []string) []Hash {
	out := make([]Hash, len(ss))
	for i, s := range ss {
		out[i] = Hash(s)
	}
	return out
}

// Prepare finds the package req asks for and returns the executable to
// run. With hashes to check (req.Hashes, from bulwark.lock) it is a
// verified private copy made under dst (see CopyVerified), the lock's
// version being the one found; without, the package's own executable, as
// bulwark runs its own plugins when there is no lock.
func Prepare(ctx context.Context, f *Finder, req Request, dst string) (string, *Package, error) {
	if len(req.Hashes) > 0 && req.Version == "" {
		return "", nil, errors.New("tfinstall: a request with the lock's hashes needs the lock's version")
	}
	p, err := f.Find(ctx, req)
	if err != nil {
		return "", nil, err
	}
	if len(req.Hashes) == 0 {
		return p.ExePath(), p, nil
	}
	exe, err := CopyVerified(p, dst, req.Hashes)
	if err != nil {
		return "", nil, err
	}
	return exe, p, nil
}
