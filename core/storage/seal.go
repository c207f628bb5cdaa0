package storage

import (
	"errors"
	"fmt"
	"maps"

	"github.com/bulwark-iac/bulwark/core/secrets"
	"github.com/bulwark-iac/bulwark/core/state"
)

// SealRevision returns b's stored form: the spec text and the sensitive
// variables sealed with sl (values sealed already stay as they are; b is
// not changed). Without a Sealer, b is returned as it is.
func SealRevision(b RevisionBody, sl state.Sealing) (RevisionBody, error) {
	spec, err := sealText(b.Spec, sl)
	if err != nil {
		return b, fmt.Errorf("spec: %w", err)
	}
	b.Spec = spec
	if sl.Sealer != nil && len(b.Sensitive) > 0 {
		b.Variables = maps.Clone(b.Variables)
		for _, k := range b.Sensitive {
			v, ok := b.Variables[k]
			if !ok {
				continue
			}
			if s, isStr := v.(string); isStr && secrets.IsSealed(s) {
				continue
			}
			if b.Variables[k], err = sl.Sealer.SealValue(v); err != nil {
				return b, fmt.Errorf("variable %s: %w", k, err)
			}
			if sl.Reveal != nil {
				sl.Reveal(v)
			}
		}
	}
	return b, nil
}

// ErrSpecSealed is returned for a revision whose spec text is sealed when
// the caller holds no key to open it (a reader such as the web view).
var ErrSpecSealed = errors.New("its spec is sealed and no key opens it")

// OpenRevision opens, in place, what SealRevision sealed in b.
func OpenRevision(b *RevisionBody, sl state.Sealing) error {
	var err error
	if b.Spec, err = openText(b.Spec, sl); err != nil {
		return fmt.Errorf("spec: %w", err)
	}
	for _, k := range b.Sensitive {
		v, ok := b.Variables[k]
		if !ok {
			continue
		}
		if s, isStr := v.(string); isStr && secrets.IsSealed(s) && sl.Sealer != nil {
			if v, err = sl.Sealer.OpenValue(s); err != nil {
				return fmt.Errorf("variable %s: %w", k, err)
			}
			b.Variables[k] = v
		}
		if sl.Reveal != nil {
			sl.Reveal(v)
		}
	}
	return nil
}

func sealText(s string, sl state.Sealing) (string, error) {
	if s == "" || sl.Sealer == nil || secrets.IsSealed(s) {
		return s, nil
	}
	return sl.Sealer.SealValue(s)
}

func openText(s string, sl state.Sealing) (string, error) {
	if sl.Sealer == nil || !secrets.IsSealed(s) {
		return s, nil
	}
	v, err := sl.Sealer.OpenValue(s)
	if err != nil {
		return "", err
	}
	text, ok := v.(string)
	if !ok {
		return "", errors.New("sealed value is not text")
	}
	return text, nil
}
