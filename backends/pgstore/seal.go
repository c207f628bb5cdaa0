package pgstore

import (
	"encoding/json"
	"slices"

	"github.com/bulwark-iac/bulwark/core/state"
	"github.com/bulwark-iac/bulwark/core/storage"
)

// The rows hold sensitive values sealed, as the file backend's files do,
// through core/state's sealing (SealResource, SealState, OpenState): each
// resource's Sensitive attributes and private data, sensitive outputs, and
// every revision's spec text and sensitive variables. What a caller passes
// and gets back is in clear. Without a Sealer, values are written as they
// are held (sealed ones stay sealed).

// Every body the state is read from (a resource, the stack's metadata, a
// revision, a backup) is stored with its checksum (storage.Enclose) and
// checked on every read (storage.Disclose): a row edited by hand is refused,
// naming it.

// sealedResource returns r's row body: r as JSON with its sensitive values
// sealed, with its checksum. r is not changed.
func sealedResource(r *state.Resource, sl state.Sealing) ([]byte, error) {
	rec, err := sealedResourceRecord(r, sl)
	if err != nil {
		return nil, err
	}
	return storage.Enclose(rec)
}

// sealedResourceRecord is sealedResource without the checksum (a resource
// inside a backup's body, which has its own).
func sealedResourceRecord(r *state.Resource, sl state.Sealing) ([]byte, error) {
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
// values (outputs) sealed, with its checksum. The lineage has a column of
// its own.
func sealedMeta(m *storage.Meta, sl state.Sealing) ([]byte, error) {
	sm, err := sealedMetaOf(m, sl)
	if err != nil {
		return nil, err
	}
	return storage.MarshalEnclosed(sm)
}

// sealedMetaOf is m with its sensitive values sealed.
func sealedMetaOf(m *storage.Meta, sl state.Sealing) (*storage.Meta, error) {
	st, err := state.SealState(metaState(m), sl)
	if err != nil {
		return nil, err
	}
	return &storage.Meta{Forgotten: st.Forgotten, Interventions: st.Interventions, Revisions: st.Revisions,
		Current: st.Current, Staged: st.Staged, Outputs: st.Outputs}, nil
}

// sealedRevision returns a revisions row's body: the spec and the sensitive
// variables sealed (storage.SealRevision).
func sealedRevision(b storage.RevisionBody, sl state.Sealing) ([]byte, error) {
	sb, err := storage.SealRevision(b, sl)
	if err != nil {
		return nil, err
	}
	return storage.MarshalEnclosed(&sb)
}
