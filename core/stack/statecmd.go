package stack

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/bulwark-iac/bulwark/core/engine"
	"github.com/bulwark-iac/bulwark/core/journal"
	"github.com/bulwark-iac/bulwark/core/secrets"
	"github.com/bulwark-iac/bulwark/core/spec"
	"github.com/bulwark-iac/bulwark/core/state"
	"github.com/bulwark-iac/bulwark/sdk"
)

// Operation types of the state commands.
const (
	OpImport = "import"
	OpForget = "forget"
	OpMove   = "move"
)

// isStateOp reports whether an operation type is one of the state
// commands': one atomic state write, nothing to resolve on resume.
func isStateOp(typ string) bool {
	return typ == OpImport || typ == OpForget || typ == OpMove
}

// ErrNotRecorded is returned (wrapped) for an address the state does not
// record.
var ErrNotRecorded = errors.New("not recorded in the state")

// ErrAlreadyRecorded is returned (wrapped) by state mv for a new name the
// state records already.
var ErrAlreadyRecorded = errors.New("already recorded in the state")

// StateList returns what the stack's state records, sorted by name. It
// takes no lock and starts no provider.
func StateList(sp *spec.Spec, opts Options) ([]*state.Resource, error) {
	st, err := loadState(sp, opts)
	if err != nil {
		return nil, err
	}
	out := make([]*state.Resource, 0, len(st.Resources))
	for _, n := range st.Names() {
		out = append(out, masked(st.Resources[n]))
	}
	return out, nil
}

// masked is a record with its sensitive values (sealed in the state)
// shown as secrets.Mask, for printing.
func masked(r *state.Resource) *state.Resource {
	c := *r
	mask := func(m map[string]any) map[string]any {
		if m == nil {
			return nil
		}
		out := make(map[string]any, len(m))
		for k, v := range m {
			if slices.Contains(r.Sensitive, k) {
				v = secrets.Mask
			}
			out[k] = v
		}
		return out
	}
	c.Config, c.Attributes, c.Prior = mask(r.Config), mask(r.Attributes), nil
	return &c
}

// StateShow returns the record of one resource.
func StateShow(sp *spec.Spec, opts Options, address string) (*state.Resource, error) {
	st, err := loadState(sp, opts)
	if err != nil {
		return nil, err
	}
	r := st.Resources[address]
	if r == nil {
		return nil, fmt.Errorf("%s: %w of stack %s%s", address, ErrNotRecorded, sp.Stack, instancesHint(st, address))
	}
	return masked(r), nil
}

// instancesHint names, for an address the state does not record, the
// for_each instances it records under that name: " (it records web[a],
// web[b]: name one)"; else "".
func instancesHint(st *state.State, address string) string {
	var keyed []string
	for n := range st.Resources {
		if a, err := spec.ParseAddress(n); err == nil && a.Keyed && a.Name == address {
			keyed = append(keyed, n)
		}
	}
	if len(keyed) == 0 {
		return ""
	}
	slices.Sort(keyed)
	return fmt.Sprintf(" (it records the instances %s: name one, quoted for the shell: '%s')", nameList(keyed), keyed[0])
}

// nameList lists names for a message, at most 10.
func nameList(names []string) string {
	if len(names) > 10 {
		return strings.Join(names[:10], ", ") + fmt.Sprintf(" and %d more", len(names)-10)
	}
	return strings.Join(names, ", ")
}

