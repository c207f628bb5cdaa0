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

// The rows hold sensitive values sealed, as the file backend's state.json
// does: each resource's Sensitive attributes (in its config, attributes and
// prior), every revision's spec text and its sensitive variables. What a
// caller passes and gets back is in clear. Without a Sealer, values are
// written as they are held (sealed ones stay sealed), as core/state does.

// valueMaps are the maps of a resource that hold attribute values.
func valueMaps(r *state.Resource) []map[string]any {
	out := []map[string]any{r.Config, r.Attributes}
	if r.Prior != nil {
		out = append(out, r.Prior.Config, r.Prior.Attributes)
	}
	return out
}

// sealedResource returns r's row body: r as JSON with its sensitive values
// sealed. r is not changed.
func sealedResource(r *state.Resource, sl state.Sealing) ([]byte, error) {
	if sl.Sealer == nil || len(r.Sensitive) == 0 {
		return json.Marshal(r)
	}
	c := *r
	c.Config, c.Attributes = maps.Clone(r.Config), maps.Clone(r.Attributes)
	if r.Prior != nil {
		p := *r.Prior
		p.Config, p.Attributes = maps.Clone(r.Prior.Config), maps.Clone(r.Prior.Attributes)
		c.Prior = &p
	}
	for _, m := range valueMaps(&c) {
		for _, k := range c.Sensitive {
			v, ok := m[k]
			if !ok {
				continue
			}
			if s, isStr := v.(string); isStr && secrets.IsSealed(s) {
				continue // sealed already (loaded without a key)
			}
			sealed, err := sl.Sealer.SealValue(v)
			if err != nil {
				return nil, fmt.Errorf("resource %s, attribute %s: %w", r.Name, k, err)
			}
			if sl.Reveal != nil {
				sl.Reveal(v)
			}
			m[k] = sealed
		}
	}
	return json.Marshal(&c)
}

// openResource opens r's sealed values in place. Without a Sealer they stay
// sealed.
func openResource(r *state.Resource, sl state.Sealing) error {
	for _, m := range valueMaps(r) {
		for _, k := range r.Sensitive {
			v, ok := m[k]
			if !ok {
				continue
			}
			s, isStr := v.(string)
			if isStr && secrets.IsSealed(s) {
				if sl.Sealer == nil {
					continue
				}
				var err error
				if v, err = sl.Sealer.OpenValue(s); err != nil {
					return fmt.Errorf("resource %s, attribute %s: %w", r.Name, k, err)
				}
				m[k] = v
			}
			if sl.Reveal != nil {
				sl.Reveal(v)
			}
		}
	}
	return nil
}

// sealText seals a text (a spec) that may hold provider tokens.
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

// sealedMeta returns the stacks row's meta: m as JSON with any revision
// spec in it sealed (the interface leaves them empty; one that is not is
// still never stored in clear).
func sealedMeta(m *storage.Meta, sl state.Sealing) ([]byte, error) {
	c := *m
	c.Lineage = "" // a column of its own
	c.Revisions = slices.Clone(m.Revisions)
	for i := range c.Revisions {
		var err error
		if c.Revisions[i].Spec, err = sealText(c.Revisions[i].Spec, sl); err != nil {
			return nil, fmt.Errorf("revision %d's spec: %w", c.Revisions[i].N, err)
		}
	}
	return json.Marshal(&c)
}

func openMeta(m *storage.Meta, sl state.Sealing) error {
	for i := range m.Revisions {
		var err error
		if m.Revisions[i].Spec, err = openText(m.Revisions[i].Spec, sl); err != nil {
			return fmt.Errorf("revision %d's spec: %w", m.Revisions[i].N, err)
		}
	}
	return nil
}

// sealedRevision returns a revisions row's body.
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

// knownLevel: a recorded protection level bulwark knows. An unknown one is
// never guessed at (a wrong guess could let a delete through).
func knownLevel(s string) bool { return s == "ephemeral" || s == "durable" || s == "protected" }

// checkLevels refuses a resource whose recorded protection level (or its
// prior's, when it records one) is not a known one.
func checkLevels(r *state.Resource) error {
	if !knownLevel(r.Protection) {
		return fmt.Errorf("resource %q records protection %q, which is not ephemeral, durable or protected: bulwark will not guess its level (a wrong guess could delete it)", r.Name, r.Protection)
	}
	if r.Prior != nil && r.Prior.Protection != "" && !knownLevel(r.Prior.Protection) {
		return fmt.Errorf("resource %q (its prior configuration) records protection %q, which is not ephemeral, durable or protected: bulwark will not guess its level", r.Name, r.Prior.Protection)
	}
	return nil
}
