package state

import (
	"fmt"
	"maps"
	"slices"

	"github.com/bulwark-iac/bulwark/core/secrets"
)

// SensitiveID, listed in a Resource's Sensitive, says that its ID holds a
// secret (a bucket named "bk-${var.tok}" has the bucket's name for its id):
// what is stored holds the ID sealed, and what is shown masks it. It can be
// no attribute's name. In memory, opened with the key, the ID is clear: the
// provider is asked by it.
const SensitiveID = "(id)"

// Sealer seals the state's sensitive values for its file and opens them
// again; a *secrets.Box bound to the stack is one.
type Sealer interface {
	SealValue(v any) (string, error)
	OpenValue(sealed string) (any, error)
}

// SecretsUser is a Sealer that learns the secrets provider of each state
// (or metadata) it opens before it opens its values, so it knows which key
// they were sealed with.
type SecretsUser interface {
	UseSecrets(cfg *secrets.Config)
}

// Sealing is how a Store keeps sensitive values out of its file: the values
// of the attributes each resource lists as Sensitive (in its config, its
// attributes and its prior) and every revision's spec text (it may hold
// provider tokens) are sealed in the file, and clear in memory.
type Sealing struct {
	// Sealer seals and opens. Without one, sealed values stay sealed in
	// memory and everything is written as it is held (commands that change
	// no value, like ack, need no key).
	Sealer Sealer
	// Reveal, when set, is told every sensitive value opened or sealed
	// (a secrets.Redactor's Add), so it can be masked in any text.
	Reveal func(v any)
}

// OpenSealed is Open with sensitive values opened on load and sealed on
// every write.
func OpenSealed(dir, stack string, sl Sealing) (*Store, error) {
	s, err := Open(dir, stack)
	if err != nil {
		return nil, err
	}
	s.sealing = sl
	if s.clear, err = openValues(s.st, sl); err != nil {
		return nil, fmt.Errorf("open state %s: %w", dir, err)
	}
	return s, nil
}

// LoadSealed is Load with sensitive values opened.
func LoadSealed(path string, sl Sealing) (*State, error) {
	st, err := Load(path)
	if err != nil {
		return nil, err
	}
	if _, err := openValues(st, sl); err != nil {
		return nil, fmt.Errorf("load state %s: %w", path, err)
	}
	return st, nil
}

// SetSensitive tells the Store which attributes of a resource are
// sensitive (from its provider's schema); they are added to what each
// resource already lists. When the file still holds a sensitive value or
// a revision's spec in clear (written before sealing existed), it is
// rewritten sealed now, and SetSensitive reports it (the caller then
// reseals the backups of that old state: see ResealFile).
func (s *Store) SetSensitive(fn func(r *Resource) []string) (resealed bool, err error) {
	s.mu.Lock()
	s.sensitiveOf = fn
	grows := false
	for _, r := range s.st.Resources {
		if add := missing(r.Sensitive, fn(r)); len(add) > 0 && hasAny(r, add) {
			grows = true
		}
	}
	rewrite := s.sealing.Sealer != nil && (s.clear || grows)
	s.mu.Unlock()
	if !rewrite {
		return false, nil
	}
	if err := s.Mutate(func(*State) error { return nil }); err != nil {
		return false, err
	}
	s.mu.Lock()
	s.clear = false
	s.mu.Unlock()
	return true, nil
}

// markSensitive adds what sensitiveOf says to each resource's list; s.mu is
// held.
func (s *Store) markSensitive(st *State) {
	if s.sensitiveOf == nil {
		return
	}
	for _, r := range st.Resources {
		if add := missing(r.Sensitive, s.sensitiveOf(r)); len(add) > 0 {
			r.Sensitive = append(slices.Clone(r.Sensitive), add...)
			slices.Sort(r.Sensitive)
		}
	}
}

