package state

import (
	"encoding/json"
	"strconv"

	"github.com/bulwark-iac/bulwark/core/protection"
)

// A resource's (and a prior's) protection is a protection.Level in memory
// and its word in what is stored: "ephemeral", "durable", "protected", or
// "" for none (protection.Level's MarshalText). A stored word that names
// no level is not refused while decoding (a journal record or a row that
// holds one must not read as damaged in some other way): the level is
// then Unspecified and the word is kept beside it, so that checkLevels,
// which every Load and every write runs, refuses it by name
// (a *LevelError naming the resource and the very word).

// onLadder reports whether l is ephemeral, durable or protected.
func onLadder(l protection.Level) bool {
	return l == protection.Ephemeral || l == protection.Durable || l == protection.Protected
}

// readLevel is the level a stored word records, and the word itself when
// it names none ("" is Unspecified, and no unknown word).
func readLevel(word string) (protection.Level, string) {
	if word == "" {
		return protection.Unspecified, ""
	}
	if !protection.Known(word) {
		return protection.Unspecified, word
	}
	l, _ := protection.Parse(word)
	return l, ""
}

// recordedWord is what a LevelError names: the word read (unknown), or
// the level's stored form ("" for Unspecified).
func recordedWord(l protection.Level, word string) string {
	if word != "" {
		return word
	}
	if b, err := l.MarshalText(); err == nil {
		return string(b)
	}
	return "level " + strconv.Itoa(int(l))
}

// UnmarshalJSON reads r's stored form, its protection word as readLevel
// does.
func (r *Resource) UnmarshalJSON(b []byte) error {
	type fields Resource // r's fields, without this method
	v := struct {
		*fields
		Protection string `json:"protection"`
	}{fields: (*fields)(r)}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	r.Protection, r.UnknownProtection = readLevel(v.Protection)
	return nil
}

// UnmarshalJSON reads p's stored form, its protection word as readLevel
// does.
func (p *Prior) UnmarshalJSON(b []byte) error {
	type fields Prior
	v := struct {
		*fields
		Protection string `json:"protection"`
	}{fields: (*fields)(p)}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	p.Protection, p.UnknownProtection = readLevel(v.Protection)
	return nil
}
