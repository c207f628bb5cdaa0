package stack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/bulwark-iac/bulwark/core/plan"
	"github.com/bulwark-iac/bulwark/core/planfile"
	"github.com/bulwark-iac/bulwark/core/pluginhost"
	"github.com/bulwark-iac/bulwark/core/protection"
	"github.com/bulwark-iac/bulwark/core/providerlock"
	"github.com/bulwark-iac/bulwark/core/resolve"
	"github.com/bulwark-iac/bulwark/core/secrets"
	"github.com/bulwark-iac/bulwark/core/spec"
	"github.com/bulwark-iac/bulwark/core/specfmt"
	"github.com/bulwark-iac/bulwark/core/state"
)

// Saved plans (bulwark plan SPEC --out FILE, bulwark apply FILE).
//
// A saved plan records the spec's text, the state's lineage and serial, the
// plugins' sha256, and for each resource what its Read returned and what was
// decided on it. Applying it runs that spec, under the lock, and refuses
// (a *PlanChangedError, exit 1, nothing changed) when the state was written
// since, when the spec file it names now holds another text, or when a Read
// now returns something else; a plugin whose bytes differ is refused as
// bulwark.lock refuses one. Each step's Check decides again as it always
// does, and a step whose decision is not the plan's fails (what ran is then
// rolled back as any failure is). Sensitive values, and the spec's text,
// are sealed in the file with the secrets key, bound to the stack.

// planContext is the context a plan file's values are sealed in: not the
// state's, so nothing sealed in a plan file opens as a state value.
func planContext(stack string) string { return "plan " + stack }

// planBox is the Box that seals and opens stack's plan files: under the key
// of the secrets provider cfg, the one the stack's state records (nil:
// keyfile).
func planBox(ctx context.Context, src *secrets.Source, cfg *secrets.Config, stack string, create bool) (*secrets.Box, error) {
	if src == nil {
		return nil, fmt.Errorf("a saved plan seals its values: %w", secrets.ErrNoKey)
	}
	if cfg != nil && cfg.Next != nil {
		cfg = cfg.Next // an unfinished rotation: the key that will stay
	}
	k, err := src.Resolve(ctx, cfg, create)
	if err != nil {
		return nil, err
	}
	return k.Box(planContext(stack)), nil
}

// firstPlanBox is, for a plan of a stack with no state yet made with
// --secrets-provider, the provider it chooses (a new passphrase salt, a
// new KMS data key) and the Box that seals the plan under its key; nil,
// nil otherwise.
func (s *session) firstPlanBox(st *state.State) (*secrets.Config, *secrets.Box, error) {
	src := s.opts.Secrets
	if src == nil || src.Provider == "" || st.Secrets != nil || st.Serial != 0 || len(st.Resources) > 0 {
		return nil, nil, nil
	}
	cfg, k, err := src.NewConfig(context.Background(), src.Provider, src.Passphrase)
	if err != nil {
		return nil, nil, err
	}
	return cfg, k.Box(planContext(s.sp.Stack)), nil
}

// recordedSecrets is the secrets provider stack's state records, read
// without the lock and without opening anything.
func recordedSecrets(ctx context.Context, opts Options, stack string) (*secrets.Config, error) {
	opts.Defaults()
	be, err := opts.Backend(ctx, stack, state.Sealing{})
	if err != nil {
		return nil, err
	}
	defer be.Close()
	st, err := be.Load(ctx)
	if err != nil {
		return nil, err
	}
	return st.Secrets, nil
}

// SavePlan is Plan, and writes the plan to path (atomically, mode 0600)
// unless it is refused (then nothing is written, and the Preview says why).
// version is the bulwark version, recorded in the file.
func SavePlan(ctx context.Context, sp *spec.Spec, opts Options, path, version string) (*Preview, error) {
	return dryRun(ctx, sp, opts, func(s *session, st *state.State, pv *Preview, obs map[string]*plan.Observation) error {
		f, err := s.planFile(st, pv, obs, version)
		if err != nil {
			return err
		}
		return planfile.Write(path, f)
	})
}