// StateForget stops managing a resource without deleting it, whatever its
// protection: it calls no provider at all, only drops the record, as a
// journaled operation under the lock.
func StateForget(ctx context.Context, sp *spec.Spec, opts Options, address string) (*Result, error) {
	opts.forgetting = address
	s, err := open(ctx, sp, opts, false)
	if err != nil {
		return nil, err
	}
	defer s.close()
	snap := s.store.Snapshot()
	cur := snap.Resources[address]
	if cur == nil {
		return nil, fmt.Errorf("state forget %s: %w of stack %s%s", address, ErrNotRecorded, sp.Stack, instancesHint(snap, address))
	}
	return s.stateOp(ctx, OpForget, "forget", cur.Name, cur.Type, func(context.Context) error {
		return s.store.Mutate(func(st *state.State) error {
			r := st.Resources[address]
			if r == nil {
				return fmt.Errorf("%s: %w", address, ErrNotRecorded)
			}
			// Its key no longer makes it this stack's: the next apply
			// that names it sees a conflict, not a crash to recover.
			if r.IdempotencyKey != "" && !slices.Contains(st.Forgotten, r.IdempotencyKey) {
				st.Forgotten = append(st.Forgotten, r.IdempotencyKey)
			}
			delete(st.Resources, address)
			return nil
		})
	}), nil
}

// StateMove renames a recorded resource, so that renaming it in the spec is
// a rename, not a delete and a create. What records depend on it follow.
// to is an address: a resource name or an instance, web[a] (so a resource
// that gains for_each keeps its object as one of its instances).
func StateMove(ctx context.Context, sp *spec.Spec, opts Options, from, to string) (*Result, error) {
	if _, err := spec.ParseAddress(to); err != nil {
		return nil, fmt.Errorf("state mv: %w", err)
	}
	s, err := open(ctx, sp, opts, false)
	if err != nil {
		return nil, err
	}
	defer s.close()
	st := s.store.Snapshot()
	cur := st.Resources[from]
	switch {
	case cur == nil:
		return nil, fmt.Errorf("state mv %s %s: %s: %w of stack %s", from, to, from, ErrNotRecorded, sp.Stack)
	case st.Resources[to] != nil:
		return nil, fmt.Errorf("state mv %s %s: %s (id %s) is %w", from, to, to, st.Resources[to].ID, ErrAlreadyRecorded)
	}
	return s.stateOp(ctx, OpMove, "update", from, cur.Type, func(context.Context) error {
		return s.store.Mutate(func(st *state.State) error {
			r := st.Resources[from]
			if r == nil || st.Resources[to] != nil {
				return fmt.Errorf("state mv %s %s: the state changed", from, to)
			}
			delete(st.Resources, from)
			r.Name = to
			st.Resources[to] = r
			for _, o := range st.Resources {
				o.DependsOn = renamed(o.DependsOn, from, to)
				if o.Prior != nil {
					o.Prior.DependsOn = renamed(o.Prior.DependsOn, from, to)
				}
			}
			for i := range st.Interventions {
				if st.Interventions[i].Resource == from {
					st.Interventions[i].Resource = to
				}
			}
			return nil
		})
	}), nil
}

func renamed(names []string, from, to string) []string {
	if i := slices.Index(names, from); i >= 0 {
		names = slices.Clone(names)
		names[i] = to
	}
	return names
}

// ImportError refuses an import: nothing was recorded.
type ImportError struct {
	Address, ID string
	Reason      string
}

func (e *ImportError) Error() string {
	return fmt.Sprintf("import %s %s: %s; nothing was recorded", e.Address, e.ID, e.Reason)
}

