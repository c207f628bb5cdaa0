package providerlock

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"

	"github.com/bulwark-iac/bulwark/core/spec"
	"github.com/bulwark-iac/bulwark/core/tfinstall"
)

// What Status.Lock says of a Terraform provider's lock entry.
const (
	StatusLocked            = "locked"             // the lock pins it and the bytes found match
	StatusNotLocked         = "not locked"         // no lock, or the lock does not name it
	StatusMismatch          = "mismatch"           // the bytes found differ from the lock's hashes
	StatusOutsideConstraint = "outside constraint" // the lock pins a version the spec's constraint does not allow
	StatusNotFound          = "not found"          // the lock pins a version no folder here holds
)

// Status is one Terraform provider of a spec as a run would find it
// (`bulwark providers SPEC`); nothing is started.
type Status struct {
	Name       string // the spec's name for it
	Source     string // HOST/NAMESPACE/TYPE (as written, when it does not parse)
	Constraint string // the spec's version constraint, "" for any
	Version    string // the version found, "" when none was
	Path       string // the executable found
	Location   string // the searched folder that held it
	// Lock is one of the Status* constants; LockVersion the version the
	// lock pins, if it names the provider.
	Lock        string
	LockVersion string
	// Err is why it was not found or not verified.
	Err error
}

// DescribeOptions is what Describe needs beside the spec.
type DescribeOptions struct {
	// Lock is the spec's lock file (nil: none) and LockPath where it is.
	Lock     *File
	LockPath string
	// PluginDirs and UnpackDir are as LockOptions'.
	PluginDirs []string
	UnpackDir  string
}

// Describe describes the Terraform providers sp declares, by name, as a run
// would find them under o's plugin folders and lock. The error is the
// first one a run would refuse: a pin outside the spec's constraint
// (PinOutsideConstraintError), or bytes that differ from the lock's hashes
// (tfinstall.IntegrityError); every other problem is only its Status's.
func Describe(ctx context.Context, sp *spec.Spec, o DescribeOptions) ([]Status, error) {
	out := []Status{}
	var refused error
	for _, n := range slices.Sorted(maps.Keys(sp.Providers)) {
		pc := sp.Providers[n]
		if !pc.Terraform() {
			continue
		}
		st := Status{Name: n, Source: pc.Source, Constraint: pc.Version, Lock: StatusNotLocked}
		if err := describe(ctx, pc, o, &st); err != nil {
			st.Err = err
			var pe *PinOutsideConstraintError
			var ie *tfinstall.IntegrityError
			if refused == nil && (errors.As(err, &pe) || errors.As(err, &ie)) {
				refused = err
			}
		}
		out = append(out, st)
	}
	return out, refused
}

// describe fills st with what a run would find for pc.
func describe(ctx context.Context, pc *spec.Provider, o DescribeOptions, st *Status) error {
	src, err := tfinstall.ParseSource(pc.Source)
	if err != nil {
		return err
	}
	st.Source = src.String()
	req := tfinstall.Request{Source: src}
	if req.Constraints, err = tfinstall.ParseConstraints(pc.Version); err != nil {
		return fmt.Errorf("version %q: %w", pc.Version, err)
	}
	var entry *TerraformEntry
	if o.Lock != nil {
		if e, ok := o.Lock.Terraform[src.String()]; ok {
			entry = &e
			st.LockVersion = e.Version
			if err := CheckPin(pc.Name, src, req.Constraints, e, o.LockPath); err != nil {
				st.Lock = StatusOutsideConstraint
				return err
			}
			req.Version = e.Version
		}
	}
	f := &tfinstall.Finder{
		Locations: tfinstall.DefaultLocations(o.PluginDirs, os.Getenv),
		UnpackDir: o.UnpackDir,
	}
	p, err := f.Find(ctx, req)
	if err != nil {
		if entry != nil {
			st.Lock = StatusNotFound
		}
		return err
	}
	st.Version, st.Path, st.Location = p.Version, p.ExePath(), p.Location
	if entry == nil {
		return nil
	}
	if err := tfinstall.Verify(p, tfinstall.HashesOf(entry.Hashes)); err != nil {
		st.Lock = StatusMismatch
		return err
	}
	st.Lock = StatusLocked
	return nil
}
