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
// module call is named CALL.NAME ("net.subnet", "net.subnet[a]"), and one
// of an instance of a call with for_each or count CALL["KEY"].NAME or
// CALL[N].NAME, as Terraform writes module.CALL["KEY"].NAME; calls nest
// (outer.inner.NAME). A name has no dot and a key of a resource comes only
// inside brackets, so the dots outside brackets separate the calls from
// the resource. The resource's own key may be written bare or quoted
// (web[a], web["a"]); the address keeps it bare.
func ParseAddress(s string) (Address, error) {
	segs, ok := addressSegments(s)
	if !ok {
		return Address{}, fmt.Errorf("invalid address %s: want NAME or NAME[KEY], KEY matching %s, or CALL.NAME, CALL[\"KEY\"].NAME or CALL[N].NAME for a module's resource", quote(s), KeyPattern)
	}
	last := segs[len(segs)-1]
	var b strings.Builder
	for i, sg := range segs[:len(segs)-1] {
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(sg.name)
		if !sg.keyed {
			continue
		}
		switch {
		case sg.quoted:
			b.WriteString(`["` + sg.key + `"]`)
		case isIndex(sg.key):
			b.WriteString("[" + sg.key + "]")
		default:
			return Address{}, fmt.Errorf("invalid address %s: the key of module call %s is written quoted, %s[%q], or as a count index, %s[0]", quote(s), quote(sg.name), sg.name, sg.key, sg.name)
		}
	}
	if len(segs) > 1 {
		b.WriteByte('.')
	}
	b.WriteString(last.name)
	a := Address{Name: b.String()}
	if last.keyed {
		if !ValidKey(last.key) {
			return Address{}, fmt.Errorf("invalid address %s: want NAME or NAME[KEY], KEY matching %s", quote(s), KeyPattern)
		}
		a.Key, a.Keyed = last.key, true
	}
	return a, nil
}

// segment is one NAME or NAME[KEY] of an address.
type segment struct {
	name, key     string
	keyed, quoted bool
}

// addressSegments splits s at the dots outside brackets; each segment is
// a name with an optional key, bare or quoted, matching KeyPattern.
func addressSegments(s string) ([]segment, bool) {
	var out []segment
	for rest := s; ; {
		i := strings.IndexAny(rest, ".[")
		sg := segment{name: rest}
		if i >= 0 {
			sg.name = rest[:i]
		}
		if !nameRE.MatchString(sg.name) {
			return nil, false
		}
		if i < 0 {
			return append(out, sg), true
		}
		rest = rest[i:]
		if rest[0] == '[' {
			j := strings.IndexByte(rest, ']')
			if j < 0 {
				return nil, false
			}
			key := rest[1:j]
			if k, ok := strings.CutPrefix(key, `"`); ok {
				if key, ok = strings.CutSuffix(k, `"`); !ok {
					return nil, false
				}
				sg.quoted = true
			}
			if !keyRE.MatchString(key) {
				return nil, false
			}
			sg.key, sg.keyed = key, true
			rest = rest[j+1:]
		}
		out = append(out, sg)
		if rest == "" {
			return out, true
		}
		if rest[0] != '.' || len(rest) == 1 {
			return nil, false
		}
		rest = rest[1:]
	}
}

// isIndex reports whether key is a count index: a whole number written
// without a sign or leading zeros.
func isIndex(key string) bool {
	if key == "" || len(key) > 1 && key[0] == '0' {
		return false
	}
	for _, c := range key {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// validResourceName reports whether name is a resource name: NAME, or
// CALL.NAME for a resource a module call instantiated (CALL["KEY"].NAME,
// CALL[N].NAME, nested calls).
func validResourceName(name string) bool {
	a, err := ParseAddress(name)
	return err == nil && !a.Keyed && a.Name == name
}
