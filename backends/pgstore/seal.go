package pgstore

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/bulwark-iac/bulwark/core/secrets"
	"github.com/bulwark-iac/bulwark/core/state"
	"github.com/bulwark-iac/bulwark/core/storage"
)

// The rows hold sensitive values sealed, as the file backend's files do,
// through core/state's sealing (SealResource, SealState, OpenState): each
// resource's Sensitive attributes and private data, sensitive outputs, and
// every revision's spec text and sensitive variables. What a caller passes
// and gets back is in clear. Without a Sealer, values are written as they
// are held (sealed ones stay sealed).

// sealedResource returns r's row body: r as JSON with its sensitive values
// sealed. r is not changed.
func sealedResource(r *state.Resource, sl state.Sealing) ([]byte, error) {
	sr, err := state.SealResource(r, sl)
	if err != nil {
		return nil, err
	}
	return json.Marshal(sr)
}

// metaState is the part of a state a Meta is.
func metaState(m *storage.Meta) *state.State {
	st := &state.State{Forgotten: m.Forgotten, Interventions: m.Interventions, Revisions: slices.Clone(m.Revisions),
		Current: m.Current, Staged: m.Staged, Outputs: m.Outputs}
	for i := range st.Revisions {
		st.Revisions[i].Spec = "" // the bodies are PutRevision's
	}
	return st
}

// sealedMeta returns the stacks row's meta: m as JSON with its sensitive
// values (outputs) sealed. The lineage has a column of its own.
func sealedMeta(m *storage.Meta, sl state.Sealing) ([]byte, error) {
	st, err := state.SealState(metaState(m), sl)
	if err != nil {
		return nil, err
	}
	return json.Marshal(&storage.Meta{Forgotten: st.Forgotten, Interventions: st.Interventions, Revisions: st.Revisions,
		Current: st.Current, Staged: st.Staged, Outputs: st.Outputs})
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
		return "", fmt.Errorf("sealed value is not text")
	}
	return text, nil
}

// sealedRevision returns a revisions row's body: the spec and the sensitive
// variables sealed.
func sealedRevision(b storage.RevisionBody, sl state.Sealing) ([]byte, error) {
	spec, err := sealText(b.Spec, sl)
	if err != nil {
		return nil, fmt.Errorf("spec: %w", err)
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
				return nil, fmt.Errorf("variable %s: %w", k, err)
			}
			if sl.Reveal != nil {
				sl.Reveal(v)
			}
		}
	}
	return json.Marshal(&b)
}

func openRevision(b *storage.RevisionBody, sl state.Sealing) error {
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
