package stack

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/bulwark-iac/bulwark/core/observe"
	"github.com/bulwark-iac/bulwark/core/parallel"
	"github.com/bulwark-iac/bulwark/core/providers"
	"github.com/bulwark-iac/bulwark/core/resolve"
	"github.com/bulwark-iac/bulwark/core/spec"
	"github.com/bulwark-iac/bulwark/core/state"
)

// validate checks the spec against the providers' schemas and asks each
// provider to validate its resources; every problem is positioned in the spec.
func (s *session) validate(ctx context.Context) error {
	if err := s.sp.CheckSchemas(s.schemas()); err != nil {
		return err
	}
	return s.validateConfigs(ctx, nil)
}

// validateConfigs asks each provider to validate the configs of its
// resources, once per distinct config (s.validated), except a resource st
// records as validated clean with the same key (validationKey: the same
// provider version, type and config; nil st: every one), and a provider
// whose validation is its schema (Capabilities.SchemaValidation) is asked
// nothing: the schema's checks were the host's (CheckSchemas), with no
// call. Up to ReadParallelism calls at once (a provider's every call may
// take a round trip): the configs of a
// provider that offers ValidateMany in batches, the others one call each
// (observe.InBatches). The problems keep the spec's order.
func (s *session) validateConfigs(ctx context.Context, st *state.State) error {
	n := len(s.sp.Resources)
	found := make([]spec.Problems, n)
	answers := make([]*validated, n)
	unknowns := make([]map[string]bool, n)
	// asks are the configs this call asks about (the first resource of
	// each, by index); the others wait for the answer of the call that
	// asks (answers[i] is shared).
	var asks []int
	reqs := make([]*providers.ValidateResourceRequest, n)
	keys := make([]string, n)
	for i, r := range s.sp.Resources {
		// A value that references another resource is not known before
		// apply: the provider sees the config without it (CheckSchemas
		// type-checked it), and a "missing" complaint about it is moot.
		cfg, unknown := knownConfig(r.Config)
		reqs[i], unknowns[i] = &providers.ValidateResourceRequest{Type: r.Type, Name: r.Name, Config: cfg}, unknown
		keys[i] = s.validationKey(r, cfg)
		var mine bool
		answers[i], mine = s.validated.claim(r.Provider, reqs[i])
		switch {
		case !mine:
		case s.schemaValidated(r.Provider):
			// The provider's validation is its schema, which CheckSchemas
			// applied: nothing to ask.
			answers[i].set(nil, nil)
		case st != nil && keys[i] != "" && st.Resources[r.Name] != nil && st.Resources[r.Name].Validated == keys[i]:
			// Validated clean when it was last changed, and nothing it
			// depends on moved: the answer is known, for the session too.
			answers[i].set(nil, nil)
		default:
			asks = append(asks, i)
		}
	}
	err := observe.InBatches(ctx, len(asks), s.opts.ReadParallelism, observe.Batches[Provider]{
		Spread:     s.opts.Parallelism,
		Lookup:     s.provider,
		ProviderOf: func(k int) string { return s.sp.Resources[asks[k]].Provider },
		Many:       Provider.ValidatesMany,
		Single: func(ctx context.Context, k int) error {
			i := asks[k]
			ds, err := s.plugins[s.sp.Resources[i].Provider].ValidateResource(ctx, reqs[i])
			answers[i].set(ds, err)
			return err
		},
		Batch: func(ctx context.Context, p Provider, chunk []int) error {
			batch := make([]*providers.ValidateResourceRequest, len(chunk))
			for j, k := range chunk {
				batch[j] = reqs[asks[k]]
			}
			res, err := p.ValidateMany(ctx, batch)
			for j, k := range chunk {
				if err != nil {
					answers[asks[k]].set(nil, err)
					continue
				}
				answers[asks[k]].set(res[j].Diagnostics, res[j].Err)
			}
			if err != nil {
				return err
			}
			for j := range chunk {
				if res[j].Err != nil {
					return res[j].Err
				}
			}
			return nil
		},
	})
	for _, k := range asks {
		// A call stopped before it began (an earlier one failed) answers
		// what stopped it, so no one waits for it.
		answers[k].set(nil, cmp.Or(err, context.Canceled))
	}
	if err != nil {
		return err
	}
	for i, r := range s.sp.Resources {
		ds, err := answers[i].wait(ctx)
		if err != nil {
			return err
		}
		if len(ds) == 0 && keys[i] != "" {
			s.cleanValidations.Store(r.Name, keys[i])
		}
		for _, d := range ds {
			if d.Severity == providers.SeverityWarning {
				// A deprecated attribute, a setting the provider advises
				// against: said once, at its line, and nothing stops.
				s.warn("warning: " + s.problem(r, d).Error())
				continue
			}
			if len(d.AttributePath) > 0 && unknowns[i][d.AttributePath[0]] {
				continue
			}
			found[i] = append(found[i], s.problem(r, d))
		}
	}
	var problems spec.Problems
	for _, ps := range found {
		problems = append(problems, ps...)
	}
	if len(problems) > 0 {
		return problems
	}
	return nil
}

// schemaValidated reports whether the provider named name validates by its
// schema alone (providers.Capabilities.SchemaValidation).
func (s *session) schemaValidated(name string) bool {
	p := s.plugins[name]
	return p != nil && capsOf(p).SchemaValidation
}

