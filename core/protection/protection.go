// Package protection is a resource's level on the protection ladder
// (docs/architecture.md, "The protection ladder"): one type from the spec
// through the plan, the state and the steps to the provider call, where the
// plugin host turns it into the wire's enum once.
package protection

import "fmt"

// Level is a resource's level on the protection ladder. The levels are
// ordered: a higher one guards more (Durable >= Durable asks consent for a
// replace, Protected is never deleted).
type Level int

const (
	// Unspecified is no level: what a request carries when the host has
	// none to give. It is never recorded.
	Unspecified Level = iota
	Ephemeral
	Durable
	Protected
)

// String is the level's word, as the spec, the state and the output spell
// it; "unspecified" for Unspecified or anything out of range.
func (l Level) String() string {
	switch l {
	case Ephemeral:
		return "ephemeral"
	case Durable:
		return "durable"
	case Protected:
		return "protected"
	}
	return "unspecified"
}

// Parse turns "ephemeral", "durable" or "protected" into a Level; "" is
// Ephemeral, the default level. Anything else is (Unspecified, false).
func Parse(s string) (Level, bool) {
	switch s {
	case "", "ephemeral":
		return Ephemeral, true
	case "durable":
		return Durable, true
	case "protected":
		return Protected, true
	}
	return Unspecified, false
}

// Known reports whether s is the word of a level, exactly ("" is not: a
// state records every level it holds).
func Known(s string) bool { return s == "ephemeral" || s == "durable" || s == "protected" }

// MarshalText writes the level as a state records it: its word, or ""
// for Unspecified (no level: a prior configuration recorded without
// one). A value out of range is an error: it is never written.
func (l Level) MarshalText() ([]byte, error) {
	switch l {
	case Unspecified:
		return []byte{}, nil
	case Ephemeral, Durable, Protected:
		return []byte(l.String()), nil
	}
	return nil, fmt.Errorf("protection level %d is not on the ladder", int(l))
}

// UnmarshalText reads what MarshalText writes: a level's word exactly, or
// "" for Unspecified. Any other word is an error (a state keeps it apart
// to name it: see state.LevelError).
func (l *Level) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		*l = Unspecified
		return nil
	}
	if !Known(string(b)) {
		return fmt.Errorf("protection %q is not ephemeral, durable or protected", b)
	}
	*l, _ = Parse(string(b))
	return nil
}
