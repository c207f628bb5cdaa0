package stack

import (
	"fmt"
	"maps"
	"slices"

	"github.com/bulwark-iac/bulwark/core/pluginhost"
	"github.com/bulwark-iac/bulwark/core/spec"
)

// Bad input never mutates: every input a mutating command needs beyond the
// spec and its variables (checked when the spec is read) is checked by
// open, before the lock is taken, anything is journaled or a provider
// starts, so a refusal is exit 1 with nothing to undo.

// checkKey refuses, before the lock is taken, a key given explicitly
// (BULWARK_SECRETS_KEY, --secrets-key-file) that cannot be read: not the
// base64 of 32 bytes, a key file missing, open to others or not a key. The
// stack's own provider, which the state records, is checked once the state
// is loaded (checkSecrets): a passphrase or KMS stack needs no key file,
// and none is created for it.
func (o *Options) checkKey() error {
	src := o.Secrets
	if src == nil || (src.Env == "" && src.File == "") {
		return nil
	}
	_, err := src.Key(false)
	return err
}

// checkPins checks, before a mutating command locks or starts anything,
// that every plugin the spec's providers run has the bytes bulwark.lock
// pins: one plugin refused while another already started would leave the
// other's Configure to have run for nothing (and its world touched). Each
// Start verifies again the bytes it runs; this only finds a refusal first.
// With a Starter of its own (tests), there are no plugin files to check.
func (o *Options) checkPins(sp *spec.Spec) error {
	lf := o.ProviderLock
	if lf == nil || o.Starter != nil {
		return nil
	}
	used := map[string]bool{}
	for _, r := range sp.Resources {
		if p, ok := sp.Providers[r.Provider]; ok {
			used[p.Source] = true
		}
	}
	for _, src := range slices.Sorted(maps.Keys(used)) {
		e, ok := lf.Providers[src]
		if !ok {
			continue // Start says it is not pinned
		}
		path, err := pluginhost.Find(o.PluginDirs, src)
		if err != nil {
			continue // Start says what is missing
		}
		got, err := pluginhost.FileSHA256(path)
		if err != nil {
			return fmt.Errorf("provider %s: %w", src, err)
		}
		if got != e.SHA256 {
			return &pluginhost.IntegrityError{Provider: src, Path: path, Want: e.SHA256, Got: got}
		}
	}
	return nil
}
