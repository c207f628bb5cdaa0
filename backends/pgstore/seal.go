package pgstore

import (
	"encoding/json"

	"github.com/bulwark-iac/bulwark/core/state"
	"github.com/bulwark-iac/bulwark/core/storage"
)

// The rows hold sensitive values sealed, as every backend holds them: a
// Commit's change is checked and sealed by storage.SealChange (each
// resource's Sensitive attributes and private data, sensitive outputs),
// revision bodies by storage.SealRevision. What a caller passes and gets
// back is in clear. Without a Sealer, values are written as they are held
// (sealed ones stay sealed). This file only lays sealed values out as rows.

// Every body the state is read from (a resource, the stack's metadata, a
// revision, a backup) is stored with its checksum (storage.Enclose) and
// checked on every read (storage.Disclose): a row edited by hand is refused,
// naming it.

// resourceRow returns a resources row's body: sr (sealed already) as JSON,
// with its checksum.
func resourceRow(sr *state.Resource) ([]byte, error) {
	rec, err := json.Marshal(sr)
	if err != nil {
		return nil, err
	}
	return storage.Enclose(rec)
}

// metaRow returns the stacks row's meta: sm (sealed already) as JSON, with
// its checksum. The lineage has a column of its own.
func metaRow(sm *storage.Meta) ([]byte, error) {
	m := *sm
	m.Lineage = ""
	return storage.MarshalEnclosed(&m)
}