// planFile is what a plan file records of this dry run.
func (s *session) planFile(st *state.State, pv *Preview, obs map[string]*plan.Observation, version string) (*planfile.Plan, error) {
	chosen, box, err := s.firstPlanBox(st)
	if err != nil {
		return nil, err
	}
	if box == nil {
		if box, err = planBox(context.Background(), s.opts.Secrets, st.Secrets, s.sp.Stack, true); err != nil {
			return nil, err
		}
	}
	text, err := box.Seal(s.sp.Recorded())
	if err != nil {
		return nil, err
	}
	op := "apply"
	if len(st.Resources) > 0 || st.Current > 0 {
		op = "update"
	}
	f := &planfile.Plan{
		CreatedAt: s.opts.Now().UTC(), BulwarkVersion: version, Stack: s.sp.Stack, Operation: op,
		Spec:      planfile.Spec{File: s.sp.File, Provider: s.sp.Override, Text: text},
		State:     planfile.State{Lineage: st.Lineage, Serial: st.Serial, Revision: st.Current},
		Providers: []planfile.Provider{}, Resources: []planfile.Resource{},
		Replace: slices.Clone(s.opts.Replace), Targets: slices.Clone(s.opts.Targets),
		Secrets: chosen,
	}
	for _, v := range s.sp.Variables {
		val, ok := s.sp.Values[v.Name]
		if !ok {
			continue
		}
		if v.Sensitive {
			if val, err = box.SealValue(val); err != nil {
				return nil, err
			}
		}
		if f.Variables == nil {
			f.Variables = map[string]planfile.Variable{}
		}
		f.Variables[v.Name] = planfile.Variable{Value: val, Sensitive: v.Sensitive}
	}
	for _, v := range pv.Variables {
		f.VariableChanges = append(f.VariableChanges, planfile.VariableChange{Name: v.Name, Before: v.Before, After: v.After, Sensitive: v.Sensitive})
	}
	names := make([]string, 0, len(s.plugins))
	for n := range s.plugins {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		p := s.plugins[n]
		e := planfile.Provider{Name: n, Source: p.Source()}
		if fp, ok := p.(failProvider); ok {
			p = fp.Provider
		}
		if pp, ok := p.(interface{ Path() string }); ok && pp.Path() != "" {
			if e.SHA256, err = pluginhost.FileSHA256(pp.Path()); err != nil {
				return nil, fmt.Errorf("provider %s: %w", n, err)
			}
		}
		f.Providers = append(f.Providers, e)
	}
	red := s.opts.Redactor
	for _, d := range s.dataReads {
		// What the schema marks, and any value holding a secret this
		// command knows, is sealed.
		sensitive := slices.Clone(d.Sensitive)
		for k, v := range d.Attributes {
			if !slices.Contains(sensitive, k) && holdsSecret(red, v) {
				sensitive = append(sensitive, k)
			}
		}
		sort.Strings(sensitive)
		attrs, err := sealKeys(box, d.Attributes, sensitive)
		if err != nil {
			return nil, err
		}
		f.Data = append(f.Data, planfile.Data{Name: d.Name, Type: d.Type, Provider: d.Provider, Attributes: attrs, Sensitive: sensitive})
	}
	for _, r := range s.stackReads {
		outs, err := sealKeys(box, r.Outputs, r.Sensitive)
		if err != nil {
			return nil, err
		}
		f.Stacks = append(f.Stacks, planfile.StackRead{Stack: r.Stack, Revision: r.Revision, Outputs: outs, Sensitive: r.Sensitive})
	}
	for _, c := range pv.Changes {
		// What the schema or a sensitive variable marks, and any other key
		// whose value holds a secret this command knows, is sealed.
		sensitive := slices.Clone(c.Sensitive)
		o := obs[c.Resource]
		for _, m := range []map[string]any{c.Before, c.After, observedAttrs(o)} {
			for k, v := range m {
				if !slices.Contains(sensitive, k) && holdsSecret(red, v) {
					sensitive = append(sensitive, k)
				}
			}
		}
		if !slices.Contains(sensitive, state.SensitiveID) && (holdsSecret(red, c.FoundID) || holdsSecret(red, c.ImportID) || (o != nil && holdsSecret(red, o.ID))) {
			sensitive = append(sensitive, state.SensitiveID)
		}
		sort.Strings(sensitive)
		seal := func(m map[string]any) (map[string]any, error) { return sealKeys(box, m, sensitive) }
		r := planfile.Resource{
			Address: c.Resource, Type: c.Type, Provider: c.Provider, Protection: c.Protection.String(), Action: string(c.Action),
			Ownership: string(c.Ownership), Sensitive: sensitive, Unknown: c.Unknown, ForceNew: c.ForceNew, Drifted: c.Drifted, Changed: c.Changed, DriftKeys: c.Change.Drift, Remote: c.Remote,
			ImportID: c.ImportID, FoundID: c.FoundID, Owner: red.Redact(c.Owner), Reason: red.Redact(c.Reason), Importable: c.Importable,
			Drift: red.Redact(c.Drift), Vanished: c.Vanished,
		}
		if r.Before, err = seal(c.Before); err != nil {
			return nil, err
		}
		if r.After, err = seal(c.After); err != nil {
			return nil, err
		}
		if o != nil {
			r.Observed = &planfile.Observation{Exists: o.Exists, ID: o.ID, Key: o.Key, ByIdentity: o.ByIdentity}
			if r.Observed.Attributes, err = seal(o.Attributes); err != nil {
				return nil, err
			}
		}
		if slices.Contains(sensitive, state.SensitiveID) {
			// An id computed from a secret is sealed like the values.
			if r.FoundID, err = sealID(box, r.FoundID); err == nil {
				r.ImportID, err = sealID(box, r.ImportID)
			}
			if err == nil && r.Observed != nil {
				r.Observed.ID, err = sealID(box, r.Observed.ID)
			}
			if err != nil {
				return nil, err
			}
		}
		f.Resources = append(f.Resources, r)
	}
	return f, nil
}

