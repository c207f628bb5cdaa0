package plan

// UnknownText is how a value known only after apply is shown, in a plan's
// text and in its --json, as Terraform shows it.
const UnknownText = "(known after apply)"

// AfterApply stands, in a resolved config, for a value known only after apply:
// a reference to an attribute of a resource this run creates or replaces
// (its id, a computed attribute). It is never sent to a provider or
// recorded: only a plan holds it. It compares unequal to every value (even
// another AfterApply), so the attribute it is in counts as changed: an
// in-place update, or a replace when the attribute is force_new.
type AfterApply struct{}

// MarshalJSON writes UnknownText.
func (AfterApply) MarshalJSON() ([]byte, error) { return []byte(`"` + UnknownText + `"`), nil }

func (AfterApply) String() string { return UnknownText }

// HasUnknown reports whether v holds an AfterApply, at any depth.
func HasUnknown(v any) bool {
	switch t := v.(type) {
	case AfterApply, *AfterApply:
		return true
	case map[string]any:
		for _, e := range t {
			if HasUnknown(e) {
				return true
			}
		}
	case []any:
		for _, e := range t {
			if HasUnknown(e) {
				return true
			}
		}
	}
	return false
}

// UnknownKeys returns, sorted, the keys of cfg whose values hold an AfterApply.
func UnknownKeys(cfg map[string]any) []string {
	var out []string
	for k, v := range cfg {
		if HasUnknown(v) {
			out = append(out, k)
		}
	}
	sortStrings(out)
	return out
}

// Known returns cfg without the keys whose values hold an AfterApply (what a
// provider may be shown before apply), or cfg itself when it has none.
func Known(cfg map[string]any) map[string]any {
	unknown := UnknownKeys(cfg)
	if len(unknown) == 0 {
		return cfg
	}
	out := make(map[string]any, len(cfg))
	for k, v := range cfg {
		out[k] = v
	}
	for _, k := range unknown {
		delete(out, k)
	}
	return out
}
