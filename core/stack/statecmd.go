package stack

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/bulwark-iac/bulwark/core/engine"
	"github.com/bulwark-iac/bulwark/core/journal"
	"github.com/bulwark-iac/bulwark/core/observe"
	"github.com/bulwark-iac/bulwark/core/plan"
	"github.com/bulwark-iac/bulwark/core/providers"
	"github.com/bulwark-iac/bulwark/core/spec"
	"github.com/bulwark-iac/bulwark/core/state"
	"github.com/bulwark-iac/bulwark/core/storage"
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
	return typ == OpImport || typ == OpForget || typ == OpMove || typ == OpRefresh
}

// ErrNotRecorded is returned (wrapped) for an address the state does not
// record.
var ErrNotRecorded = errors.New("not recorded in the state")

// ErrAlreadyRecorded is returned (wrapped) by state mv for a new name the
// state records already.
var ErrAlreadyRecorded = errors.New("already recorded in the state")

// StateForget stops managing a resource without deleting it, whatever its
// protection: it drops the record, as a journaled operation under the
// lock, and then releases the stack's claim on the resource through its
// provider (docs/architecture.md, "Claims"), so another stack may import it.
// The record goes first: a crash between the two leaves the resource claimed
// by a stack that no longer records it (nobody may import it but this stack,
// which may, and forget it again), never two owners. The provider is asked
// for nothing else; a provider that cannot release (or cannot be started)
// leaves the claim in place, and a note says so: the resource is then safe
// from every stack, and no other can take it over.
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
		return nil, fmt.Errorf("state forget %s: %w of stack %s%s", address, ErrNotRecorded, sp.Stack, InstancesHint(snap, address))
	}
	res := s.stateOp(ctx, OpForget, "forget", cur.Name, cur.Type, func(ctx context.Context) error {
		return s.store.MutateNow(ctx, func(st *state.State) error {
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
	})
	if res.Outcome == engine.Succeeded {
		if note := s.release(ctx, cur, snap); note != "" {
			s.prog.printf("note: %s\n", note)
		}
	}
	return res, nil
}

// release gives up the claim the forgotten record cur held, through its
// provider, and returns what the person must know when it could not: ""
// when it was released (or there was no claim to release).
func (s *session) release(ctx context.Context, cur *state.Resource, st *state.State) string {
	if cur.IdempotencyKey == "" {
		return fmt.Sprintf("%s (id %s) carries no claim of this stack (imported before claims, or from a provider that does not report keys): any stack may import it", cur.Name, cur.ID)
	}
	kept := fmt.Sprintf("the claim of stack %s on %s (id %s) is kept: no other stack can import it", s.sp.Stack, cur.Name, cur.ID)
	if err := s.startProviders(ctx, []string{cur.Provider}, st); err != nil {
		return fmt.Sprintf("%s (provider %s could not be started to release it: %v)", kept, cur.Provider, err)
	}
	resp, err := s.plugins[cur.Provider].Release(ctx, &providers.ReleaseRequest{Type: cur.Type, Name: cur.Name, ID: cur.ID, Key: cur.IdempotencyKey, Private: cur.PrivateData()})
	switch {
	case errors.Is(err, providers.ErrReleaseUnsupported):
		return fmt.Sprintf("%s (provider %s cannot release claims)", kept, cur.Provider)
	case err != nil:
		return fmt.Sprintf("%s: %v; to release it, import it again here (`bulwark import`) and forget it again", kept, err)
	case !resp.Released:
		return fmt.Sprintf("%s: provider %s did not release it; to release it, import it again here (`bulwark import`) and forget it again", kept, cur.Provider)
	}
	return ""
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
	// A move, not an update: its step and event name the new address,
	// with the old one as the event's from, as a spec's moved: entry's do.
	s.prog.moveFrom = map[string]string{to: from}
	return s.stateOp(ctx, OpMove, "move", to, cur.Type, func(ctx context.Context) error {
		return s.store.MutateNow(ctx, func(st *state.State) error {
			r := st.Resources[from]
			if r == nil || st.Resources[to] != nil {
				return fmt.Errorf("state mv %s %s: the state changed", from, to)
			}
			moveRecord(st, from, to)
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
// provider's Import, or Read by id for a provider without it), decides from
// the key it carries whether it may be taken, and then, in one journaled
// step under the lock, stamps this stack's claim on it through the provider
// (docs/architecture.md, "Claims") and records it under address, a resource
// of the spec, as imported: this stack's from now on, never deleted by a
// rollback.
//
// It refuses, before anything is stamped or recorded: an address the state
// records already; a resource that is not found; one the state records
// under another name; and one that carries another stack's live claim (its
// key, from a Create or an import): that stack must forget it first, which
// releases the claim. With --from OWNER (Options.ImportFrom) it takes only
// a resource whose claim OWNER released. The provider's stamp is the
// arbiter of a race: it stamps only what carries no live claim, else the
// step fails and nothing is recorded. A provider that takes no key (one
// built for Terraform) cannot stamp: the other stacks on the same backend
// are its claims registry, and an id one of them records is refused
// (ClaimedElsewhereError; under the claims lock on the file backend, see
// claimedElsewhere). One
// that cannot stamp because it predates claims is imported as before, and
// the result says that a second import elsewhere will not be refused.
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
	var unfinished *UnfinishedError
	if errors.As(err, &unfinished) {
		// An operation stopped at an unknown create: importing what it
		// made is one of the two ways to settle it (UnknownCreateError).
		opts.importPast = unfinished.Op
		s, err = open(ctx, sp, opts, false)
	}
	if err != nil {
		return nil, err
	}
	defer s.close()
	st := s.store.Snapshot()
	if unfinished != nil {
		if err := s.importSettles(ctx, unfinished, address, r.Provider); err != nil {
			return nil, err
		}
	}
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
	resp, err := p.Import(ctx, &providers.ImportRequest{Type: r.Type, Name: r.Name, ID: id, Config: r.Config})
	if err != nil {
		return nil, fmt.Errorf("import %s %s: %w", address, id, err)
	}
	if !resp.Exists {
		return nil, &ImportError{Address: address, ID: id, Reason: fmt.Sprintf("provider %s finds no %s with id %s", r.Provider, r.Type, id)}
	}
	replaces, why := s.claimable(resp.IdempotencyKey, id)
	if why != "" {
		return nil, &ImportError{Address: address, ID: id, Reason: why}
	}
	keyless := capsOf(p).Keyless
	var claims storage.ClaimsLock
	if keyless {
		// Nothing on the resource says whose it is: the other stacks on
		// this backend are asked (see claimedElsewhere), under the
		// claims lock until the import is recorded.
		var err error
		if claims, err = s.claimsLock(ctx); err != nil {
			return nil, err
		}
		defer claims.Release(context.WithoutCancel(ctx))
		if err := s.claimedElsewhere(ctx, address, p.Source(), r.Type, id); err != nil {
			return nil, err
		}
	}
	var notes []string
	res := s.stateOp(ctx, OpImport, "import", address, r.Type, func(ctx context.Context) error {
		// The claim is this operation's: derived from its journal id, as a
		// Create's key is from its step's, so it names this stack and
		// lineage and a resume tells it for this stack's own.
		claim := s.identity().ClaimKey(s.opID)
		got, err := p.Import(ctx, &providers.ImportRequest{Type: r.Type, Name: r.Name, ID: id, Config: r.Config, ClaimKey: claim, ReplacesKey: replaces})
		switch {
		case err != nil && providers.IsConflict(err):
			return fmt.Errorf("import %s %s: it was claimed meanwhile, by another import or stack: nothing was recorded: %w", address, id, err)
		case err != nil:
			return fmt.Errorf("import %s %s: %w", address, id, err)
		case !got.Exists:
			return fmt.Errorf("import %s %s: provider %s no longer finds it: nothing was recorded", address, id, r.Provider)
		case got.ID != resp.ID:
			return fmt.Errorf("import %s %s: provider %s now finds %s there: nothing was recorded", address, id, r.Provider, got.ID)
		case !got.Claimed && !keyless:
			notes = append(notes, fmt.Sprintf("provider %s cannot stamp a claim on what it imports: a second import of %s, into this stack under another name or into another stack, will not be refused (bulwark has no claims registry for such providers yet)", r.Provider, id))
		}
		rec := importRecord(r, p.Source(), observe.Observation(true, got.ID, got.Attributes, got.IdempotencyKey, false, got.Private), s.opID)
		if claims != nil {
			// The check it guards holds only while the lock is this
			// import's: one lost meanwhile records nothing.
			if err := claims.Held(ctx); err != nil {
				return fmt.Errorf("import %s %s: nothing was recorded: %w", address, id, err)
			}
		}
		return s.store.MutateNow(ctx, func(st *state.State) error {
			if st.Resources[address] != nil {
				return fmt.Errorf("the state records %s already", address)
			}
			st.Resources[address] = rec
			// Whatever key it carried before is no longer on it: no
			// longer one to keep in mind as given up.
			released, _ := providers.ReleasedFrom(resp.IdempotencyKey)
			st.Forgotten = slices.DeleteFunc(st.Forgotten, func(k string) bool {
				return k == rec.IdempotencyKey || k == replaces || k == released
			})
			return nil
		})
	})
	for _, n := range notes {
		s.prog.printf("note: %s\n", n)
	}
	return res, nil
}

// claimable decides from the key a resource carries (found) whether this
// stack may import it, and which key it may stamp over (replaces): "" with
// why "" for a resource that carries no key or a released one. why says
// why not.
func (s *session) claimable(found, id string) (replaces, why string) {
	from := s.opts.ImportFrom
	ident := s.identity()
	if rel, ok := providers.ReleasedFrom(found); ok {
		o, named := plan.ParseKey(rel)
		own := named && o.Stack == s.sp.Stack && o.Lineage == ident.Lineage
		switch {
		case own && from == "":
			// This stack forgot it: taken back, as before the forget.
		case from != "" && (!named || o.Stack != from):
			return "", fmt.Sprintf("it was released by %s, not by stack %s (--from): check the stack it comes from", releasedBy(o, named), from)
		case from != "":
			s.prog.printf("note: taking %s over from stack %s (--from), which released it\n", id, from)
		case named:
			// Like CloudFormation, the person names the stack a resource
			// comes from, even one that let it go.
			return "", fmt.Sprintf("it was made or imported by stack %s (lineage %s), which released it (`bulwark state forget`): import it with --from %s", o.Stack, o.Lineage, o.Stack)
		}
		return "", ""
	}
	o, named := plan.ParseKey(found)
	switch {
	case found == "" && from != "":
		return "", fmt.Sprintf("it carries no claim, so stack %s did not release it (--from takes only what the named stack released): check the id, or import it without --from", from)
	case found == "":
		return "", ""
	case named && o.Stack == s.sp.Stack && o.Lineage == ident.Lineage:
		// This stack's own key, on something its state records under no
		// name (checked before): what a crash left between an import's
		// stamp (or a Create) and its record, or what it forgot and could
		// not release. It is taken back over that key.
		return found, ""
	case named && from == o.Stack:
		// Like CloudFormation, an import never takes a resource its owner
		// still holds: that stack may still record and protect it.
		return "", fmt.Sprintf("stack %s (lineage %s) still holds its claim on it: it may still record and protect it. Run `bulwark state forget` for it in stack %s first (that releases the claim), then import it here with --from %s", o.Stack, o.Lineage, o.Stack, o.Stack)
	case named:
		return "", fmt.Sprintf("it belongs to stack %s (lineage %s), which may still record and protect it: run `bulwark state forget` for it in stack %s first (that releases the claim), then import it with --from %s", o.Stack, o.Lineage, o.Stack, o.Stack)
	case from != "":
		return "", fmt.Sprintf("it carries a key that names no stack (%s), so stack %s did not release it", found, from)
	}
	// A key of bulwark before keys named their stack: no stack to ask;
	// taken over, as before claims.
	return found, ""
}

// stampClaim stamps claim (the import step's key) on what a spec's
// `import: ID` found (obs, which the plan's decision accepted: it carries no
// key, a released one, or one of this stack's or of no stack), through the
// provider's Import, and returns what it found then. A conflict (claimed
// meanwhile) fails the step before anything is recorded; a provider that
// cannot stamp is checked against the other stacks by the caller, under the
// claims lock (importResource).
func (s *session) stampClaim(ctx context.Context, r *spec.Resource, obs *plan.Observation, claim string) (*plan.Observation, error) {
	replaces := ""
	if _, released := providers.ReleasedFrom(obs.Key); !released {
		replaces = obs.Key
	}
	if o, ok := plan.ParseKey(claim); ok {
		claim = s.identity().ClaimKey(o.Record)
	}
	got, err := s.plugins[r.Provider].Import(ctx, &providers.ImportRequest{Type: r.Type, Name: r.Name, ID: obs.ID, Config: r.Config, ClaimKey: claim, ReplacesKey: replaces})
	switch {
	case err != nil:
		return nil, fmt.Errorf("import %s %s: nothing was recorded: %w", r.Name, obs.ID, err)
	case !got.Exists || got.ID != obs.ID:
		return nil, fmt.Errorf("import %s %s: provider %s no longer finds it: nothing was recorded", r.Name, obs.ID, r.Provider)
	case !got.Claimed && !capsOf(s.plugins[r.Provider]).Keyless:
		s.prog.printf("note: provider %s cannot stamp a claim on what it imports: a second import of %s will not be refused (bulwark has no claims registry for such providers yet)\n", r.Provider, obs.ID)
	}
	return observe.Observation(true, got.ID, got.Attributes, got.IdempotencyKey, false, got.Private), nil
}

// releasedBy names, for a message, who released a claim.
func releasedBy(o plan.KeyOwner, named bool) string {
	if named {
		return "stack " + o.Stack
	}
	return "an owner that no stack name identifies"
}

// stateOp runs one state command as a journaled operation of one step.
func (s *session) stateOp(ctx context.Context, typ, action, resource, rtype string, fn func(context.Context) error) *Result {
	op := &engine.Operation{ID: s.opID, Type: typ, Spec: s.sp.File, Parallelism: 1, User: s.holder.User}
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
func (s *session) closeStateOp(ctx context.Context, target UnfinishedError) (*Result, error) {
	err := fmt.Errorf("the interrupted %s %s is closed; its state write is atomic: see `bulwark state list` and run it again if it did not take effect", target.Type, target.Op)
	if _, jerr := s.jr.Append(ctx, journal.Record{Op: target.Op, Kind: journal.KindOp, Type: target.Type, Status: journal.OpFailed, Error: err.Error()}); jerr != nil {
		return nil, jerr
	}
	return &Result{Op: target.Op, Type: target.Type, Outcome: engine.Failed, Err: err}, nil
}

// InstancesHint names, for an address the state does not record, the
// for_each instances it records under that name: " (it records web[a],
// web[b]: name one)"; for an address that is not one, why (a module
// call's key is quoted: app["eu"].db); else "".
func InstancesHint(st *state.State, address string) string {
	if _, err := spec.ParseAddress(address); err != nil {
		return " (" + err.Error() + ")"
	}
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
