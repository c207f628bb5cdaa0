package state

import (
	"encoding/json"

	"github.com/bulwark-iac/bulwark/core/protection"

	"github.com/bulwark-iac/bulwark/core/value"
)

// AppendJSON appends r's JSON (the very bytes json.Marshal writes for r:
// the same fields, order, omissions and escaping; encode_test.go holds the
// two equal) without its reflection: every step that changes a resource
// encodes it into its commit, and a state snapshot encodes every one. A
// nil r is null.
func (r *Resource) AppendJSON(b []byte) ([]byte, error) {
	if r == nil {
		return append(b, "null"...), nil
	}
	var err error
	b = append(b, `{"name":`...)
	b = value.AppendJSONString(b, r.Name)
	b = append(b, `,"type":`...)
	b = value.AppendJSONString(b, r.Type)
	b = append(b, `,"provider":`...)
	b = value.AppendJSONString(b, r.Provider)
	b = append(b, `,"source":`...)
	b = value.AppendJSONString(b, r.Source)
	b = append(b, `,"id":`...)
	b = value.AppendJSONString(b, r.ID)
	b = append(b, `,"protection":`...)
	if b, err = appendLevel(b, r.Protection); err != nil {
		return nil, err
	}
	if len(r.DependsOn) > 0 {
		b = append(b, `,"depends_on":`...)
		b = value.AppendJSONStrings(b, r.DependsOn)
	}
	if len(r.Config) > 0 {
		b = append(b, `,"config":`...)
		if b, err = value.AppendJSONMap(b, r.Config); err != nil {
			return nil, err
		}
	}
	if len(r.Attributes) > 0 {
		b = append(b, `,"attributes":`...)
		if b, err = value.AppendJSONMap(b, r.Attributes); err != nil {
			return nil, err
		}
	}
	b = appendOptString(b, `,"created_by":`, r.CreatedBy)
	b = appendOptString(b, `,"updated_by":`, r.UpdatedBy)
	b = appendOptString(b, `,"idempotency_key":`, r.IdempotencyKey)
	if r.Imported {
		b = append(b, `,"imported":true`...)
	}
	b = appendOptString(b, `,"retained_by":`, r.RetainedBy)
	if r.Prior != nil {
		// Only what an update replaced: rare, left to json.Marshal.
		p, err := json.Marshal(r.Prior)
		if err != nil {
			return nil, err
		}
		b = append(b, `,"prior":`...)
		b = append(b, p...)
	}
	b = appendOptString(b, `,"deposed_from":`, r.DeposedFrom)
	b = appendOptString(b, `,"deposed_by":`, r.DeposedBy)
	if len(r.Sensitive) > 0 {
		b = append(b, `,"sensitive":`...)
		b = value.AppendJSONStrings(b, r.Sensitive)
	}
	b = appendOptString(b, `,"private":`, r.Private.Text())
	b = appendOptString(b, `,"validated":`, r.Validated)
	return append(b, '}'), nil
}

func appendOptString(b []byte, key, s string) []byte {
	if s == "" {
		return b
	}
	b = append(b, key...)
	return value.AppendJSONString(b, s)
}

// appendLevel appends l's stored form as a JSON string, as its MarshalText
// does for json.Marshal.
func appendLevel(b []byte, l protection.Level) ([]byte, error) {
	switch l {
	case protection.Unspecified:
		return append(b, `""`...), nil
	case protection.Ephemeral, protection.Durable, protection.Protected:
		b = append(b, '"')
		b = append(b, l.String()...)
		return append(b, '"'), nil
	}
	_, err := l.MarshalText()
	return nil, err
}