func missing(have, want []string) []string {
	var out []string
	for _, k := range want {
		if !slices.Contains(have, k) && !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out
}

func hasAny(r *Resource, keys []string) bool {
	if r.ID != "" && slices.Contains(keys, SensitiveID) {
		return true
	}
	for _, m := range valueMaps(r) {
		for _, k := range keys {
			if _, ok := m[k]; ok {
				return true
			}
		}
	}
	return false
}

// valueMaps are the maps of a resource that hold attribute values.
func valueMaps(r *Resource) []map[string]any {
	out := []map[string]any{r.Config, r.Attributes}
	if r.Prior != nil {
		out = append(out, r.Prior.Config, r.Prior.Attributes)
	}
	return out
}

// openValues opens, in place, the sealed values of st. It reports whether
// st holds, in clear, something the file should have sealed (a state
// written before sealing, or by a Store without a Sealer).
func openValues(st *State, sl Sealing) (clear bool, err error) {
	if u, ok := sl.Sealer.(SecretsUser); ok && st.Secrets != nil {
		u.UseSecrets(st.Secrets)
	}
	for _, name := range st.Names() {
		r := st.Resources[name]
		for _, m := range valueMaps(r) {
			for _, k := range r.Sensitive {
				v, ok := m[k]
				if !ok {
					continue
				}
				sv, sealed := v.(string)
				sealed = sealed && secrets.IsSealed(sv)
				switch {
				case !sealed:
					clear = true
				case sl.Sealer != nil:
					if v, err = sl.Sealer.OpenValue(sv); err != nil {
						return clear, fmt.Errorf("resource %s, attribute %s: %w", name, k, err)
					}
					m[k] = v
				default:
					continue
				}
				if sl.Reveal != nil {
					sl.Reveal(v)
				}
			}
		}
		switch {
		case r.Private.IsZero():
		case r.Private.clear():
			clear = true
		case sl.Sealer != nil:
			text, err := openPrivate(sl.Sealer, r.Private.Text())
			if err != nil {
				return clear, fmt.Errorf("resource %s, private data: %w", name, err)
			}
			r.Private = parsePrivate(text)
		}
		if r.ID != "" && slices.Contains(r.Sensitive, SensitiveID) {
			switch {
			case !secrets.IsSealed(r.ID):
				clear = true
			case sl.Sealer != nil:
				if r.ID, err = openPrivate(sl.Sealer, r.ID); err != nil {
					return clear, fmt.Errorf("resource %s, id: %w", name, err)
				}
			default:
				continue
			}
			if sl.Reveal != nil {
				sl.Reveal(r.ID)
			}
		}
	}
	if err := openExtras(st, sl, &clear); err != nil {
		return clear, err
	}
	for i := range st.Revisions {
		rev := &st.Revisions[i]
		switch {
		case rev.Spec == "":
		case !secrets.IsSealed(rev.Spec):
			clear = true
		case sl.Sealer != nil:
			v, err := sl.Sealer.OpenValue(rev.Spec)
			if err != nil {
				return clear, fmt.Errorf("revision %d's spec: %w", rev.N, err)
			}
			text, ok := v.(string)
			if !ok {
				return clear, fmt.Errorf("revision %d's spec: sealed value is not text", rev.N)
			}
			rev.Spec = text
		}
	}
	return clear, nil
}

// sealValues returns the form of st its file holds: a copy with every
// sensitive value and every revision's spec sealed. Without a Sealer it is
// st itself.
func sealValues(st *State, sl Sealing) (*State, error) {
	if sl.Sealer == nil {
		return st, nil
	}
	out := st.Clone()
	for _, name := range out.Names() {
		r := out.Resources[name]
		for _, m := range valueMaps(r) {
			for _, k := range r.Sensitive {
				v, ok := m[k]
				if !ok {
					continue
				}
				if sv, isStr := v.(string); isStr && secrets.IsSealed(sv) {
					continue // sealed already (loaded without a key)
				}
				sealed, err := sl.Sealer.SealValue(v)
				if err != nil {
					return nil, fmt.Errorf("resource %s, attribute %s: %w", name, k, err)
				}
				if sl.Reveal != nil {
					sl.Reveal(v)
				}
				m[k] = sealed
			}
		}
		if r.Private.clear() {
			sealed, err := sl.Sealer.SealValue(r.Private.Text())
			if err != nil {
				return nil, fmt.Errorf("resource %s, private data: %w", name, err)
			}
			r.Private = Private{text: sealed}
		}
		if err := sealID(r, sl); err != nil {
			return nil, err
		}
	}
	if err := sealExtras(out, sl); err != nil {
		return nil, err
	}
	for i := range out.Revisions {
		rev := &out.Revisions[i]
		if rev.Spec == "" || secrets.IsSealed(rev.Spec) {
			continue
		}
		sealed, err := sl.Sealer.SealValue(rev.Spec)
		if err != nil {
			return nil, fmt.Errorf("revision %d's spec: %w", rev.N, err)
		}
		rev.Spec = sealed
	}
	return out, nil
}

// ResealFile rewrites a state file that is not the Store's own (a backup)
// so that it holds nothing in clear that sealing seals: the attributes each
// resource lists or sensitiveOf names, and every revision's spec. A file
// with nothing in clear is left as it is. It reports whether it rewrote.
func ResealFile(path string, sl Sealing, sensitiveOf func(*Resource) []string) (bool, error) {
	if sl.Sealer == nil {
		return false, nil
	}
	st, err := Load(path)
	if err != nil {
		return false, err
	}
	clear, err := openValues(st, Sealing{})
	if err != nil {
		return false, err
	}
	if sensitiveOf != nil {
		for _, r := range st.Resources {
			if add := missing(r.Sensitive, sensitiveOf(r)); len(add) > 0 && hasAny(r, add) {
				clear = true
			}
		}
		(&Store{sensitiveOf: sensitiveOf}).markSensitive(st)
	}
	if !clear {
		return false, nil
	}
	disk, err := sealValues(st, sl)
	if err != nil {
		return false, fmt.Errorf("reseal %s: %w", path, err)
	}
	return true, write(path, disk)
}

// eachExtra calls fn on every sensitive value of st outside its resources,
// storing what fn returns in its place.
func eachExtra(st *State, fn func(what string, v any) (any, error)) error {
	for _, name := range slices.Sorted(maps.Keys(st.Outputs)) {
		o := st.Outputs[name]
		if !o.Sensitive {
			continue
		}
		v, err := fn("output "+name, o.Value)
		if err != nil {
			return err
		}
		o.Value = v
		st.Outputs[name] = o
	}
	for i := range st.Revisions {
		rev := &st.Revisions[i]
		for _, k := range rev.SensitiveVariables {
			v, ok := rev.Variables[k]
			if !ok {
				continue
			}
			v, err := fn(fmt.Sprintf("revision %d's variable %s", rev.N, k), v)
			if err != nil {
				return err
			}
			rev.Variables[k] = v
		}
	}
	return nil
}

// openExtras opens st's sealed outputs and revision variables in place,
// setting *clear when one is held in clear.
func openExtras(st *State, sl Sealing, clear *bool) error {
	return eachExtra(st, func(what string, v any) (any, error) {
		sv, sealed := v.(string)
		sealed = sealed && secrets.IsSealed(sv)
		switch {
		case !sealed:
			*clear = true
		case sl.Sealer != nil:
			var err error
			if v, err = sl.Sealer.OpenValue(sv); err != nil {
				return nil, fmt.Errorf("%s: %w", what, err)
			}
		default:
			return v, nil
		}
		if sl.Reveal != nil {
			sl.Reveal(v)
		}
		return v, nil
	})
}

// sealExtras seals st's sensitive outputs and revision variables in place.
func sealExtras(st *State, sl Sealing) error {
	return eachExtra(st, func(what string, v any) (any, error) {
		if sv, isStr := v.(string); isStr && secrets.IsSealed(sv) {
			return v, nil
		}
		sealed, err := sl.Sealer.SealValue(v)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		if sl.Reveal != nil {
			sl.Reveal(v)
		}
		return sealed, nil
	})
}

// sealID seals, in place, r's ID when r lists it sensitive (SensitiveID)
// and it is not sealed already; sl has a Sealer.
func sealID(r *Resource, sl Sealing) error {
	if r.ID == "" || secrets.IsSealed(r.ID) || !slices.Contains(r.Sensitive, SensitiveID) {
		return nil
	}
	sealed, err := sl.Sealer.SealValue(r.ID)
	if err != nil {
		return fmt.Errorf("resource %s, id: %w", r.Name, err)
	}
	if sl.Reveal != nil {
		sl.Reveal(r.ID)
	}
	r.ID = sealed
	return nil
}

// openPrivate opens a resource's sealed private data (its base64 text).
func openPrivate(sl Sealer, sealed string) (string, error) {
	v, err := sl.OpenValue(sealed)
	if err != nil {
		return "", err
	}
	text, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("sealed value is not text")
	}
	return text, nil
}

