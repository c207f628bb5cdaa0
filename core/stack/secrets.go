package stack

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/bulwark-iac/bulwark/core/plan"
	"github.com/bulwark-iac/bulwark/core/providers"
	"github.com/bulwark-iac/bulwark/core/secrets"
	"github.com/bulwark-iac/bulwark/core/state"
)

// sealer seals the state's values with the key of the stack's secrets
// provider (opts.Secrets resolves it from what the state records), bound
// to the stack, resolving keys on first use: opening needs a key that
// exists; sealing may create the default key file. It opens a value with
// the key its key id names among those it knows: the provider's, and, while
// a `secrets rotate` is unfinished, the new one's too.
type sealer struct {
	ctx     context.Context
	src     *secrets.Source
	context string

	mu  sync.Mutex
	cfg *secrets.Config // as the state records it (nil: keyfile)
	box *secrets.Box    // seals: cfg's key (next's while rotating)
	// ring are the boxes that open, by key id.
	ring map[string]*secrets.Box
}

// StateSealer is the Sealer of stack's state outside an operation (a state
// migration): it opens and seals with the key of the secrets provider each
// state it opens records (src's key file when none is recorded).
func StateSealer(ctx context.Context, src *secrets.Source, stack string) state.Sealer {
	return &sealer{ctx: ctx, src: src, context: secrets.StackContext(stack)}
}

// UseSecrets is told the provider of each state or metadata the backend
// opens, newest last (state.SecretsUser).
func (l *sealer) UseSecrets(cfg *secrets.Config) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cfg == nil || cfg.KeyID != l.cfg.KeyID || !reflect.DeepEqual(cfg.Next, l.cfg.Next) {
		l.box = nil
	}
	l.cfg = cfg.Clone()
}

// adopt makes cfg and k the sealer's: a new stack's provider, or the one a
// rotation moves to.
func (l *sealer) adopt(cfg *secrets.Config, k *secrets.Key) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.cfg = cfg.Clone()
	l.box = l.add(k)
}

// hold returns what puts the sealer back as it is now: reading a backup,
// which records the provider of its own time, must not change what the
// sealer seals with.
func (l *sealer) hold() (restore func()) {
	l.mu.Lock()
	cfg, box := l.cfg.Clone(), l.box
	l.mu.Unlock()
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.cfg, l.box = cfg, box
	}
}

// config is the provider the sealer seals with (nil: keyfile, unrecorded).
func (l *sealer) config() *secrets.Config {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cfg.Clone()
}

func (l *sealer) add(k *secrets.Key) *secrets.Box {
	if l.ring == nil {
		l.ring = map[string]*secrets.Box{}
	}
	if b, ok := l.ring[k.ID()]; ok {
		return b
	}
	b := k.Box(l.context)
	l.ring[k.ID()] = b
	return b
}

func (l *sealer) bg() context.Context {
	if l.ctx == nil {
		return context.Background()
	}
	return l.ctx
}

// get returns the box that seals, resolving the provider's key (and, while
// a rotation is unfinished, the new one's, which then seals).
func (l *sealer) get(create bool) (*secrets.Box, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.box != nil {
		return l.box, nil
	}
	k, err := l.src.Resolve(l.bg(), l.cfg, create)
	if err != nil {
		return nil, err
	}
	box := l.add(k)
	if l.cfg != nil && l.cfg.Next != nil {
		nk, err := l.src.Resolve(l.bg(), l.cfg.Next, create)
		if err != nil {
			return nil, fmt.Errorf("secrets rotate to %s is unfinished: %w", l.cfg.Next.Name(), err)
		}
		box = l.add(nk)
	}
	l.box = box
	return box, nil
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
	if id := sealedKeyID(sealed); id != "" {
		l.mu.Lock()
		if o, ok := l.ring[id]; ok {
			b = o
		}
		l.mu.Unlock()
	}
	return b.OpenValue(sealed)
}

// sealedKeyID is the key id a sealed value names ("" when none).
func sealedKeyID(sealed string) string {
	rest, ok := strings.CutPrefix(sealed, secrets.Prefix)
	if !ok {
		return ""
	}
	id, _, _ := strings.Cut(rest, ":")
	return id
}

// sealing is how this session's state keeps its sensitive values: sealed
// under the stack's name, each one it sees told to the Redactor.
func (s *session) sealing() state.Sealing {
	sl := state.Sealing{Reveal: func(v any) { s.opts.Redactor.Add(v) }}
	if s.opts.Secrets != nil {
		if s.sl == nil {
			s.sl = &sealer{src: s.opts.Secrets, context: secrets.StackContext(s.sp.Stack)}
		}
		sl.Sealer = s.sl
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

// ProviderMismatchError refuses a --secrets-provider that is not the one the
// stack's state records: a provider is chosen at a stack's first apply and
// changed only by `bulwark secrets rotate`.
type ProviderMismatchError struct {
	Stack, Recorded, Asked string
}

func (e *ProviderMismatchError) Error() string {
	return fmt.Sprintf("stack %s: its secrets provider is %s (recorded in its state); %s %s would change it: run `bulwark secrets rotate %s %s` to re-seal the state under it",
		e.Stack, e.Recorded, secrets.FlagProvider, e.Asked, secrets.FlagProvider, e.Asked)
}

// checkSecrets resolves, before anything is written, the key st is sealed
// with, from the provider st records: a wrong passphrase, a key file with
// another key or a data key KMS will not open is refused here (a
// *secrets.WrongKeyError naming the provider), never at the first save of
// state after a Create, when a rollback could not record its own work
// either. A mutating command on a stack with no state yet chooses its
// provider (--secrets-provider, else keyfile), which its first write
// records. A read-only command checks a recorded provider only (a state
// with nothing sealed needs no key, as before providers).
func (s *session) checkSecrets(ctx context.Context, st *state.State, mutating bool) error {
	src := s.opts.Secrets
	if src == nil {
		return nil
	}
	want := src.Provider
	if want != "" {
		if err := secrets.CheckProvider(want); err != nil {
			return err
		}
	}
	sl := s.sealing().Sealer.(*sealer)
	sl.mu.Lock()
	sl.ctx = ctx
	sl.mu.Unlock()
	if st.Secrets != nil {
		sl.UseSecrets(st.Secrets)
	}
	fresh := st.Secrets == nil && st.Serial == 0 && len(st.Resources) == 0
	switch {
	case fresh && !mutating:
		return nil
	case fresh && s.opts.planSecrets != nil:
		// A saved plan's first apply: the provider the plan chose (and
		// was sealed under) becomes the stack's.
		cfg := s.opts.planSecrets.Clone()
		k, err := src.Resolve(ctx, cfg, false)
		if err != nil {
			return err
		}
		sl.adopt(cfg, k)
		if s.store != nil {
			s.store.SetSecrets(cfg)
		}
		return nil
	case fresh:
		if want == "" {
			// Today's behaviour: the key file, recorded as nothing.
			_, err := sl.get(true)
			return err
		}
		cfg, k, err := src.NewConfig(ctx, want, src.Passphrase)
		if err != nil {
			return err
		}
		sl.adopt(cfg, k)
		if s.store != nil {
			s.store.SetSecrets(cfg)
		}
		return nil
	}
	if recorded := st.Secrets.Name(); want != "" && want != recorded && !s.opts.rotating {
		return &ProviderMismatchError{Stack: s.sp.Stack, Recorded: recorded, Asked: want}
	}
	keyfile := st.Secrets == nil || st.Secrets.Name() == secrets.ProviderKeyFile
	if !mutating && keyfile {
		return nil
	}
	_, err := sl.get(mutating && keyfile)
	return err
}
