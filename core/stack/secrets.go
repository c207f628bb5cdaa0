package stack

import (
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	"github.com/bulwark-iac/bulwark/core/plan"
	"github.com/bulwark-iac/bulwark/core/providers"
	"github.com/bulwark-iac/bulwark/core/secrets"
	"github.com/bulwark-iac/bulwark/core/state"
)

// sealer seals the state's values with the key of opts.Secrets, bound to
// the stack, resolving the key on first use: opening needs a key that
// exists; sealing may create the default key file.
type sealer struct {
	src     *secrets.Source
	context string

	mu  sync.Mutex
	box *secrets.Box
}

func (l *sealer) get(create bool) (*secrets.Box, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.box != nil {
		return l.box, nil
	}
	k, err := l.src.Key(create)
	if err != nil {
		return nil, err
	}
	l.box = k.Box(l.context)
	return l.box, nil
}

func (l *sealer) SealValue(v any) (string, error) {
	b, err := l.get(true)
	if err != nil {
		return "", err
	}
	return b.SealValue(v)
}

func (l *sealer) OpenValue(sealed string) (any, error) {
	b, err := l.get(false)
	if err != nil {
		return nil, err
	}
	return b.OpenValue(sealed)
}

// sealing is how this session's state keeps its sensitive values: sealed
// under the stack's name, each one it sees told to the Redactor.
func (s *session) sealing() state.Sealing {
	sl := state.Sealing{Reveal: func(v any) { s.opts.Redactor.Add(v) }}
	if s.opts.Secrets != nil {
		sl.Sealer = &sealer{src: s.opts.Secrets, context: secrets.StackContext(s.sp.Stack)}
	}
	return sl
}

// sensitiveAttrs lists the attributes of a resource type that its schema
// marks sensitive.
func sensitiveAttrs(schema *providers.GetSchemaResponse, typ string) []string {
	if schema == nil {
		return nil
	}
	rt, ok := schema.ResourceType(typ)
	if !ok {
		return nil
	}
	var out []string
	for _, a := range rt.Attributes {
		if a.Sensitive {
			out = append(out, a.Name)
		}
	}
	return out
}

// sensitiveOf is what the state asks to know which of a recorded
// resource's attributes to seal: those its provider's schema marks, and
// every one whose value holds a secret the session knows, whichever side
// computed it (a folder or an arn the provider made from a path or a
// bucket name that quotes a sensitive variable). An ID that holds one is
// listed as state.SensitiveID: it is sealed in what is stored, and masked
// wherever it is shown.
func (s *session) sensitiveOf(r *state.Resource) []string {
	var out []string
	if p := s.plugins[r.Provider]; p != nil {
		out = sensitiveAttrs(p.Schema(), r.Type)
	}
	if !s.knowsSecrets() {
		return out
	}
	vals := []map[string]any{r.Config, r.Attributes}
	if r.Prior != nil {
		vals = append(vals, r.Prior.Config, r.Prior.Attributes)
	}
	out = append(out, s.secretKeys(vals...)...)
	if r.ID != "" && !slices.Contains(r.Sensitive, state.SensitiveID) && !secrets.IsSealed(r.ID) && s.holdsSecret(r.ID) {
		out = append(out, state.SensitiveID)
	}
	return out
}

// secretKeys lists the keys of ms whose values hold a secret the session
// knows (what a provider computed from one included), for the plan to mask
// whole.
func (s *session) secretKeys(ms ...map[string]any) []string {
	if !s.knowsSecrets() {
		return nil
	}
	var out []string
	for _, m := range ms {
		for k, v := range m {
			if !slices.Contains(out, k) && s.holdsSecret(v) {
				out = append(out, k)
			}
		}
	}
	return out
}

// planSecrets lists what a plan must mask of c beyond what the schema and
// the state say: the keys whose values hold a secret (observed ones
// included), and state.SensitiveID when an id it names holds one.
func (s *session) planSecrets(c plan.Change, observed map[string]any) []string {
	out := s.secretKeys(c.Before, c.After, observed)
	if s.knowsSecrets() && (s.holdsSecret(c.FoundID) || s.holdsSecret(c.ImportID)) {
		out = append(out, state.SensitiveID)
	}
	return out
}

