package providerlock

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"

	"github.com/bulwark-iac/bulwark/core/pluginhost"
	"github.com/bulwark-iac/bulwark/core/spec"
	"github.com/bulwark-iac/bulwark/core/tfinstall"
)

// Pin is one provider recorded in a lock file, as Lock and Install report
// it.
type Pin struct {
	// Source is a plugin's name, or a Terraform provider's fully
	// qualified source address (HOST/NAMESPACE/TYPE).
	Source string
	// Path is the executable pinned.
	Path string
	// SHA256 is a plugin's; "" for a Terraform provider.
	SHA256 string
	// Version and Hashes are a Terraform provider's.
	Version string
	Hashes  []string
	// Trust says how an installed package's checksums were authenticated
	// (tfinstall.Trust), or, for one found on this machine, "found in"
	// where; KeyID is the signing key's id, when one signed them.
	Trust string
	KeyID string
}

// LockOptions is what Lock needs beside the spec.
type LockOptions struct {
	// PluginDirs are the plugin folders, --plugin-dir first: where the
	// plugins are found, and the first places a Terraform package is
	// looked for (tfinstall.DefaultLocations).
	PluginDirs []string
	// UnpackDir is where a packed Terraform package found is unpacked.
	UnpackDir string
	// Pinned, when set, is told of each provider as it is pinned.
	Pinned func(Pin)
}

// Lock writes the lock file beside the spec sp (PathFor(sp.File)) with the
// sha256 of every plugin sp uses and, for each Terraform provider it uses,
// the package found on this machine (tfinstall.Finder): the version the
// lock records when sp's constraint allows it, else the newest it allows,
// and its hashes. Nothing is downloaded. Entries already in the lock stay
// (say, a provider pinned for a run with --provider). At a version the
// lock already records, other bytes than it records are refused
// (HashMismatchError) and the lock is not written. It returns the lock's
// path.
func Lock(ctx context.Context, sp *spec.Spec, o LockOptions) (string, error) {
	lockPath := PathFor(sp.File)
	lf, err := Read(lockPath)
	if err != nil {
		return "", err
	}
	if lf == nil {
		lf = &File{Providers: map[string]Entry{}}
	}
	finder := &tfinstall.Finder{
		Locations: tfinstall.DefaultLocations(o.PluginDirs, os.Getenv),
		UnpackDir: o.UnpackDir,
	}
	for _, n := range sp.ProvidersUsed() {
		if pc := sp.Providers[n]; pc != nil && pc.Terraform() {
			w, err := wantOf(sp.File, pc.Name, pc)
			if err != nil {
				return "", err
			}
			pinned := ""
			if e, ok := lf.Terraform[w.src.String()]; ok && CheckPin(w.name, w.src, w.c, e, lockPath) == nil {
				pinned = e.Version
			}
			got, err := findLocal(ctx, finder, w, pinned)
			if err != nil {
				return "", err
			}
			pin, err := lf.pinTerraform(lockPath, w, got)
			if err != nil {
				return "", err
			}
			o.report(pin)
			continue
		}
		src := sp.Providers[n].Source
		path, err := pluginhost.Find(o.PluginDirs, src)
		if err != nil {
			return "", err
		}
		sum, err := pluginhost.FileSHA256(path)
		if err != nil {
			return "", err
		}
		lf.Providers[src] = Entry{SHA256: sum}
		o.report(Pin{Source: src, Path: path, SHA256: sum})
	}
	if err := Write(lockPath, lf); err != nil {
		return "", err
	}
	return lockPath, nil
}

func (o LockOptions) report(p Pin) {
	if o.Pinned != nil {
		o.Pinned(p)
	}
}

