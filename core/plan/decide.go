package plan

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/bulwark-iac/bulwark/core/protection"
	"github.com/bulwark-iac/bulwark/core/providers"
	"github.com/bulwark-iac/bulwark/core/spec"
	"github.com/bulwark-iac/bulwark/core/state"
)

// Ownership is how a resource relates to this stack, as Decide classifies it.
type Ownership string

const (
	// Unknown: reality was not read (a plan from the state alone).
	Unknown Ownership = ""
	// Absent: nothing is recorded and nothing was found.
	Absent Ownership = "absent"
	// Owned: recorded in this stack's state, and what exists is what was
	// recorded.
	Owned Ownership = "owned"
	// Recovered: not recorded, but found carrying an idempotency key this
	// stack issued (a Create whose outcome a crash left unknown): ours.
	Recovered Ownership = "recovered"
	// Foreign: it exists with the same identity but belongs to no state, or
	// to another stack, or what a recorded id holds now carries another key.
	Foreign Ownership = "foreign"
	// Gone: recorded, but the provider no longer finds it.
	Gone Ownership = "gone"
	// Importing: the spec says `import: ID` and the resource was found.
	Importing Ownership = "importing"
)

// Identity is who is asking: the stack and its lineage. Keys this stack
// issues name both, so what a Create made is recognisably this stack's.
type Identity struct {
	Stack   string
	Lineage string
	// Forgotten are keys this stack issued but gave up (`state forget`).
	Forgotten []string
}

// keyPrefix starts every idempotency key bulwark issues.
const keyPrefix = "bulwark:"

// Key is the idempotency key of the Execute journaled under record id:
// bulwark:<stack>:<lineage>:<id>. It is derived, never stored alone, so a
// resume reading the journal derives the same key. A stack without a
// lineage (never the case once opened) issues the bare id, as keys before
// lineages were.
func (id Identity) Key(record string) string {
	if id.Lineage == "" || id.Stack == "" {
		return record
	}
	return keyPrefix + id.Stack + ":" + id.Lineage + ":" + record
}

// claimPrefix starts the record part of a key an import stamped as its
// claim, so that what a crash left claimed but unrecorded is recognised as
// imported, not created.
const claimPrefix = "import-"

// ClaimKey is the key an import journaled under record stamps on the
// resource it takes over (docs/architecture.md, "Claims"): one of this
// stack's keys, told apart from a Create's by IsClaim.
func (id Identity) ClaimKey(record string) string { return id.Key(claimPrefix + record) }

// IsClaim reports whether key is one an import stamped (ClaimKey).
func IsClaim(key string) bool {
	o, ok := ParseKey(key)
	return ok && strings.HasPrefix(o.Record, claimPrefix)
}

// KeyOwner is what a key says about who issued it.
type KeyOwner struct {
	Stack, Lineage, Record string
}

// ParseKey reads a key bulwark issued. ok is false for anything else,
// including the bare ULIDs of keys issued before keys named their stack.
func ParseKey(key string) (KeyOwner, bool) {
	rest, found := strings.CutPrefix(key, keyPrefix)
	if !found {
		return KeyOwner{}, false
	}
	parts := strings.Split(rest, ":")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
		return KeyOwner{}, false
	}
	return KeyOwner{Stack: parts[0], Lineage: parts[1], Record: parts[2]}, true
}

// OtherStacks reports whether key was issued by a bulwark stack other than
// this one (another stack, or another lineage of this stack's name), and
// who issued it. Keys this stack issued and then forgot are its own.
func (id Identity) OtherStacks(key string) (KeyOwner, bool) {
	o, ok := ParseKey(key)
	if !ok || id.Issued(key) || slices.Contains(id.Forgotten, key) {
		return KeyOwner{}, false
	}
	return o, true
}

// Issued reports whether key was issued by this stack (same stack, same
// lineage) and not given up since (`state forget`).
func (id Identity) Issued(key string) bool {
	o, ok := ParseKey(key)
	return ok && id.Stack != "" && id.Lineage != "" && o.Stack == id.Stack && o.Lineage == id.Lineage && !slices.Contains(id.Forgotten, key)
}