// knowsSecrets reports whether the session knows any sensitive value: when
// it knows none, no value can hold one.
func (s *session) knowsSecrets() bool {
	return s.opts.Redactor.Len() > 0 || len(s.sensitiveVars()) > 0
}

// learnSecrets tells the Redactor the sensitive values that provider n's
// schema reveals: its sensitive config, and the sensitive attributes of the
// spec's and the state's resources it manages.
func (s *session) learnSecrets(n string, schema *providers.GetSchemaResponse, st *state.State) {
	red := s.opts.Redactor
	if schema == nil {
		return
	}
	if p, ok := s.sp.Providers[n]; ok {
		LearnProviderConfig(red, p.Config, schema)
	}
	for _, r := range s.sp.Resources {
		if r.Provider == n {
			for _, k := range sensitiveAttrs(schema, r.Type) {
				red.Add(r.Config[k])
			}
		}
	}
	if st == nil {
		return
	}
	for _, r := range st.Resources {
		if r.Provider != n {
			continue
		}
		keys := append(slices.Clone(r.Sensitive), sensitiveAttrs(schema, r.Type)...)
		for _, k := range keys {
			red.Add(r.Config[k], r.Attributes[k])
			if r.Prior != nil {
				red.Add(r.Prior.Config[k], r.Prior.Attributes[k])
			}
		}
	}
}

// checkProvider is called with a provider's schema before it is configured:
// its sensitive config values are told to the Redactor (so a Configure
// error quoting one is masked), and its config is checked against the
// config schema at the spec's lines.
func (s *session) checkProvider(n string, schema *providers.GetSchemaResponse) error {
	if p, ok := s.sp.Providers[n]; ok {
		LearnProviderConfig(s.opts.Redactor, p.Config, schema)
	}
	return s.sp.CheckProviderConfig(n, schema)
}

// learnProviderConfig tells red the values of cfg that schema's config
// description marks sensitive.
func LearnProviderConfig(red *secrets.Redactor, cfg map[string]any, schema *providers.GetSchemaResponse) {
	if schema == nil {
		return
	}
	for _, a := range schema.ProviderConfig {
		if a.Sensitive {
			red.Add(cfg[a.Name])
		}
	}
}

// MarshalJSON masks the values of sensitive attributes in before, after and
// observed: `plan --json` shows "(sensitive)" as the text plan does.
func (p Planned) MarshalJSON() ([]byte, error) {
	type plain Planned // without this method
	out := plain(p)
	out.Before = secrets.MaskKeys(p.Before, p.Sensitive)
	out.After = secrets.MaskKeys(p.After, p.Sensitive)
	out.Observed = secrets.MaskKeys(p.Observed, p.Sensitive)
	if slices.Contains(p.Sensitive, state.SensitiveID) {
		out.FoundID, out.ImportID = maskID(p.FoundID), maskID(p.ImportID)
	}
	return json.Marshal(out)
}

// shownID is r's id as a command shows it: secrets.Mask when it holds a
// secret (state.SensitiveID), whether or not the state was opened.
func ShownID(r *state.Resource) string {
	if slices.Contains(r.Sensitive, state.SensitiveID) {
		return maskID(r.ID)
	}
	return r.ID
}

// maskID is id as shown when it holds a secret: secrets.Mask ("" stays "").
func maskID(id string) string {
	if id == "" {
		return ""
	}
	return secrets.Mask
}

// sealID seals an id a saved plan holds when it holds a secret ("" stays
// ""); openID undoes it.
func sealID(box *secrets.Box, id string) (string, error) {
	if id == "" || secrets.IsSealed(id) {
		return id, nil
	}
	return box.SealValue(id)
}

func openID(box *secrets.Box, id string) (string, error) {
	if !secrets.IsSealed(id) || box == nil {
		return id, nil
	}
	v, err := box.OpenValue(id)
	if err != nil {
		return "", fmt.Errorf("id: %w", err)
	}
	text, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("id: sealed value is not text")
	}
	return text, nil
}
