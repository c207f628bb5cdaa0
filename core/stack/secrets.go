package stack

import (
	"context"
	"encoding/json"
	"slices"
	"sync"

	"github.com/bulwark-iac/bulwark/core/secrets"
	"github.com/bulwark-iac/bulwark/core/state"
	"github.com/bulwark-iac/bulwark/sdk"
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

// loadOpened reads the stack's state without the lock, its sealed values
// opened (a missing state is empty). It never creates a key.
func (s *session) loadOpened() (*state.State, error) {
	be, err := s.opts.backend(context.Background(), s.sp.Stack, s.sealing())
	if err != nil {
		return nil, err
	}
	defer be.Close()
	return be.Load(context.Background())
}

// sensitiveAttrs lists the attributes of a resource type that its schema
// marks sensitive.
func sensitiveAttrs(schema *sdk.GetSchemaResponse, typ string) []string {
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
// resource's attributes to seal: those its provider's schema marks.
func (s *session) sensitiveOf(r *state.Resource) []string {
	p := s.plugins[r.Provider]
	if p == nil {
		return nil
	}
	return sensitiveAttrs(p.Schema(), r.Type)
}

// learnSecrets tells the Redactor the sensitive values that provider n's
// schema reveals: its sensitive config, and the sensitive attributes of the
// spec's and the state's resources it manages.
func (s *session) learnSecrets(n string, schema *sdk.GetSchemaResponse, st *state.State) {
	red := s.opts.Redactor
	if schema == nil {
		return
	}
	if p, ok := s.sp.Providers[n]; ok {
		learnProviderConfig(red, p.Config, schema)
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
func (s *session) checkProvider(n string, schema *sdk.GetSchemaResponse) error {
	if p, ok := s.sp.Providers[n]; ok {
		learnProviderConfig(s.opts.Redactor, p.Config, schema)
	}
	return s.sp.CheckProviderConfig(n, schema)
}

// learnProviderConfig tells red the values of cfg that schema's config
// description marks sensitive.
func learnProviderConfig(red *secrets.Redactor, cfg map[string]any, schema *sdk.GetSchemaResponse) {
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
	return json.Marshal(out)
}