// OpenState opens, in place, the sealed values of st (see Sealing). It
// reports whether st holds, in clear, something a store should have sealed.
func OpenState(st *State, sl Sealing) (clear bool, err error) { return openValues(st, sl) }

// SealState returns the form of st a store holds: a copy with every
// sensitive value and every revision's spec sealed (st itself without a
// Sealer).
func SealState(st *State, sl Sealing) (*State, error) { return sealValues(st, sl) }

// SealResource returns the form of r a store holds: r itself when it lists
// nothing sensitive or there is no Sealer, else a copy whose value maps
// hold every value r.Sensitive names sealed. r is not changed.
func SealResource(r *Resource, sl Sealing) (*Resource, error) {
	hasPrivate := r.Private.clear()
	if sl.Sealer == nil || ((len(r.Sensitive) == 0 || !hasAny(r, r.Sensitive)) && !hasPrivate) {
		return r, nil
	}
	out := *r
	if err := sealID(&out, sl); err != nil {
		return nil, err
	}
	if hasPrivate {
		sealed, err := sl.Sealer.SealValue(r.Private.Text())
		if err != nil {
			return nil, fmt.Errorf("resource %s, private data: %w", r.Name, err)
		}
		out.Private = Private{text: sealed}
	}
	seal := func(m map[string]any) (map[string]any, error) {
		if m == nil {
			return nil, nil
		}
		c := make(map[string]any, len(m))
		for k, v := range m {
			c[k] = v
		}
		for _, k := range r.Sensitive {
			v, ok := c[k]
			if !ok {
				continue
			}
			if sv, isStr := v.(string); isStr && secrets.IsSealed(sv) {
				continue
			}
			sealed, err := sl.Sealer.SealValue(v)
			if err != nil {
				return nil, fmt.Errorf("resource %s, attribute %s: %w", r.Name, k, err)
			}
			if sl.Reveal != nil {
				sl.Reveal(v)
			}
			c[k] = sealed
		}
		return c, nil
	}
	var err error
	if out.Config, err = seal(r.Config); err != nil {
		return nil, err
	}
	if out.Attributes, err = seal(r.Attributes); err != nil {
		return nil, err
	}
	if r.Prior != nil {
		p := *r.Prior
		if p.Config, err = seal(r.Prior.Config); err != nil {
			return nil, err
		}
		if p.Attributes, err = seal(r.Prior.Attributes); err != nil {
			return nil, err
		}
		out.Prior = &p
	}
	return &out, nil
}

// OpenResource opens, in place, the sealed values of r (one decoded from a
// store, owned by the caller).
func OpenResource(r *Resource, sl Sealing) error {
	st := &State{Resources: map[string]*Resource{r.Name: r}}
	_, err := openValues(st, sl)
	return err
}