// Observation is what a provider's Read (or Import) found for a resource.
type Observation struct {
	Exists     bool
	ID         string
	Attributes map[string]any
	// Key is the idempotency key the resource was created under, as the
	// provider reports it ("" when none is recorded or reported).
	Key string
	// ByIdentity is set when the Read looked the resource up by natural
	// identity (type, name, config) rather than by a recorded id.
	ByIdentity bool
	// Private is the provider's private data the Read returned (nil: none).
	Private []byte
	// Planned is the provider's own plan toward the spec, from a provider
	// that plans (providers.ReadResponse.Planned); nil: the host's diff.
	Planned *providers.Planned
}

// drift is what the provider must change for want: the provider's own
// plan when it made one, else want's attributes that the observed ones
// differ from.
func (o *Observation) drift(want map[string]any) []string {
	if o.Planned != nil {
		return append([]string(nil), o.Planned.Changes...)
	}
	return Drift(want, o.Attributes)
}

// DriftOf is Drift of what a Read answered: the provider's own plan's
// changes when it made one.
func DriftOf(want map[string]any, resp *providers.ReadResponse) []string {
	if resp.Planned != nil {
		return append([]string(nil), resp.Planned.Changes...)
	}
	return Drift(want, resp.Attributes)
}

// Input is everything Decide looks at for one resource.
type Input struct {
	Spec     *spec.Resource  // nil: gone from the spec
	Recorded *state.Resource // nil: the state records nothing under this name
	Observed *Observation    // nil: reality was not read
	Schema   *providers.GetSchemaResponse
	Identity Identity
	// KeysReported: the provider reports on Read the key each resource was
	// created under (Capabilities.IdempotencyKeys). Without it an
	// unrecorded resource's owner cannot be known.
	KeysReported bool
	// RecordedAs names the record of this state that holds the id found,
	// when it is another name's.
	RecordedAs string
	// Replace: the run names this resource with --replace (Terraform's
	// -replace): it is replaced even with no change, and a durable one may
	// be (the user's consent to lose its data).
	Replace bool
	// Rollback: the operation is a rollback to a revision (`bulwark
	// rollback`). The ladder's rollback column then governs what the
	// target revision lacks: a durable or protected resource is kept and
	// retained (Retain), only an ephemeral one is deleted.
	Rollback bool
}

// Decide says what a resource needs: the one decision behind plan, apply's
// Check and the preview. It is a pure function of its input. With Observed
// nil it predicts from the state alone, taking reality to be what the state
// records.
func Decide(in Input) Change {
	if in.Spec == nil {
		return decideRemoved(in)
	}
	r, cur, obs := in.Spec, in.Recorded, in.Observed
	c := Change{Resource: r.Name, Type: r.Type, Provider: r.Provider, After: r.Config,
		Protection: Level(protection.Unspecified, r.Protection), ImportID: r.Import}
	if cur != nil {
		c.Before = cur.Config
		c.Protection = Level(cur.Protection, r.Protection)
		if cur.Protection != r.Protection {
			c.ProtectionFrom, c.ProtectionTo = cur.Protection, r.Protection
		}
	}
	if obs != nil && obs.Exists {
		c.FoundID = obs.ID
	}
	c.Requested = in.Replace
	switch {
	case cur != nil && (cur.Type != r.Type || cur.Provider != r.Provider):
		// Another type or provider: the recorded resource is another thing.
		// The new one is made first only when its type says any two of it
		// can exist at once (its identity is not the old one's to share);
		// else the old one is deleted first. The new one's identity must be
		// free.
		c.Action, c.ForceNew, c.Ownership = Replace, []string{"(type or provider)"}, Owned
		c.Mode = DeleteFirst
		if rt, ok := resourceType(in.Schema, r.Type); ok && rt.Coexistence.Always {
			c.Mode = CreateFirst
		}
		if obs != nil && obs.Exists && !in.Identity.Issued(obs.Key) {
			return in.conflict(c, obs, "")
		}
		return c
	case cur != nil && r.Import != "" && cur.ID != r.Import:
		return in.conflict(c, obs, fmt.Sprintf("the spec says import: %s, but the state records it as %s (remove import: or run `bulwark state forget`)", r.Import, cur.ID))
	case cur == nil && obs != nil && obs.Exists && in.RecordedAs != "":
		return in.conflict(c, obs, fmt.Sprintf("%s %s (id %s) is recorded in this stack as %s (a `bulwark state mv`?): rename the resource in the spec", c.Type, c.Resource, obs.ID, in.RecordedAs))
	case cur == nil && r.Import != "":
		return decideImport(in, c)
	case cur == nil && (obs == nil || !obs.Exists):
		c.Action, c.Ownership = Create, Absent
		if obs == nil {
			c.Ownership = Unknown
		}
		return c
	case cur == nil && in.Identity.Issued(obs.Key):
		// Ours after a crash: recorded from what was found, then compared.
		c.Ownership = Recovered
		cur = &state.Resource{Name: r.Name, Type: r.Type, Provider: r.Provider, ID: obs.ID, IdempotencyKey: obs.Key}
	case cur == nil:
		return in.conflict(c, obs, "")
	case obs != nil && !obs.Exists:
		c.Action, c.Ownership, c.Before = Create, Gone, nil
		return c
	case obs != nil && in.notTheRecorded(cur, obs):
		return in.conflict(c, obs, fmt.Sprintf("the state records %s under key %s, but what exists there now %s: it was deleted and made again outside bulwark, or taken over; bulwark neither changes nor deletes it (run `bulwark state forget`, then import it if it is yours)", cur.ID, cur.IdempotencyKey, carries(obs.Key)))
	default:
		c.Ownership = Owned
		if obs == nil {
			c.Ownership = Unknown
		}
	}
	return compare(in, c, cur)
}