func observedAttrs(o *plan.Observation) map[string]any {
	if o == nil {
		return nil
	}
	return o.Attributes
}

// holdsSecret reports whether v holds a value red masks.
func holdsSecret(red *secrets.Redactor, v any) bool {
	b, err := json.Marshal(v)
	return err == nil && red.Redact(string(b)) != string(b)
}

// sealKeys returns m with the values of keys sealed (m itself when none is
// there).
func sealKeys(box *secrets.Box, m map[string]any, keys []string) (map[string]any, error) {
	if m == nil {
		return nil, nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
		if slices.Contains(keys, k) {
			sealed, err := box.SealValue(v)
			if err != nil {
				return nil, err
			}
			out[k] = sealed
		}
	}
	return out, nil
}

// openKeys is sealKeys undone.
func openKeys(box *secrets.Box, m map[string]any, keys []string) (map[string]any, error) {
	if m == nil {
		return nil, nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
		if s, ok := v.(string); ok && slices.Contains(keys, k) && secrets.IsSealed(s) {
			plain, err := box.OpenValue(s)
			if err != nil {
				return nil, fmt.Errorf("attribute %s: %w", k, err)
			}
			out[k] = plain
		}
	}
	return out, nil
}

// ReadPlan reads a plan file for showing: no key is needed (what is sealed
// stays sealed, and is shown masked).
func ReadPlan(path string) (*planfile.Plan, error) {
	return planfile.Read(path)
}

