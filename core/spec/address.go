package spec

import (
	"fmt"
	"strings"
)

// KeyPattern is what an instance key of a for_each resource must match: a
// list element or a map key used as the KEY of NAME[KEY]. It has no
// brackets, quotes, slashes or spaces, so an address is unambiguous in a
// reference, on a command line and in a file name, and it cannot be "." or
// "..".
const KeyPattern = `[A-Za-z0-9_][A-Za-z0-9_.:-]{0,63}`

var keyRE = lazy(`^` + KeyPattern + `$`)

// ValidKey reports whether key can be an instance key.
func ValidKey(key string) bool {
	return keyRE.MatchString(key) && key != EachKey && key != CountIndex
}

// Address names a resource of a stack: a plain resource ("net") or one
// instance of a for_each resource ("web[a]"). State, plan, events and the
// CLI name resources by Address.String().
type Address struct {
	Name  string // the resource's name, as under resources:
	Key   string // the instance key, when Keyed
	Keyed bool
}

// String returns "NAME" or "NAME[KEY]".
func (a Address) String() string {
	if !a.Keyed {
		return a.Name
	}
	return a.Name + "[" + a.Key + "]"
}

// ParseAddress parses "NAME" or "NAME[KEY]", as a user writes it on the
// command line (e.g. `bulwark state show SPEC 'web[a]'`). A resource of a
// module call is named CALL.NAME ("net.subnet", "net.subnet[a]"): a name
// has no dot and a key comes only inside brackets, so the first dot before
// any "[" is the only one that separates a call from a resource.
func ParseAddress(s string) (Address, error) {
	name, rest, keyed := strings.Cut(s, "[")
	if !validResourceName(name) {
		return Address{}, fmt.Errorf("invalid address %s: the resource name must match %s (or CALL.NAME for a module's resource)", quote(s), namePattern)
	}
	if !keyed {
		return Address{Name: name}, nil
	}
	key, ok := strings.CutSuffix(rest, "]")
	if !ok || !ValidKey(key) {
		return Address{}, fmt.Errorf("invalid address %s: want NAME or NAME[KEY], KEY matching %s", quote(s), KeyPattern)
	}
	return Address{Name: name, Key: key, Keyed: true}, nil
}

// validResourceName reports whether name is a resource name: NAME, or
// CALL.NAME for a resource a module call instantiated.
func validResourceName(name string) bool {
	call, res, dotted := strings.Cut(name, ".")
	if !dotted {
		return nameRE.MatchString(name)
	}
	return nameRE.MatchString(call) && nameRE.MatchString(res)
}