// compare decides between replace, update and nothing for a resource this
// stack owns.
func compare(in Input, c Change, cur *state.Resource) Change {
	r, obs := in.Spec, in.Observed
	changed := ChangedKeys(cur.Config, r.Config)
	c.Changed = changed
	// What the provider must change: the spec against reality when it was
	// read, else against the record.
	work := changed
	if obs != nil {
		c.Drift = Drift(cur.Config, obs.Attributes)
		work = obs.drift(r.Config)
		for k := range cur.Config {
			if obs.Planned != nil {
				break // the provider's plan saw the removed keys
			}
			if _, inSpec := r.Config[k]; !inSpec {
				if _, present := obs.Attributes[k]; present {
					work = append(work, k)
				}
			}
		}
		sort.Strings(work)
		c.Drifted = work
	}
	c.ForceNew = forceNew(in.Schema, r.Type, work)
	if obs != nil && obs.Planned != nil {
		c.ForceNew = append([]string(nil), obs.Planned.RequiresReplace...)
	}
	switch {
	case len(c.ForceNew) > 0 || in.Replace:
		c.Action = Replace
		before := cur.Attributes
		if obs != nil {
			before = obs.Attributes
		}
		c.Mode = Order(in.Schema, r.Type, before, r.Config)
	case len(work) > 0:
		c.Action, c.Remote = Update, true
	case len(changed) > 0 || cur.Protection != r.Protection || !sameStrings(cur.DependsOn, r.DependsOn) || c.Ownership == Recovered:
		c.Action = Update // the record only
	default:
		c.Action = NoOp
	}
	return c
}

// decideImport is a resource the spec says to take over by id.
func decideImport(in Input, c Change) Change {
	obs := in.Observed
	switch {
	case obs == nil:
		c.Action, c.Ownership = Import, Unknown
		return c
	case !obs.Exists:
		return in.conflict(c, obs, fmt.Sprintf("import: %s was not found", in.Spec.Import))
	}
	if rel, ok := providers.ReleasedFrom(obs.Key); ok {
		if o, ok := in.Identity.OtherStacks(rel); ok {
			// Released by its owner: still taken only by naming it.
			return in.conflict(c, obs, fmt.Sprintf("import: %s was released by stack %s (`bulwark state forget`): take it over with `bulwark import --from %s SPEC %s %s`", in.Spec.Import, o.Stack, o.Stack, c.Resource, in.Spec.Import))
		}
	}
	if o, ok := in.Identity.OtherStacks(obs.Key); ok {
		// Like CloudFormation, an import never takes a resource from the
		// stack that made it: that stack may still record and protect it.
		return in.conflict(c, obs, fmt.Sprintf("import: %s belongs to stack %s (lineage %s), which may still record it; it is not taken from it: run `bulwark state forget` in stack %s first, then `bulwark import --from %s SPEC %s %s`", in.Spec.Import, o.Stack, o.Lineage, o.Stack, o.Stack, c.Resource, in.Spec.Import))
	}
	c.Action, c.Ownership = Import, Importing
	c.Drifted = obs.drift(in.Spec.Config)
	if fn := forceNew(in.Schema, in.Spec.Type, c.Drifted); len(fn) > 0 {
		c.ForceNew = fn
		return in.conflict(c, obs, fmt.Sprintf("importing %s would need a replace (%s differ from the spec): make the spec match what exists", in.Spec.Import, strings.Join(fn, ", ")))
	}
	c.Remote = len(c.Drifted) > 0
	return c
}