// PreviewOf is the Preview a saved plan was made with, for rendering: the
// values of sensitive keys stay sealed, and are shown as "(sensitive)".
func PreviewOf(f *planfile.Plan) *Preview {
	pv := &Preview{Stack: f.Stack, Changes: []Planned{}, Revision: f.State.Revision, Targets: slices.Clone(f.Targets)}
	for _, d := range f.Data {
		pv.DataReads = append(pv.DataReads, DataRead{Name: d.Name, Type: d.Type, Provider: d.Provider, Attributes: d.Attributes, Sensitive: d.Sensitive, Saved: true})
	}
	for _, r := range f.Stacks {
		pv.StackReads = append(pv.StackReads, StackRead{Stack: r.Stack, Revision: r.Revision, Outputs: r.Outputs, Sensitive: r.Sensitive, Saved: true})
	}
	for _, v := range f.VariableChanges {
		pv.Variables = append(pv.Variables, VariableChange{Name: v.Name, Before: v.Before, After: v.After, Sensitive: v.Sensitive})
	}
	for _, r := range f.Resources {
		prot, ok := protection.Parse(r.Protection)
		if !ok {
			prot = protection.Protected
		}
		c := Planned{Change: plan.Change{
			Resource: r.Address, Type: r.Type, Provider: r.Provider, Action: plan.Action(r.Action), Protection: prot,
			Before: r.Before, After: r.After, ForceNew: r.ForceNew, Ownership: plan.Ownership(r.Ownership), Drifted: r.Drifted, Changed: r.Changed, Drift: r.DriftKeys,
			Remote: r.Remote, ImportID: r.ImportID, FoundID: r.FoundID, Owner: r.Owner, Reason: r.Reason, Importable: r.Importable,
			// The plan carries --replace's consent: show says so, as plan did.
			Requested: slices.Contains(f.Replace, r.Address),
		}, Drift: r.Drift, Vanished: r.Vanished, Sensitive: r.Sensitive, Unknown: r.Unknown}
		if len(r.Unknown) > 0 {
			after := maps.Clone(c.After)
			for _, k := range r.Unknown {
				if _, ok := after[k]; ok {
					after[k] = plan.AfterApply{}
				}
			}
			c.After = after
		}
		if r.Observed != nil && r.Observed.Exists {
			c.Observed = r.Observed.Attributes
			if c.Observed == nil {
				c.Observed = map[string]any{}
			}
		}
		pv.Changes = append(pv.Changes, c)
	}
	return pv
}

// SavedPlan is a plan file opened for applying: its spec is parsed again
// from the text it holds.
type SavedPlan struct {
	Path string
	File *planfile.Plan
	Spec *spec.Spec
	box  *secrets.Box
	// data is what the plan's data entries read, opened: applying the plan
	// uses it and reads nothing again.
	data map[string]DataRead
	// stacks is what the plan read of other stacks' outputs, opened.
	stacks map[string]StackRead
}

// OpenPlan reads the plan file at path and opens what it sealed with the
// key of opts.Secrets (which must be the key it was made with).
func OpenPlan(path string, opts Options) (*SavedPlan, error) {
	f, err := planfile.Read(path)
	if err != nil {
		return nil, err
	}
	cfg := f.Secrets // a first apply's plan: sealed under the provider it chose
	if cfg == nil {
		if cfg, err = recordedSecrets(context.Background(), opts, f.Stack); err != nil {
			return nil, fmt.Errorf("plan %s: %w", path, err)
		}
	}
	box, err := planBox(context.Background(), opts.Secrets, cfg, f.Stack, false)
	if err != nil {
		return nil, fmt.Errorf("plan %s: %w", path, err)
	}
	text, err := box.Open(f.Spec.Text)
	if err != nil {
		return nil, fmt.Errorf("plan %s: its spec: %w", path, err)
	}
	vals := map[string]any{}
	for n, v := range f.Variables {
		val := v.Value
		if s, ok := val.(string); ok && v.Sensitive && secrets.IsSealed(s) {
			if val, err = box.OpenValue(s); err != nil {
				return nil, fmt.Errorf("plan %s: variable %s: %w", path, n, err)
			}
		}
		if v.Sensitive {
			opts.Redactor.Add(val)
		}
		vals[n] = val
	}
	// The plan's spec with the plan's values: no --var, file or
	// environment is read.
	sp, err := resolve.Reload(f.Spec.File, text, f.Spec.Provider, vals)
	if err != nil {
		return nil, fmt.Errorf("plan %s: its spec no longer expands: %w", path, err)
	}
	if sp.Stack != f.Stack {
		return nil, fmt.Errorf("plan %s: %w: its spec is of stack %q, not %q", path, planfile.ErrCorrupt, sp.Stack, f.Stack)
	}
	var data map[string]DataRead
	if len(sp.Data) > 0 {
		data = make(map[string]DataRead, len(f.Data))
		for _, d := range f.Data {
			attrs, err := openKeys(box, d.Attributes, d.Sensitive)
			if err != nil {
				return nil, fmt.Errorf("plan %s: data %s: %w", path, d.Name, err)
			}
			for _, k := range d.Sensitive {
				opts.Redactor.Add(attrs[k])
			}
			data[d.Name] = DataRead{Name: d.Name, Type: d.Type, Provider: d.Provider, Attributes: attrs, Sensitive: d.Sensitive, Saved: true}
		}
	}
	var stacks map[string]StackRead
	if len(f.Stacks) > 0 {
		stacks = make(map[string]StackRead, len(f.Stacks))
		for _, r := range f.Stacks {
			outs, err := openKeys(box, r.Outputs, r.Sensitive)
			if err != nil {
				return nil, fmt.Errorf("plan %s: stack %s's outputs: %w", path, r.Stack, err)
			}
			for _, k := range r.Sensitive {
				opts.Redactor.Add(outs[k])
			}
			stacks[r.Stack] = StackRead{Stack: r.Stack, Revision: r.Revision, Outputs: outs, Sensitive: r.Sensitive, Saved: true}
		}
	}
	return &SavedPlan{Path: path, File: f, Spec: sp, box: box, data: data, stacks: stacks}, nil
}

