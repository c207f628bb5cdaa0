package state

import (
	"bytes"
	"encoding/base64"
	"encoding/json"

	"github.com/bulwark-iac/bulwark/core/secrets"
)

// Private is a provider's private data about a resource: the contract's
// private bytes, from its Create, Read, Update or Import, handed back on
// every later call about it. In memory it is the bytes themselves, decoded
// once when the state is loaded, never on a request. What is stored is its
// standard base64 text, sealed whenever the stack has a key: a provider may
// keep secrets there (see Sealing).
//
// A Private loaded without the stack's key stays sealed (Bytes is nil and
// it is written back as it was read); one whose stored text is neither
// base64 nor sealed is damaged: it keeps the text, Bytes is nil, and
// CheckPrivate refuses the state that holds it.
type Private struct {
	b    []byte // the data in clear; nil when there is none, or it is text
	text string // the stored text when it is not in clear: sealed, or damaged
}

// PrivateOf is the private data b (none when b is empty).
func PrivateOf(b []byte) Private {
	if len(b) == 0 {
		return Private{}
	}
	return Private{b: b}
}

// parsePrivate reads the stored text of private data.
func parsePrivate(text string) Private {
	if text == "" {
		return Private{}
	}
	if secrets.IsSealed(text) {
		return Private{text: text}
	}
	b, err := base64.StdEncoding.DecodeString(text)
	if err != nil || len(b) == 0 {
		return Private{text: text}
	}
	return Private{b: b}
}

// Bytes is the data in clear: nil when there is none, or it is sealed
// (loaded without the stack's key) or damaged.
func (p Private) Bytes() []byte { return p.b }

// IsZero reports whether there is no private data.
func (p Private) IsZero() bool { return p.b == nil && p.text == "" }

// Sealed reports whether the data is held sealed.
func (p Private) Sealed() bool { return p.text != "" && secrets.IsSealed(p.text) }

// clear reports whether the data is held in clear (or damaged: not sealed
// either), which a store must not write as it is when it has a key.
func (p Private) clear() bool { return !p.IsZero() && !p.Sealed() }

// Text is the stored form: the base64 text of the data, or the text it was
// read as (sealed or damaged).
func (p Private) Text() string {
	if p.b != nil {
		return base64.StdEncoding.EncodeToString(p.b)
	}
	return p.text
}

// decodeError is why the stored text is not private data (nil when it is).
func (p Private) decodeError() error {
	if p.b != nil || p.text == "" || secrets.IsSealed(p.text) {
		return nil
	}
	_, err := base64.StdEncoding.DecodeString(p.text)
	return err
}

// MarshalJSON writes the stored form, a JSON string.
func (p Private) MarshalJSON() ([]byte, error) { return json.Marshal(p.Text()) }

// UnmarshalJSON reads the stored form. Text that is not base64 is kept,
// not refused here: CheckPrivate names the resource (and state forget can
// still drop it).
func (p *Private) UnmarshalJSON(b []byte) error {
	var text string
	if err := json.Unmarshal(b, &text); err != nil {
		return err
	}
	*p = parsePrivate(text)
	return nil
}

// Equal reports whether p and o hold the same data in the same form (what
// go-cmp, and tests comparing states, use).
func (p Private) Equal(o Private) bool { return bytes.Equal(p.b, o.b) && p.text == o.text }