// InstallOptions is what InstallSpec and InstallSources need beside what
// they install.
type InstallOptions struct {
	// LockPath is the lock file the packages are pinned in.
	LockPath string
	// Dir is the provider folder packages are installed (or a packed one
	// found, unpacked) into; "" is tfinstall.ProviderDir's default.
	Dir string
	// TrustedKeyFile names a file holding the armored OpenPGP public key
	// SHA256SUMS must be signed by; "" is $BULWARK_PROVIDER_KEY's
	// (tfinstall.EnvTrustedKey), and without either a key the registry
	// names is taken.
	TrustedKeyFile string
	// Local pins the package a run would find on this machine, under
	// PluginDirs and the mirrors and caches (tfinstall.DefaultLocations),
	// instead of downloading one.
	Local      bool
	PluginDirs []string
	// Pinned, when set, is told of each provider as it is pinned (and
	// the lock written).
	Pinned func(Pin)
	// Repinning, when set, is told of a version the lock pins that the
	// spec's constraint does not allow, before one it allows is pinned in
	// its place (InstallSpec only).
	Repinning func(*PinOutsideConstraintError)
}

// InstallSpec installs the Terraform providers the spec sp declares under
// its version constraints and pins them in o.LockPath: a provider the lock
// already pins at a version its constraint allows is installed at that
// version, so a fresh machine gets the bytes the lock names. See Install.
func InstallSpec(ctx context.Context, sp *spec.Spec, o InstallOptions) error {
	var wants []want
	for _, n := range slices.Sorted(maps.Keys(sp.Providers)) {
		pc := sp.Providers[n]
		if !pc.Terraform() {
			continue
		}
		w, err := wantOf(sp.File, n, pc)
		if err != nil {
			return err
		}
		wants = append(wants, w)
	}
	if len(wants) == 0 {
		return fmt.Errorf("%s declares no Terraform provider (bulwark's own plugins are pinned by `bulwark providers lock %s`)", sp.File, sp.File)
	}
	return install(ctx, wants, true, o)
}

// InstallSources installs the Terraform providers reqs name, each
// SOURCE[@CONSTRAINT] (tfinstall.ParseRequirement), and pins them in
// o.LockPath: the newest version each constraint allows, whatever the lock
// pinned before. See Install.
func InstallSources(ctx context.Context, reqs []string, o InstallOptions) error {
	var wants []want
	for _, a := range reqs {
		src, cons, err := tfinstall.ParseRequirement(a)
		if err != nil {
			return err
		}
		wants = append(wants, want{src: src, c: cons})
	}
	return install(ctx, wants, false, o)
}

// install installs (tfinstall.Installer) or, with o.Local, finds each of
// wants and pins it in o.LockPath, writing the lock after each, so the lock
// holds what was installed even when a later one fails. At a version the
// lock already records, other bytes than it records are refused
// (HashMismatchError) and the lock is left as it was; a package fetched
// from a registry stays in the provider folder, where a run refuses it.
// followLock installs the version the lock pins when the constraint allows
// it.
func install(ctx context.Context, wants []want, followLock bool, o InstallOptions) error {
	in := &tfinstall.Installer{Dir: o.Dir}
	if in.Dir == "" {
		in.Dir = tfinstall.ProviderDir(os.Getenv)
	}
	keyFile := o.TrustedKeyFile
	if keyFile == "" {
		keyFile = os.Getenv(tfinstall.EnvTrustedKey)
	}
	if keyFile != "" {
		b, err := os.ReadFile(keyFile)
		if err != nil {
			return fmt.Errorf("trusted key: %w", err)
		}
		in.TrustedKeys = string(b)
	}
	lf, err := Read(o.LockPath)
	if err != nil {
		return err
	}
	if lf == nil {
		lf = &File{Providers: map[string]Entry{}}
	}
	var finder *tfinstall.Finder
	if o.Local {
		finder = &tfinstall.Finder{Locations: tfinstall.DefaultLocations(o.PluginDirs, os.Getenv), UnpackDir: in.Dir}
	}
	for _, w := range wants {
		// From a spec, the version the lock pins, when the spec's
		// constraint allows it: what the lock says runs.
		pinned := ""
		if e, ok := lf.Terraform[w.src.String()]; ok && followLock {
			var pe *PinOutsideConstraintError
			if err := CheckPin(w.name, w.src, w.c, e, o.LockPath); err == nil {
				pinned = e.Version
			} else if errors.As(err, &pe) && o.Repinning != nil {
				o.Repinning(pe)
			}
		}
		var got *tfinstall.Installed
		if finder != nil {
			got, err = findLocal(ctx, finder, w, pinned)
		} else {
			cons := w.c
			if pinned != "" {
				if cons, err = tfinstall.ParseConstraints("= " + pinned); err != nil {
					return err
				}
			}
			got, err = in.Install(ctx, w.src, cons)
		}
		if err != nil {
			return err
		}
		pin, err := lf.pinTerraform(o.LockPath, w, got)
		if err != nil {
			return err
		}
		if err := Write(o.LockPath, lf); err != nil {
			return err
		}
		if o.Pinned != nil {
			o.Pinned(pin)
		}
	}
	return nil
}

