package stack

import (
	"context"
	"fmt"

	"github.com/bulwark-iac/bulwark/core/observe"
	"github.com/bulwark-iac/bulwark/core/providers"
	"github.com/bulwark-iac/bulwark/core/resolve"
	"github.com/bulwark-iac/bulwark/core/spec"
)

// validate checks the spec against the providers' schemas and asks each
// provider to validate its resources; every problem is positioned in the spec.
func (s *session) validate(ctx context.Context) error {
	if err := s.sp.CheckSchemas(s.schemas()); err != nil {
		return err
	}
	// Up to Parallelism calls at once (a provider's every call may take a
	// round trip): the resources of a provider that offers ValidateMany in
	// batches, the others one call each (observe.InBatches). The problems keep the
	// spec's order.
	n := len(s.sp.Resources)
	found := make([]spec.Problems, n)
	reqs := make([]*providers.ValidateResourceRequest, n)
	unknowns := make([]map[string]bool, n)
	for i, r := range s.sp.Resources {
		// A value that references another resource is not known before
		// apply: the provider sees the config without it (CheckSchemas
		// type-checked it), and a "missing" complaint about it is moot.
		cfg, unknown := knownConfig(r.Config)
		reqs[i], unknowns[i] = &providers.ValidateResourceRequest{Type: r.Type, Name: r.Name, Config: cfg}, unknown
	}
	report := func(i int, ds providers.Diagnostics) {
		r := s.sp.Resources[i]
		for _, d := range ds {
			if d.Severity == providers.SeverityWarning || (len(d.AttributePath) > 0 && unknowns[i][d.AttributePath[0]]) {
				continue
			}
			found[i] = append(found[i], s.problem(r, d))
		}
	}
	if err := observe.InBatches(ctx, n, s.opts.Parallelism, observe.Batches[Provider]{
		Lookup:     s.provider,
		ProviderOf: func(i int) string { return s.sp.Resources[i].Provider },
		Many:       Provider.ValidatesMany,
		Single: func(ctx context.Context, i int) error {
			ds, err := s.plugins[s.sp.Resources[i].Provider].ValidateResource(ctx, reqs[i])
			if err != nil {
				return err
			}
			report(i, ds)
			return nil
		},
		Batch: func(ctx context.Context, p Provider, chunk []int) error {
			batch := make([]*providers.ValidateResourceRequest, len(chunk))
			for k, i := range chunk {
				batch[k] = reqs[i]
			}
			res, err := p.ValidateMany(ctx, batch)
			if err != nil {
				return err
			}
			for k, i := range chunk {
				if res[k].Err != nil {
					return res[k].Err
				}
				report(i, res[k].Diagnostics)
			}
			return nil
		},
	}); err != nil {
		return err
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
	return spec.Problem{File: s.sp.File, Pos: pos, Msg: fmt.Sprintf("resource %q: %s", r.Name, d.Error())}
}
