package stack

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/bulwark-iac/bulwark/core/parallel"
	"github.com/bulwark-iac/bulwark/core/state"
	"github.com/bulwark-iac/bulwark/core/storage"
	"github.com/bulwark-iac/bulwark/core/storage/filestore"
	"github.com/bulwark-iac/bulwark/core/tfinstall"
)

// ClaimedElsewhereError refuses the import of a resource whose provider
// cannot stamp a claim on it (one built for Terraform) because another
// stack on the same backend records it: the backend's states are the
// claims registry of such providers (docs/architecture.md, "Claims").
// Nothing was recorded.
type ClaimedElsewhereError struct {
	Address, ID string
	Source      string // the provider's source address
	Type        string
	Stack       string // the stack that records it
	As          string // its name there
}

func (e *ClaimedElsewhereError) Error() string {
	return fmt.Sprintf("import %s %s: stack %s on this backend records this %s (provider %s) as %s: a resource has one owner, and this provider cannot stamp a claim on it, so the backend's stacks are its claims registry. Run `bulwark state forget` for %s in stack %s first if it is to move here; nothing was recorded",
		e.Address, e.ID, e.Stack, e.Type, e.Source, e.As, e.As, e.Stack)
}

// ClaimScanError says the claims of another stack could not be read, so
// an import that needs them is refused rather than guessed.
type ClaimScanError struct {
	Stack string
	Err   error
}

func (e *ClaimScanError) Error() string {
	return fmt.Sprintf("cannot read the state of stack %s, which may record it (its claims are what the import is checked against): %v; nothing was recorded", e.Stack, e.Err)
}

func (e *ClaimScanError) Unwrap() error { return e.Err }

// otherStacks lists the stacks on this stack's backend other than its own:
// what the backend lists (Options.ListStacks) for a remote one, the stack
// folders under StateDir for the file backend.
func (s *session) otherStacks(ctx context.Context) ([]string, error) {
	var names []string
	if s.opts.ListStacks != nil && s.opts.StateURL != "" {
		var err error
		if names, err = s.opts.ListStacks(ctx); err != nil {
			return nil, fmt.Errorf("list the stacks of %s (an import of a provider that cannot stamp claims is checked against them): %w", s.be.Location(), err)
		}
	} else {
		dir := s.opts.StateDir
		if dir == "" {
			dir = ".bulwark"
		}
		entries, err := os.ReadDir(dir)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		for _, e := range entries {
			if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
				names = append(names, e.Name())
			}
		}
	}
	names = slices.DeleteFunc(names, func(n string) bool { return n == s.sp.Stack })
	slices.Sort(names)
	return names, nil
}

// claimedElsewhere looks through the states of the other stacks on this
// backend for a resource of provider source src (spec name provider), of
// type typ, with id id: the claims registry of a provider that cannot
// stamp one. It reads their states without their locks; its callers
// (`bulwark import`, and a spec's `import: ID` during an apply) run it under
// the backend's claims lock (claimsLock) and record the import before they
// release it, so two such imports of one id into two stacks at once are
// taken in turn, and the second finds the first's record.
//
// The stacks are read claimScansAtOnce at a time (each read is a backend
// opened and loaded: on S3 several requests, against AWS tens of
// milliseconds each), and the answer is the one reading them in order
// gives: the first stack, in the listing's order, that records the id or
// cannot be read. Once one has, no further stack is read.
func (s *session) claimedElsewhere(ctx context.Context, address, src, typ, id string) error {
	names, err := s.otherStacks(ctx)
	if err != nil {
		return err
	}
	return parallel.ForEach(ctx, len(names), claimScansAtOnce, func(ctx context.Context, i int) error {
		name := names[i]
		be, err := s.opts.Backend(ctx, name, state.Sealing{})
		if err != nil {
			return &ClaimScanError{Stack: name, Err: err}
		}
		st, err := be.Load(ctx)
		be.Close()
		if errors.Is(err, storage.ErrMoved) {
			// Moved to another backend by state migrate: what it
			// records is there now, no longer on this one.
			return nil
		}
		if err != nil {
			return &ClaimScanError{Stack: name, Err: err}
		}
		for _, n := range st.Names() {
			r := st.Resources[n]
			if r.ID == id && r.Type == typ && sameSource(r.Source, src) {
				return &ClaimedElsewhereError{Address: address, ID: id, Source: src, Type: typ, Stack: name, As: n}
			}
		}
		return nil
	})
}

// claimScansAtOnce is how many other stacks claimedElsewhere reads at once.
const claimScansAtOnce = 4

// SameSource is sameSource, for a reader of the claims registry (the web
// view's conflicts).
func SameSource(a, b string) bool { return sameSource(a, b) }

// sameSource reports whether two provider sources name the same provider:
// Terraform source addresses compared in full (the host defaults), other
// names as written.
func sameSource(a, b string) bool {
	if a == b {
		return true
	}
	if !terraformSource(a) || !terraformSource(b) {
		return false
	}
	sa, err := tfinstall.ParseSource(a)
	if err != nil {
		return false
	}
	sb, err := tfinstall.ParseSource(b)
	return err == nil && sa.String() == sb.String()
}

// claimsLockWait is how long an import waits for another stack's import
// of a keyless provider to finish (claimsLock).
const claimsLockWait = 30 * time.Second

// claimsLock takes the claims lock of this stack's backend (see
// storage.ClaimsLock): held from the check of the other stacks
// (claimedElsewhere) until the import is recorded, durably, so that two
// imports of one id into two stacks at once are taken in turn and the second
// finds the first's record. The file backend's is its state folder's
// .claims (filestore.Claims); a remote backend's is Options.ClaimsLock (an
// advisory lock on PostgreSQL, a lease object on S3). A remote backend
// without one refuses the import: the check alone would let two imports
// both pass. It waits up to claimsLockWait for another holder.
func (s *session) claimsLock(ctx context.Context) (storage.ClaimsLock, error) {
	try := s.opts.ClaimsLock
	where := ""
	switch {
	case s.opts.StateURL != "" && s.opts.Open != nil:
		where = s.be.Location()
		if try == nil {
			return nil, fmt.Errorf("claims lock: backend %s keeps none, so an import of a provider that cannot stamp claims cannot be checked against the other stacks without a race: refused, nothing was recorded", where)
		}
	default:
		root := s.opts.StateDir
		if root == "" {
			root = ".bulwark"
		}
		where = filepath.Join(root, storage.ClaimsName)
		try = func(_ context.Context, h storage.Holder) (storage.ClaimsLock, error) {
			return filestore.Claims(root, h)
		}
	}
	deadline := time.Now().Add(claimsLockWait)
	wait := 10 * time.Millisecond
	for {
		l, err := try(ctx, s.holder)
		if err == nil {
			return l, nil
		}
		if !errors.Is(err, storage.ErrLocked) {
			return nil, fmt.Errorf("claims lock: %w", err)
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("claims lock of %s: another import of a provider that cannot stamp claims holds it (%w); try again once it ends", where, err)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
		wait = min(2*wait, 500*time.Millisecond)
	}
}