// want is one Terraform provider to pin: its source, the constraint it is
// pinned under, and the spec's name for it ("" when named on the command
// line).
type want struct {
	src  tfinstall.Source
	c    tfinstall.Constraints
	name string
}

// wantOf is the Terraform provider pc, named name in the spec file.
func wantOf(file, name string, pc *spec.Provider) (want, error) {
	src, err := tfinstall.ParseSource(pc.Source)
	if err != nil {
		return want{}, fmt.Errorf("%s: provider %s: %w", file, name, err)
	}
	cons, err := tfinstall.ParseConstraints(pc.Version)
	if err != nil {
		return want{}, fmt.Errorf("%s: provider %s: version %q: %w", file, name, pc.Version, err)
	}
	return want{src: src, c: cons, name: name}, nil
}

// findLocal is the package of w a run would find on this machine: of
// version when set (the lock's), else the newest w's constraint allows,
// with its hashes as they are.
func findLocal(ctx context.Context, f *tfinstall.Finder, w want, version string) (*tfinstall.Installed, error) {
	p, err := f.Find(ctx, tfinstall.Request{Source: w.src, Constraints: w.c, Version: version})
	if err != nil {
		return nil, err
	}
	hashes, err := tfinstall.Pin(p)
	if err != nil {
		return nil, err
	}
	return &tfinstall.Installed{Package: p, Hashes: hashes, Trust: tfinstall.Trust("found in " + p.Location)}, nil
}

// pinTerraform records in f the package got, found or installed for w: its
// version, w's constraint and its hashes. Other bytes than f records at
// that version are refused (CheckTerraform) and f is left as it was: Lock
// and Install both pin through it.
func (f *File) pinTerraform(lockPath string, w want, got *tfinstall.Installed) (Pin, error) {
	hashes := make([]string, len(got.Hashes))
	for i, h := range got.Hashes {
		hashes[i] = string(h)
	}
	if err := f.CheckTerraform(lockPath, w.src.String(), got.Package.Version, hashes); err != nil {
		return Pin{}, err
	}
	f.SetTerraform(w.src.String(), TerraformEntry{Version: got.Package.Version, Constraints: w.c.String(), Hashes: hashes})
	return Pin{Source: w.src.String(), Path: got.Package.ExePath(), Version: got.Package.Version, Hashes: hashes, Trust: string(got.Trust), KeyID: got.KeyID}, nil
}

// PinOutsideConstraintError refuses a bulwark.lock whose pinned version of
// a Terraform provider the spec's version constraint does not allow: the
// lock says which bytes run, the spec which versions it was written for,
// and bulwark does not pick between them.
type PinOutsideConstraintError struct {
	Provider   string // the spec's name for it
	Source     string // HOST/NAMESPACE/TYPE
	Pinned     string // the lock's version
	Constraint string // the spec's constraint
	LockPath   string
}

func (e *PinOutsideConstraintError) Error() string {
	lock := e.LockPath
	if lock == "" {
		lock = FileName
	}
	return fmt.Sprintf("provider %s (%s): %s pins version %s, which the spec's version constraint %q does not allow: pin one it allows (`bulwark providers install SPEC`) or change the constraint",
		e.Provider, e.Source, lock, e.Pinned, e.Constraint)
}

// CheckPin refuses (PinOutsideConstraintError) a lock entry whose version
// the spec's constraint c does not allow; no constraint allows any.
func CheckPin(name string, src tfinstall.Source, c tfinstall.Constraints, e TerraformEntry, lockPath string) error {
	if c.String() == "" || c.Allows(e.Version) {
		return nil
	}
	return &PinOutsideConstraintError{Provider: name, Source: src.String(), Pinned: e.Version, Constraint: c.String(), LockPath: lockPath}
}