// decideRemoved is a recorded resource the spec no longer has: deleted,
// unless it is gone already or no longer ours. What a rollback's target
// lacks follows the ladder's rollback column (a durable or protected
// resource is retained), and a resource already retained is kept: no apply
// deletes it.
func decideRemoved(in Input) Change {
	cur, obs := in.Recorded, in.Observed
	c := Change{Resource: cur.Name, Type: cur.Type, Provider: cur.Provider, Action: Delete,
		Protection: Level(cur.Protection, protection.Ephemeral), Before: cur.Config, Ownership: Owned}
	switch {
	case obs != nil && in.notTheRecorded(cur, obs):
		c.FoundID = obs.ID
		return in.conflict(c, obs, fmt.Sprintf("the state records %s under key %s, but what exists there now %s: it is not deleted (run `bulwark state forget`)", cur.ID, cur.IdempotencyKey, carries(obs.Key)))
	case cur.RetainedBy != "":
		// Kept: nothing is deleted; a teardown or `state forget` is what
		// ends it.
		c.Action, c.Retained = NoOp, true
		if obs == nil {
			c.Ownership = Unknown
		}
	case obs == nil:
		c.Ownership = Unknown
	case !obs.Exists && c.Protection == protection.Protected && !in.Rollback:
		// Gone from the spec and from reality, but protected: what the
		// apply would do is drop its record, and a protected resource's
		// record is dropped only by hand (`bulwark state forget`), as a
		// teardown refuses one whether it exists or not. Still a delete,
		// so the ladder refuses the plan whole (Check: RefusedError.Gone);
		// a provider that finds nothing may be looking in the wrong place.
		c.Ownership = Gone
	case !obs.Exists:
		c.Action, c.Ownership = NoOp, Gone
	}
	if c.Action == Delete && in.Rollback && c.Protection != protection.Ephemeral {
		c.Action = Retain
	}
	return c
}

// notTheRecorded reports whether what the recorded id holds now is not the
// resource the state records: the state records the key it was made (or
// claimed) under, and what exists carries another key, or, from a
// provider that reports keys, none at all (deleted and made again out of
// band at the same id: a bucket of the same name). A provider that does
// not report keys reports none for everything: its silence proves nothing.
// Plan, apply's Check and the teardown's all decide this here, so a plan
// never shows "no change" for what the teardown would then refuse.
func (in Input) notTheRecorded(cur *state.Resource, obs *Observation) bool {
	if cur.IdempotencyKey == "" || !obs.Exists || obs.Key == cur.IdempotencyKey {
		return false
	}
	return obs.Key != "" || in.KeysReported
}

// carries says, for a message, what key a resource carries.
func carries(key string) string {
	if key == "" {
		return "carries no key"
	}
	return "carries " + key
}

// conflict marks c as a conflict: what was found is not this stack's.
func (in Input) conflict(c Change, obs *Observation, why string) Change {
	c.Action, c.Ownership, c.ForceNew, c.Remote = Conflict, Foreign, nil, false
	if obs != nil {
		c.FoundID = obs.ID
		c.Owner = in.ownerOf(obs.Key)
	}
	if why == "" {
		c.Importable = c.FoundID != ""
		why = fmt.Sprintf("%s %s already exists (id %s) and %s", c.Type, c.Resource, c.FoundID, c.Owner)
	}
	c.Reason = why
	return c
}