// PlanChangedError refuses to apply a saved plan because what it was made
// from changed since: nothing was changed.
type PlanChangedError struct {
	Path    string
	Changes []string // what changed, one line each
}

func (e *PlanChangedError) Error() string {
	return fmt.Sprintf("plan %s is stale: since it was made, %s; nothing was changed (make a new plan with `bulwark plan SPEC --out %s`, review it, and apply that)",
		e.Path, strings.Join(e.Changes, "; "), e.Path)
}

// providerPins is the bulwark.lock a saved plan implies: the bytes of every
// plugin of bulwark's own it read reality through (real, the bulwark.lock
// beside the spec, when the plan recorded none), and, apart, the sha256 of
// each Terraform provider's executable it ran. A Terraform provider's pin
// in a bulwark.lock is its package's hashes (h1:, zh:), which the plan does
// not record: real's are kept, and the executable found must also have the
// plan's bytes.
func (p *SavedPlan) providerPins(real *providerlock.File) (*providerlock.File, map[string]string) {
	lf := &providerlock.File{Providers: map[string]providerlock.Entry{}}
	if real != nil {
		lf.Terraform = real.Terraform
	}
	tf := map[string]string{}
	for _, pr := range p.File.Providers {
		switch {
		case pr.SHA256 == "":
		case terraformSource(pr.Source):
			tf[pr.Source] = pr.SHA256
		default:
			lf.Providers[pr.Source] = providerlock.Entry{SHA256: pr.SHA256}
		}
	}
	if len(lf.Providers) == 0 {
		return real, tf
	}
	return lf, tf
}