// answering asks each provider the spec uses to validate the config of its
// first resource again, past the session's validations: that it answers
// now, not only when the plan asked (an update's verify step, before
// anything is changed). One call per provider, side by side.
func (s *session) answering(ctx context.Context) error {
	first := map[string]int{}
	var order []string
	for i, r := range s.sp.Resources {
		if _, ok := first[r.Provider]; !ok {
			first[r.Provider] = i
			order = append(order, r.Provider)
		}
	}
	return parallel.ForEach(ctx, len(order), max(1, len(order)), func(ctx context.Context, k int) error {
		r := s.sp.Resources[first[order[k]]]
		cfg, _ := knownConfig(r.Config)
		_, err := s.plugins[r.Provider].ValidateResource(ctx, &providers.ValidateResourceRequest{Type: r.Type, Name: r.Name, Config: cfg})
		return err
	})
}

// validations remembers, for one session, each provider's answer to each
// config it was asked to validate. A provider's own validation is a
// function of the resource's type and config (the provider contract:
// ValidateResource looks at nothing else), so it is asked once per distinct
// config, however many resources share it and however often the operation
// validates (the plan, an update's verify step, a Check that resolved
// references): a spec of 200 alike resources costs one call, not 200. The
// request names the first resource that had the config; the problems are
// reported for each resource that has it, under its own name.
type validations struct {
	mu   sync.Mutex
	seen map[string]*validated
}

// validated is the answer to one config, once set.
type validated struct {
	once sync.Once
	done chan struct{}
	ds   providers.Diagnostics
	err  error
}

func (v *validated) set(ds providers.Diagnostics, err error) {
	v.once.Do(func() {
		v.ds, v.err = ds, err
		close(v.done)
	})
}

func (v *validated) wait(ctx context.Context) (providers.Diagnostics, error) {
	select {
	case <-v.done:
		return v.ds, v.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// claim returns the answer to req's config from provider, and whether the
// caller is the one to ask for it (and must set it). A config that cannot
// be keyed is never shared: its caller always asks.
func (vs *validations) claim(provider string, req *providers.ValidateResourceRequest) (*validated, bool) {
	fresh := &validated{done: make(chan struct{})}
	cfg, err := json.Marshal(req.Config)
	if err != nil {
		return fresh, true
	}
	key := provider + "\x00" + req.Type + "\x00" + string(cfg)
	vs.mu.Lock()
	defer vs.mu.Unlock()
	if v, ok := vs.seen[key]; ok {
		if !isDone(v.done) || v.err == nil {
			return v, false
		}
		// A call that failed (a transport error, a cancelled context) is
		// not an answer about the config: asked again.
	}
	if vs.seen == nil {
		vs.seen = map[string]*validated{}
	}
	vs.seen[key] = fresh
	return fresh, true
}

func isDone(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// knownConfig returns cfg without the keys whose values reference
// resources (still *spec.Template), and those keys; cfg itself when it has
// none.
func knownConfig(cfg map[string]any) (map[string]any, map[string]bool) {
	var unknown map[string]bool
	for k, v := range cfg {
		if !resolve.Known(v) {
			if unknown == nil {
				unknown = map[string]bool{}
			}
			unknown[k] = true
		}
	}
	if unknown == nil {
		return cfg, nil
	}
	out := make(map[string]any, len(cfg))
	for k, v := range cfg {
		if !unknown[k] {
			out[k] = v
		}
	}
	return out, unknown
}

// Validate checks a spec against its providers' schemas without mutating
// anything and without taking the lock.
func Validate(ctx context.Context, sp *spec.Spec, opts Options) error {
	s, _, done, err := inspect(ctx, sp, opts, true)
	if err != nil {
		return err
	}
	defer done()
	return s.validate(ctx)
}

// problem is a provider's diagnostic about r as a problem of the spec, at
// the line of the config key it names (else r's config, else r).
func (s *session) problem(r *spec.Resource, d providers.Diagnostic) spec.Problem {
	pos := r.Pos
	if len(d.AttributePath) > 0 {
		if fp, ok := r.FieldPos["config."+d.AttributePath[0]]; ok {
			pos = fp
		} else if fp, ok := r.FieldPos["config"]; ok {
			pos = fp
		}
	}
	return r.ProblemIn(s.sp.File, pos, fmt.Sprintf("resource %q: %s", r.Name, d.Error()))
}

// validationKey is the key under which a resource's config validated with
// no diagnostic is remembered in its record (state.Resource.Validated), so
// that a later operation asks the provider again only when the provider's
// version, the type or the config changed: a provider's own validation is
// a function of the type and config (ValidateResource looks at nothing
// else), as a Terraform provider's ValidateResourceConfig is. "" (never
// remembered) for a type with a sensitive attribute or a config holding
// a secret's value (a hash of a short secret in the state could be guessed
// back), and for a provider that does not say its version.
func (s *session) validationKey(r *spec.Resource, cfg map[string]any) string {
	p := s.plugins[r.Provider]
	if p == nil {
		return ""
	}
	sc := p.Schema()
	if sc == nil || sc.ProviderVersion == "" {
		return ""
	}
	rt, ok := sc.ResourceType(r.Type)
	if !ok {
		return ""
	}
	for _, a := range rt.Attributes {
		if a.Sensitive {
			return ""
		}
	}
	if len(s.derivedSensitive(cfg)) > 0 {
		return "" // a value of a secret, or derived from one
	}
	b, err := json.Marshal(struct {
		Source, Version, Type string
		Config                map[string]any
	}{p.Source(), sc.ProviderVersion, r.Type, cfg})
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(b)
	return "v1:" + hex.EncodeToString(sum[:])
}

// validatedKey is the validationKey of r's config if this session's
// validation found nothing to say of it ("": not so), for its record.
func (s *session) validatedKey(name string) string {
	k, _ := s.cleanValidations.Load(name)
	key, _ := k.(string)
	return key
}