// ownerOf names the owner a key shows, for messages.
func (in Input) ownerOf(key string) string {
	if from, ok := providers.ReleasedFrom(key); ok {
		o, named := ParseKey(from)
		switch {
		case named && o.Stack == in.Identity.Stack && o.Lineage == in.Identity.Lineage:
			return "was forgotten by this stack (`bulwark state forget`, which released its claim); import it to manage it again"
		case named:
			return fmt.Sprintf("was released by stack %s (`bulwark state forget`): `bulwark import` takes it over", o.Stack)
		}
		return "was released by its owner (`bulwark state forget`): `bulwark import` takes it over"
	}
	switch o, ok := ParseKey(key); {
	case ok && slices.Contains(in.Identity.Forgotten, key):
		return "was forgotten by this stack (`bulwark state forget`); import it to manage it again"
	case ok && o.Stack == in.Identity.Stack:
		return fmt.Sprintf("belongs to another lineage of stack %s (lineage %s)", o.Stack, o.Lineage)
	case ok:
		return fmt.Sprintf("belongs to stack %s", o.Stack)
	case key != "":
		return "was made by bulwark under a key that names no stack (before lineages)"
	case in.KeysReported:
		return "was not made by bulwark (it carries no idempotency key)"
	}
	return "is not recorded in this stack's state (its provider does not report owners)"
}

// Order is how a replace of a resource of type typ goes, from what its
// provider's schema says of two instances at once (providers.Coexistence): the
// new one first when the type says any two can coexist, or when an
// identity attribute the new configuration sets has another value than
// what exists (before: the observed, else the recorded attributes); else,
// and for a provider that says nothing, the old one is deleted first. An
// attribute the new configuration leaves to the provider, or whose value is
// known only after apply, counts as the same: create first only when sure.
func Order(schema *providers.GetSchemaResponse, typ string, before, after map[string]any) ReplaceMode {
	rt, ok := resourceType(schema, typ)
	if !ok {
		return DeleteFirst
	}
	if rt.Coexistence.Always {
		return CreateFirst
	}
	for _, k := range rt.Coexistence.WhenDiffers {
		a, inAfter := after[k]
		b, inBefore := before[k]
		if !inAfter || !inBefore || HasUnknown(a) {
			continue
		}
		if !Equal(a, b) {
			return CreateFirst
		}
	}
	return DeleteFirst
}

func resourceType(schema *providers.GetSchemaResponse, typ string) (providers.ResourceType, bool) {
	if schema == nil {
		return providers.ResourceType{}, false
	}
	return schema.ResourceType(typ)
}

func forceNew(schema *providers.GetSchemaResponse, typ string, keys []string) []string {
	if schema == nil {
		return nil
	}
	rt, _ := schema.ResourceType(typ)
	var out []string
	for _, k := range keys {
		if a, ok := rt.Attribute(k); ok && a.ForceNew && !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out
}

// Env is what a plan is made against besides the spec and the state.
type Env struct {
	Schemas  map[string]*providers.GetSchemaResponse // by local provider name
	Identity Identity
	// KeysReported says, per local provider name, whether it reports keys.
	KeysReported map[string]bool
	// Replace holds the addresses the run names with --replace.
	Replace map[string]bool
}

// Input builds Decide's input for one resource.
func (e Env) Input(r *spec.Resource, cur *state.Resource, obs *Observation) Input {
	provider := ProviderOf(r, cur)
	in := Input{Spec: r, Recorded: cur, Observed: obs, Schema: e.Schemas[provider], Identity: e.Identity, KeysReported: e.KeysReported[provider]}
	if r != nil {
		in.Replace = e.Replace[r.Name]
	}
	return in
}

// ProviderOf is the local provider name Decide's input for r (the spec's
// resource, else the recorded one) is of.
func ProviderOf(r *spec.Resource, cur *state.Resource) string {
	switch {
	case r != nil:
		return r.Provider
	case cur != nil:
		return cur.Provider
	}
	return ""
}

// Make plans an apply of sp over st: Decide for every resource of the spec,
// in spec order, then for every recorded one the spec dropped, in state
// order. observed holds what reality showed, by resource name; nil plans
// from the state alone.
func Make(sp *spec.Spec, st *state.State, env Env, observed map[string]*Observation) *Plan {
	p := &Plan{Spec: sp.File}
	inSpec := map[string]bool{}
	for _, r := range sp.Resources {
		inSpec[r.Name] = true
		p.Changes = append(p.Changes, Decide(env.Input(r, st.Resources[r.Name], observed[r.Name])))
	}
	for _, name := range st.Names() {
		if !inSpec[name] {
			p.Changes = append(p.Changes, Decide(env.Input(nil, st.Resources[name], observed[name])))
		}
	}
	return p
}