// Import takes over an existing resource: it reads it by id (the
// provider's Import, or Read by id for a provider without it) and records it
// under address, a resource of the spec, as imported — this stack's from now
// on, never deleted by a rollback. It refuses an address the state records
// already, and a resource that is not found. A journaled operation under
// the lock.
func Import(ctx context.Context, sp *spec.Spec, opts Options, address, id string) (*Result, error) {
	r, ok := sp.Resource(address)
	if !ok {
		var keyed []string
		for _, r := range sp.Resources {
			if a := r.Address(); a.Keyed && a.Name == address {
				keyed = append(keyed, r.Name)
			}
		}
		if len(keyed) > 0 {
			return nil, &ImportError{Address: address, ID: id, Reason: fmt.Sprintf("%s has for_each: import into one of its instances (%s), quoted for the shell: '%s'", address, nameList(keyed), keyed[0])}
		}
		return nil, &ImportError{Address: address, ID: id, Reason: fmt.Sprintf("%s declares no resource %q (add it to the spec first: its type and provider say what to read)", sp.File, address)}
	}
	s, err := open(ctx, sp, opts, false)
	if err != nil {
		return nil, err
	}
	defer s.close()
	st := s.store.Snapshot()
	if cur := st.Resources[address]; cur != nil {
		return nil, &ImportError{Address: address, ID: id, Reason: fmt.Sprintf("the state already records %s (id %s)", address, cur.ID)}
	}
	for _, n := range st.Names() {
		if o := st.Resources[n]; o.ID == id && o.Type == r.Type && o.Provider == r.Provider {
			return nil, &ImportError{Address: address, ID: id, Reason: fmt.Sprintf("the state records it already, as %s", n)}
		}
	}
	if err := s.startProviders(ctx, []string{r.Provider}, st); err != nil {
		return nil, err
	}
	p := s.plugins[r.Provider]
	r = readable(r, st)
	resp, err := p.Import(ctx, &sdk.ImportRequest{Type: r.Type, Name: r.Name, ID: id, Config: r.Config})
	if err != nil {
		return nil, fmt.Errorf("import %s %s: %w", address, id, err)
	}
	if !resp.Exists {
		return nil, &ImportError{Address: address, ID: id, Reason: fmt.Sprintf("provider %s finds no %s with id %s", r.Provider, r.Type, id)}
	}
	obs := observation(true, resp.ID, resp.Attributes, resp.IdempotencyKey, false, resp.Private)
	if o, ok := s.identity().OtherStacks(obs.Key); ok {
		// Another stack made it and may still record (and protect) it:
		// like CloudFormation, an import does not take it from that stack
		// unless the person names the stack it comes from.
		if s.opts.ImportFrom != o.Stack {
			return nil, &ImportError{Address: address, ID: id, Reason: fmt.Sprintf("it belongs to stack %s (lineage %s), which may still record and protect it: run `bulwark state forget` in stack %s first, then import it with --from %s", o.Stack, o.Lineage, o.Stack, o.Stack)}
		}
		s.prog.printf("note: taking %s over from stack %s (--from): make sure that stack has forgotten it (`bulwark state forget`)\n", id, o.Stack)
	}
	return s.stateOp(ctx, OpImport, "import", address, r.Type, func(context.Context) error {
		rec := importRecord(r, p.Source(), obs, s.opID)
		return s.store.Mutate(func(st *state.State) error {
			if st.Resources[address] != nil {
				return fmt.Errorf("the state records %s already", address)
			}
			st.Resources[address] = rec
			st.Forgotten = slices.DeleteFunc(st.Forgotten, func(k string) bool { return k == rec.IdempotencyKey })
			return nil
		})
	}), nil
}

// stateOp runs one state command as a journaled operation of one step.
func (s *session) stateOp(ctx context.Context, typ, action, resource, rtype string, fn func(context.Context) error) *Result {
	op := &engine.Operation{ID: s.opID, Type: typ, Spec: s.sp.File, Parallelism: 1}
	op.Steps = []*engine.Step{{
		ID: resource, Resource: resource, Type: rtype, Action: action, Policy: engine.Abort,
		Execute: func(ctx context.Context, _ string) error { return fn(ctx) },
	}}
	s.prog.opStart(s.opID, typ)
	res := s.eng.Run(ctx, op)
	out := s.finish(op, res)
	s.prog.opEnd(out)
	return out
}

// closeStateOp ends a state command a crash interrupted: its one state
// write is atomic, so it happened or it did not; it is journaled as failed
// and the person is told to look and run it again.
func (s *session) closeStateOp(target UnfinishedError) (*Result, error) {
	err := fmt.Errorf("the interrupted %s %s is closed; its state write is atomic: see `bulwark state list` and run it again if it did not take effect", target.Type, target.Op)
	if _, jerr := s.jr.Append(journal.Record{Op: target.Op, Kind: journal.KindOp, Type: target.Type, Status: journal.OpFailed, Error: err.Error()}); jerr != nil {
		return nil, jerr
	}
	return &Result{Op: target.Op, Type: target.Type, Outcome: engine.Failed, Err: err}, nil
}