// ApplyPlan applies a saved plan: exactly its spec, refused when anything
// it was made from changed since (see PlanChangedError).
func ApplyPlan(ctx context.Context, p *SavedPlan, opts Options) (*Result, error) {
	lf, tf := p.providerPins(opts.ProviderLock)
	if lf != opts.ProviderLock {
		opts.ProviderLock, opts.LockPath = lf, p.Path
	}
	opts.savedTerraform = tf
	// The consent to replace (--replace) is the plan's, as reviewed.
	opts.Replace = slices.Clone(p.File.Replace)
	// So is its --target: it covers exactly what was planned.
	opts.Targets = slices.Clone(p.File.Targets)
	// And so is the secrets provider a first apply's plan chose.
	opts.planSecrets = p.File.Secrets.Clone()
	s, err := open(ctx, p.Spec, opts, false)
	if err != nil {
		return nil, err
	}
	defer s.close()
	var changed []string
	st := s.store.Snapshot()
	switch {
	case p.File.State.Lineage != "" && st.Lineage != p.File.State.Lineage:
		// (A plan of a stack never written has no lineage: the session
		// mints one, and serial 0 says nothing was written since.)
		changed = append(changed, fmt.Sprintf("the state's lineage is %s, not %s (the state was replaced)", orNone(st.Lineage), orNone(p.File.State.Lineage)))
	case st.Serial != p.File.State.Serial:
		changed = append(changed, fmt.Sprintf("the state was written (serial %d, the plan was made at serial %d)", st.Serial, p.File.State.Serial))
	}
	// What the spec means decides, not its bytes: a comment or a layout
	// edit since the plan leaves it applicable (the plan applies its own
	// recorded text either way); a changed value makes it stale.
	if cur, err := os.ReadFile(p.Spec.File); err == nil && !specfmt.SameMeaning(p.Spec.File, p.Spec.Text, cur) {
		changed = append(changed, fmt.Sprintf("the spec %s changed", p.Spec.File))
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("plan %s: its spec: %w", p.Path, err)
	}
	if len(changed) > 0 {
		return nil, &PlanChangedError{Path: p.Path, Changes: changed}
	}
	s.saved = p
	return s.converge(ctx, p.File.Operation, 0)
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// checkSaved compares what converge just read and decided with what the
// saved plan recorded.
func (s *session) checkSaved(pl *plan.Plan, obs map[string]*plan.Observation) error {
	p := s.saved
	var changed []string
	saved := map[string]planfile.Resource{}
	for _, r := range p.File.Resources {
		saved[r.Address] = r
	}
	seen := map[string]bool{}
	for _, c := range pl.Changes {
		seen[c.Resource] = true
		r, ok := saved[c.Resource]
		if !ok {
			changed = append(changed, fmt.Sprintf("%s is planned now but was not then", c.Resource))
			continue
		}
		if what, err := s.observedDiff(r, obs[c.Resource]); err != nil {
			return fmt.Errorf("plan %s: %s: %w", p.Path, c.Resource, err)
		} else if what != "" {
			changed = append(changed, c.Resource+": "+what)
			continue
		}
		if string(c.Action) != r.Action {
			changed = append(changed, fmt.Sprintf("%s would now be %s, not %s", c.Resource, c.Action, r.Action))
		}
	}
	for _, r := range p.File.Resources {
		if !seen[r.Address] {
			changed = append(changed, fmt.Sprintf("%s was planned then but is not now", r.Address))
		}
	}
	if len(changed) > 0 {
		return &PlanChangedError{Path: p.Path, Changes: changed}
	}
	return nil
}

// observedDiff says how what a Read returns now differs from what the plan
// saw ("" when it does not). Sensitive attributes are named, never shown.
func (s *session) observedDiff(r planfile.Resource, now *plan.Observation) (string, error) {
	then := r.Observed
	if then != nil && secrets.IsSealed(then.ID) {
		c := *then
		var err error
		if c.ID, err = openID(s.saved.box, then.ID); err != nil {
			return "", err
		}
		then = &c
	}
	switch {
	case then == nil && now == nil:
		return "", nil
	case then == nil || now == nil:
		return "it was read differently", nil
	case then.Exists && !now.Exists:
		return fmt.Sprintf("it no longer exists (it was %s)", orNone(then.ID)), nil
	case !then.Exists && now.Exists:
		return fmt.Sprintf("it exists now (%s); it did not then", orNone(now.ID)), nil
	case !then.Exists:
		return "", nil
	case then.ID != now.ID:
		return fmt.Sprintf("its id is %s now, not %s", orNone(now.ID), orNone(then.ID)), nil
	case then.Key != now.Key:
		return "the idempotency key it carries changed", nil
	}
	attrs, err := openKeys(s.saved.box, then.Attributes, r.Sensitive)
	if err != nil {
		return "", err
	}
	var diff []string
	keys := map[string]bool{}
	for k := range attrs {
		keys[k] = true
	}
	for k := range now.Attributes {
		keys[k] = true
	}
	for k := range keys {
		if !plan.Equal(attrs[k], now.Attributes[k]) {
			diff = append(diff, k)
		}
	}
	if len(diff) == 0 {
		return "", nil
	}
	sort.Strings(diff)
	return fmt.Sprintf("what it reads changed (attribute %s)", strings.Join(diff, ", ")), nil
}

// savedAction is the action the saved plan decided for resource name, and
// whether it decided one.
func (s *session) savedAction(name string) (plan.Action, bool) {
	if s.saved == nil {
		return "", false
	}
	for _, r := range s.saved.File.Resources {
		if r.Address == name {
			return plan.Action(r.Action), true
		}
	}
	return "", true
}
