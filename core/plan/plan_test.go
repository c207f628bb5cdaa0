package plan

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/bulwark-iac/bulwark/core/protection"
	"github.com/bulwark-iac/bulwark/core/providers"
	"github.com/bulwark-iac/bulwark/core/spec"
	"github.com/bulwark-iac/bulwark/core/state"
)

// parse builds a spec from the resources part of a YAML document with one
// provider, mock, and a second one, other.
func parse(t *testing.T, resources string) *spec.Spec {
	t.Helper()
	doc := "version: 1\nstack: demo\nproviders:\n  mock: {}\n  other: {source: mock}\ndefault_provider: mock\nresources:\n" + resources
	sp, err := spec.Parse("stack.yaml", []byte(doc))
	if err != nil {
		t.Fatalf("spec.Parse:\n%v\n---\n%s", err, doc)
	}
	return sp
}

// schemas: every type takes size (in place) and zone (force_new).
var schemas = map[string]*providers.GetSchemaResponse{
	"mock": {ProviderName: "mock", ResourceTypes: []providers.ResourceType{
		{Name: "network", Attributes: []providers.Attribute{{Name: "size", Type: providers.TypeNumber}, {Name: "zone", Type: providers.TypeString, ForceNew: true}, {Name: "tags", Type: providers.TypeMap}}},
		{Name: "s3_bucket", Attributes: []providers.Attribute{{Name: "size", Type: providers.TypeNumber}, {Name: "zone", Type: providers.TypeString, ForceNew: true}, {Name: "region", Type: providers.TypeString, ForceNew: true}}},
	}},
}

func res(name, typ, provider, level string, config map[string]any, deps ...string) *state.Resource {
	return &state.Resource{Name: name, Type: typ, Provider: provider, Source: "mock", ID: "id-" + name, Protection: recorded(level), Config: config, DependsOn: deps}
}

// recorded is the level a state holds for word: "" is none (Unspecified),
// and a word that is no level's is a level off the ladder (what only a
// state that skipped its checks could hold).
func recorded(word string) protection.Level {
	if word == "" {
		return protection.Unspecified
	}
	if l, ok := protection.Parse(word); ok {
		return l
	}
	return protection.Level(99)
}

func st(rs ...*state.Resource) *state.State {
	s := &state.State{Version: state.Version, Stack: "demo", Resources: map[string]*state.Resource{}}
	for _, r := range rs {
		s.Resources[r.Name] = r
	}
	return s
}

// summary is the part of a Change most tests compare.
type summary struct {
	Resource   string
	Action     Action
	Protection protection.Level
	ForceNew   []string
}

func summarize(p *Plan) []summary {
	var out []summary
	for _, c := range p.Changes {
		out = append(out, summary{c.Resource, c.Action, c.Protection, c.ForceNew})
	}
	return out
}

func TestForApply(t *testing.T) {
	tests := []struct {
		name      string
		resources string
		state     *state.State
		schemas   map[string]*providers.GetSchemaResponse
		want      []summary
	}{
		{
			name:      "empty state: everything is created, at the spec's level",
			resources: "  - {name: net, type: network}\n  - {name: store, type: s3_bucket, protection: durable}\n  - {name: vault, type: s3_bucket, protection: protected}\n",
			state:     st(),
			want: []summary{
				{"net", Create, protection.Ephemeral, nil},
				{"store", Create, protection.Durable, nil},
				{"vault", Create, protection.Protected, nil},
			},
		},
		{
			name:      "same config: only checked (2 in YAML equals 2.0 in the state)",
			resources: "  - {name: net, type: network, config: {size: 2, zone: a, tags: {t: x}}}\n",
			state:     st(res("net", "network", "mock", "ephemeral", map[string]any{"size": 2.0, "zone": "a", "tags": map[string]any{"t": "x"}})),
			want:      []summary{{"net", NoOp, protection.Ephemeral, nil}},
		},
		{
			name:      "in-place attribute changed: update",
			resources: "  - {name: net, type: network, config: {size: 3, zone: a}}\n",
			state:     st(res("net", "network", "mock", "ephemeral", map[string]any{"size": 2.0, "zone": "a"})),
			want:      []summary{{"net", Update, protection.Ephemeral, nil}},
		},
		{
			name:      "in-place attribute added: update",
			resources: "  - {name: net, type: network, config: {size: 3}}\n",
			state:     st(res("net", "network", "mock", "ephemeral", nil)),
			want:      []summary{{"net", Update, protection.Ephemeral, nil}},
		},
		{
			name:      "force_new attribute changed: replace naming it",
			resources: "  - {name: net, type: network, config: {size: 3, zone: b}}\n",
			state:     st(res("net", "network", "mock", "ephemeral", map[string]any{"size": 2.0, "zone": "a"})),
			want:      []summary{{"net", Replace, protection.Ephemeral, []string{"zone"}}},
		},
		{
			name:      "force_new attribute removed: replace",
			resources: "  - {name: net, type: network}\n",
			state:     st(res("net", "network", "mock", "ephemeral", map[string]any{"zone": "a"})),
			want:      []summary{{"net", Replace, protection.Ephemeral, []string{"zone"}}},
		},
		{
			name:      "several force_new attributes, sorted",
			resources: "  - {name: b, type: s3_bucket, config: {zone: z2, region: r2}}\n",
			state:     st(res("b", "s3_bucket", "mock", "ephemeral", map[string]any{"zone": "z1", "region": "r1"})),
			want:      []summary{{"b", Replace, protection.Ephemeral, []string{"region", "zone"}}},
		},
		{
			name:      "no schema: no attribute is force_new",
			resources: "  - {name: net, type: network, config: {zone: b}}\n",
			state:     st(res("net", "network", "mock", "ephemeral", map[string]any{"zone": "a"})),
			schemas:   map[string]*providers.GetSchemaResponse{},
			want:      []summary{{"net", Update, protection.Ephemeral, nil}},
		},
		{
			name:      "type changed: replace",
			resources: "  - {name: x, type: s3_bucket}\n",
			state:     st(res("x", "network", "mock", "ephemeral", nil)),
			want:      []summary{{"x", Replace, protection.Ephemeral, []string{"(type or provider)"}}},
		},
		{
			name:      "provider changed: replace",
			resources: "  - {name: x, type: network, provider: other}\n",
			state:     st(res("x", "network", "mock", "ephemeral", nil)),
			want:      []summary{{"x", Replace, protection.Ephemeral, []string{"(type or provider)"}}},
		},
		{
			name:      "only the protection changed: update, governed by the higher level",
			resources: "  - {name: x, type: network, protection: durable}\n  - {name: y, type: network}\n",
			state:     st(res("x", "network", "mock", "ephemeral", nil), res("y", "network", "mock", "protected", nil)),
			want:      []summary{{"x", Update, protection.Durable, nil}, {"y", Update, protection.Protected, nil}},
		},
		{
			name:      "only depends_on changed: update",
			resources: "  - {name: a, type: network}\n  - {name: b, type: network, depends_on: [a]}\n",
			state:     st(res("a", "network", "mock", "ephemeral", nil), res("b", "network", "mock", "ephemeral", nil)),
			want:      []summary{{"a", NoOp, protection.Ephemeral, nil}, {"b", Update, protection.Ephemeral, nil}},
		},
		{
			name:      "depends_on in another order: no change",
			resources: "  - {name: a, type: network}\n  - {name: b, type: network}\n  - {name: c, type: network, depends_on: [b, a]}\n",
			state:     st(res("a", "network", "mock", "ephemeral", nil), res("b", "network", "mock", "ephemeral", nil), res("c", "network", "mock", "ephemeral", nil, "a", "b")),
			want:      []summary{{"a", NoOp, protection.Ephemeral, nil}, {"b", NoOp, protection.Ephemeral, nil}, {"c", NoOp, protection.Ephemeral, nil}},
		},
		{
			name:      "gone from the spec: delete at the recorded level, after the spec's changes, by name",
			resources: "  - {name: keep, type: network}\n",
			state: st(res("keep", "network", "mock", "ephemeral", nil), res("zz", "network", "mock", "ephemeral", nil),
				res("durable_one", "s3_bucket", "mock", "durable", nil), res("vault", "s3_bucket", "mock", "protected", nil)),
			want: []summary{
				{"keep", NoOp, protection.Ephemeral, nil},
				{"durable_one", Delete, protection.Durable, nil},
				{"vault", Delete, protection.Protected, nil},
				{"zz", Delete, protection.Ephemeral, nil},
			},
		},
		{
			name:      "a level the state does not know counts as protected",
			resources: "",
			state:     st(res("odd", "network", "mock", "permanent", nil)),
			want:      []summary{{"odd", Delete, protection.Protected, nil}},
		},
		{
			name:      "lowering protection in the same run as a replace keeps the recorded level",
			resources: "  - {name: vault, type: s3_bucket, config: {zone: b}}\n",
			state:     st(res("vault", "s3_bucket", "mock", "protected", map[string]any{"zone": "a"})),
			want:      []summary{{"vault", Replace, protection.Protected, []string{"zone"}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc := tt.schemas
			if sc == nil {
				sc = schemas
			}
			resources := tt.resources
			if resources == "" {
				resources = "  []\n"
			}
			p := ForApply(parse(t, resources), tt.state, sc)
			if diff := cmp.Diff(tt.want, summarize(p), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
		})
	}
}

// Before and After carry the two configurations; type and provider come from
// the spec, or from the state for a delete.
func TestForApplyBeforeAfter(t *testing.T) {
	sp := parse(t, "  - {name: net, type: network, config: {size: 3}}\n  - {name: new, type: network, provider: other}\n")
	s := st(res("net", "network", "mock", "ephemeral", map[string]any{"size": 2.0}), res("old", "s3_bucket", "other", "durable", map[string]any{"zone": "z"}))
	p := ForApply(sp, s, schemas)
	want := []Change{
		{Resource: "net", Type: "network", Provider: "mock", Action: Update, Protection: protection.Ephemeral, Before: map[string]any{"size": 2.0}, After: map[string]any{"size": 3.0}, Changed: []string{"size"}, Remote: true},
		{Resource: "new", Type: "network", Provider: "other", Action: Create, Protection: protection.Ephemeral, After: map[string]any{}},
		{Resource: "old", Type: "s3_bucket", Provider: "other", Action: Delete, Protection: protection.Durable, Before: map[string]any{"zone": "z"}},
	}
	if diff := cmp.Diff(want, p.Changes); diff != "" {
		t.Errorf("changes (-want +got):\n%s", diff)
	}
	if c, ok := p.Change("old"); !ok || c.Action != Delete {
		t.Errorf("Change(old) = %+v, %v", c, ok)
	}
	if _, ok := p.Change("absent"); ok {
		t.Error("Change(absent) found something")
	}
}

func TestHasChanges(t *testing.T) {
	tests := []struct {
		name string
		p    *Plan
		want bool
	}{
		{"empty", &Plan{}, false},
		{"only checks", &Plan{Changes: []Change{{Action: NoOp}, {Action: NoOp}}}, false},
		{"one update", &Plan{Changes: []Change{{Action: NoOp}, {Action: Update}}}, true},
		{"one delete", &Plan{Changes: []Change{{Action: Delete}}}, true},
	}
	for _, tt := range tests {
		if got := tt.p.HasChanges(); got != tt.want {
			t.Errorf("%s: HasChanges = %v, want %v", tt.name, got, tt.want)
		}
	}
	// A re-run of an applied spec has no changes.
	sp := parse(t, "  - {name: net, type: network, config: {size: 1}}\n")
	if ForApply(sp, st(res("net", "network", "mock", "ephemeral", map[string]any{"size": 1.0})), schemas).HasChanges() {
		t.Error("a no-op re-run has changes")
	}
}

func TestLevel(t *testing.T) {
	tests := []struct {
		recorded string
		desired  protection.Level
		want     protection.Level
	}{
		{"", protection.Ephemeral, protection.Ephemeral},
		{"", protection.Unspecified, protection.Ephemeral},
		{"", protection.Durable, protection.Durable},
		{"", protection.Protected, protection.Protected},
		{"ephemeral", protection.Durable, protection.Durable},
		{"ephemeral", protection.Protected, protection.Protected},
		{"durable", protection.Ephemeral, protection.Durable},
		{"durable", protection.Unspecified, protection.Durable},
		{"protected", protection.Ephemeral, protection.Protected},
		{"protected", protection.Durable, protection.Protected},
		{"protected", protection.Protected, protection.Protected},
		{"durable", protection.Protected, protection.Protected},
		{"Protected", protection.Ephemeral, protection.Protected},
		{"permanent", protection.Ephemeral, protection.Protected},
		{"unspecified", protection.Ephemeral, protection.Protected},
		{" durable", protection.Ephemeral, protection.Protected},
	}
	for _, tt := range tests {
		if got := Level(recorded(tt.recorded), tt.desired); got != tt.want {
			t.Errorf("Level(%q, %v) = %v, want %v", tt.recorded, tt.desired, got, tt.want)
		}
	}
}

func TestCheck(t *testing.T) {
	tests := []struct {
		name    string
		op      string
		changes []Change
		refused []string // nil: allowed
	}{
		{"empty plan", "apply", nil, nil},
		{"durable delete and consented replace allowed", "apply", []Change{
			{Resource: "a", Action: Delete, Protection: protection.Durable},
			{Resource: "b", Action: Replace, Protection: protection.Durable, Requested: true},
			{Resource: "c", Action: Delete, Protection: protection.Ephemeral},
			{Resource: "d", Action: Replace, Protection: protection.Ephemeral},
		}, nil},
		// A replace deletes a durable resource's data in either order: it
		// needs the run's consent (--replace ADDRESS).
		{"durable replace without --replace refused", "apply", []Change{
			{Resource: "b", Action: Replace, Protection: protection.Durable, ForceNew: []string{"zone"}, Mode: CreateFirst},
			{Resource: "a", Action: Replace, Protection: protection.Durable, ForceNew: []string{"zone"}, Mode: DeleteFirst},
			{Resource: "c", Action: Replace, Protection: protection.Ephemeral, ForceNew: []string{"zone"}},
		}, []string{"a", "b"}},
		{"protected replace refused even with --replace", "apply", []Change{
			{Resource: "vault", Action: Replace, Protection: protection.Protected, Requested: true},
		}, []string{"vault"}},
		{"protected create, update and check allowed", "apply", []Change{
			{Resource: "a", Action: Create, Protection: protection.Protected},
			{Resource: "b", Action: Update, Protection: protection.Protected},
			{Resource: "c", Action: NoOp, Protection: protection.Protected},
		}, nil},
		{"protected delete refused", "teardown", []Change{
			{Resource: "vault", Action: Delete, Protection: protection.Protected},
		}, []string{"vault"}},
		{"protected replace refused", "apply", []Change{
			{Resource: "vault", Action: Replace, Protection: protection.Protected},
		}, []string{"vault"}},
		{"every refused one named, sorted, allowed ones not", "apply", []Change{
			{Resource: "zeta", Action: Delete, Protection: protection.Protected},
			{Resource: "ok", Action: Delete, Protection: protection.Durable},
			{Resource: "alpha", Action: Replace, Protection: protection.Protected},
			{Resource: "mid", Action: Delete, Protection: protection.Protected},
			{Resource: "kept", Action: Update, Protection: protection.Protected},
		}, []string{"alpha", "mid", "zeta"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := (&Plan{Changes: tt.changes}).Check(tt.op)
			if tt.refused == nil {
				if err != nil {
					t.Fatalf("Check = %v, want allowed", err)
				}
				return
			}
			var re *RefusedError
			if !errors.As(err, &re) {
				t.Fatalf("Check = %v (%T), want *RefusedError", err, err)
			}
			if re.Op != tt.op {
				t.Errorf("Op = %q, want %q", re.Op, tt.op)
			}
			got := slices.Clone(re.Resources)
			for _, d := range re.Durable {
				got = append(got, d.Resource)
			}
			if diff := cmp.Diff(tt.refused, got); diff != "" {
				t.Errorf("Resources (-want +got):\n%s", diff)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, tt.op+" refused") || !strings.Contains(msg, "nothing was deleted") {
				t.Errorf("message %q", msg)
			}
			for _, n := range re.Resources {
				if !strings.Contains(msg, n) {
					t.Errorf("message %q does not name %s", msg, n)
				}
			}
			for _, d := range re.Durable {
				// Named with the attribute, and how to go on.
				if !strings.Contains(msg, d.Resource+": force_new attribute(s) zone changed") || !strings.Contains(msg, "--replace "+d.Resource) {
					t.Errorf("message %q does not say why %s is refused or how to go on", msg, d.Resource)
				}
			}
		})
	}
}

// The refusal's way out depends on whether the spec still declares the
// protected resource: lowering its level in the spec needs it there, so an
// apply's delete of one the spec dropped names `removed:` and `state
// forget` (to keep it) or declaring it again (to delete it). A teardown's
// and a replace's advice stays "lower their protection".
func TestRefusedAdvice(t *testing.T) {
	lower := "lower their protection in the spec and apply first"
	release := "The spec no longer declares them: to keep one and let the stack forget it, write `removed: [{from: NAME, destroy: false}]` in the spec (or run `bulwark state forget shop.yaml NAME`); to delete one, declare it again at a lower protection and apply, then take it out"
	tests := []struct {
		name       string
		op         string
		changes    []Change
		undeclared []string
		want       []string // in the message, in this order
		not        []string
	}{
		{"apply deleting a dropped protected resource", "apply", []Change{
			{Resource: "db", Action: Delete, Protection: protection.Protected},
		}, []string{"db"}, []string{"apply refused: it would delete protected resource(s) db; nothing was deleted. " + release}, []string{lower}},
		{"apply replacing a declared one", "apply", []Change{
			{Resource: "vault", Action: Replace, Protection: protection.Protected},
		}, nil, []string{"apply refused: it would delete protected resource(s) vault; nothing was deleted (" + lower + ")"}, []string{"no longer declares"}},
		{"both at once: each with its advice", "update", []Change{
			{Resource: "zeta", Action: Delete, Protection: protection.Protected},
			{Resource: "alpha", Action: Replace, Protection: protection.Protected},
			{Resource: "mid", Action: Delete, Protection: protection.Protected},
		}, []string{"mid", "zeta"}, []string{
			"update refused: it would delete protected resource(s) alpha; nothing was deleted (" + lower + ")",
			"update refused: it would delete protected resource(s) mid, zeta; nothing was deleted. " + release,
		}, nil},
		{"teardown: every record is a delete, declared or not", "teardown", []Change{
			{Resource: "db", Action: Delete, Protection: protection.Protected},
		}, nil, []string{"teardown refused: it would delete protected resource(s) db; nothing was deleted (" + lower + ")"}, []string{"no longer declares"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := (&Plan{Spec: "shop.yaml", Changes: tt.changes}).Check(tt.op)
			var re *RefusedError
			if !errors.As(err, &re) {
				t.Fatalf("Check = %v (%T), want *RefusedError", err, err)
			}
			if diff := cmp.Diff(tt.undeclared, re.Undeclared); diff != "" {
				t.Errorf("Undeclared (-want +got):\n%s", diff)
			}
			msg, at := err.Error(), 0
			for _, w := range tt.want {
				i := strings.Index(msg[at:], w)
				if i < 0 {
					t.Fatalf("message\n%s\nlacks (after byte %d)\n%s", msg, at, w)
				}
				at += i + len(w)
			}
			for _, n := range tt.not {
				if strings.Contains(msg, n) {
					t.Errorf("message\n%s\nsays %q", msg, n)
				}
			}
		})
	}
}

// A teardown's refusal tells apart what its spec still declares (lower the
// level there) from what it does not, whose way to be kept is `state
// forget` alone: a teardown follows no removed: entry.
func TestForTeardownRefusedAdvice(t *testing.T) {
	sp := parse(t, "  - {name: kept, type: network, protection: protected}\n")
	s := st(res("kept", "network", "mock", "protected", nil), res("orphan", "s3_bucket", "mock", "protected", nil), res("e", "network", "mock", "", nil))
	sp.File = "shop.yaml" // named in the advice
	p := ForTeardown(sp, s)
	var re *RefusedError
	if err := p.Check("teardown"); !errors.As(err, &re) {
		t.Fatalf("Check = %v, want a refusal", err)
	}
	if !cmp.Equal(re.Resources, []string{"kept", "orphan"}) || !cmp.Equal(re.Undeclared, []string{"orphan"}) {
		t.Fatalf("Resources %v, Undeclared %v: want [kept orphan], [orphan]", re.Resources, re.Undeclared)
	}
	msg := re.Error()
	for _, w := range []string{
		"teardown refused: it would delete protected resource(s) kept; nothing was deleted (lower their protection in the spec and apply first)",
		"teardown refused: it would delete protected resource(s) orphan; nothing was deleted. The spec no longer declares them: to keep one and let the stack forget it, run `bulwark state forget shop.yaml NAME`; to delete one, declare it again at a lower protection and apply first",
	} {
		if !strings.Contains(msg, w) {
			t.Errorf("message\n%s\nlacks\n%s", msg, w)
		}
	}
	if strings.Contains(msg, "removed:") {
		t.Errorf("a teardown's advice names removed:, which it does not follow:\n%s", msg)
	}
	// Without a spec nothing is said to be undeclared.
	if err := ForTeardown(nil, s).Check("teardown"); !errors.As(err, &re) || re.Undeclared != nil {
		t.Errorf("without a spec: %v, Undeclared %v", err, re.Undeclared)
	}
}

// End to end through ForApply: a spec that drops a protected resource, or
// replaces one, is refused as a whole; a durable one is not.
func TestForApplyCheck(t *testing.T) {
	tests := []struct {
		name      string
		resources string
		state     *state.State
		refused   []string
	}{
		{"protected resource removed from the spec", "  - {name: a, type: network}\n",
			st(res("a", "network", "mock", "ephemeral", nil), res("vault", "s3_bucket", "mock", "protected", nil)), []string{"vault"}},
		{"durable resource removed from the spec", "  - {name: a, type: network}\n",
			st(res("a", "network", "mock", "ephemeral", nil), res("store", "s3_bucket", "mock", "durable", nil)), nil},
		{"protected resource's type changed", "  - {name: vault, type: network, protection: protected}\n",
			st(res("vault", "s3_bucket", "mock", "protected", nil)), []string{"vault"}},
		{"protection lowered alone is an update: allowed", "  - {name: vault, type: s3_bucket}\n",
			st(res("vault", "s3_bucket", "mock", "protected", nil)), nil},
		{"raised to protected with a force_new change", "  - {name: b, type: s3_bucket, protection: protected, config: {zone: b}}\n",
			st(res("b", "s3_bucket", "mock", "ephemeral", map[string]any{"zone": "a"})), []string{"b"}},
		{"two refusals at once", "  []\n",
			st(res("v2", "s3_bucket", "mock", "protected", nil), res("v1", "network", "mock", "protected", nil), res("e", "network", "mock", "", nil)), []string{"v1", "v2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ForApply(parse(t, tt.resources), tt.state, schemas).Check("apply")
			var re *RefusedError
			if tt.refused == nil {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !errors.As(err, &re) {
				t.Fatalf("Check = %v, want refusal of %v", err, tt.refused)
			}
			if diff := cmp.Diff(tt.refused, re.Resources); diff != "" {
				t.Errorf("refused (-want +got):\n%s", diff)
			}
		})
	}
}

func TestForTeardown(t *testing.T) {
	sp := parse(t, "  - {name: a, type: network, protection: durable}\n  - {name: b, type: network, protection: protected}\n  - {name: c, type: network}\n")
	s := st(
		res("c", "network", "mock", "protected", map[string]any{"size": 1.0}), // recorded higher than the spec
		res("b", "network", "mock", "ephemeral", nil),                         // spec higher than recorded
		res("a", "network", "mock", "durable", nil),
		res("orphan", "s3_bucket", "other", "ephemeral", nil), // in the state only
		res("weird", "network", "mock", "bogus", nil),         // unknown recorded level
	)
	tests := []struct {
		name    string
		sp      *spec.Spec
		want    []summary
		refused []string
	}{
		{"with spec", sp, []summary{
			{"a", Delete, protection.Durable, nil},
			{"b", Delete, protection.Protected, nil},
			{"c", Delete, protection.Protected, nil},
			{"orphan", Delete, protection.Ephemeral, nil},
			{"weird", Delete, protection.Protected, nil},
		}, []string{"b", "c", "weird"}},
		{"without spec: the state alone", nil, []summary{
			{"a", Delete, protection.Durable, nil},
			{"b", Delete, protection.Ephemeral, nil},
			{"c", Delete, protection.Protected, nil},
			{"orphan", Delete, protection.Ephemeral, nil},
			{"weird", Delete, protection.Protected, nil},
		}, []string{"c", "weird"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := ForTeardown(tt.sp, s)
			if diff := cmp.Diff(tt.want, summarize(p), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
			c, _ := p.Change("orphan")
			if c.Type != "s3_bucket" || c.Provider != "other" || c.After != nil {
				t.Errorf("orphan change %+v", c)
			}
			if c, _ := p.Change("c"); !cmp.Equal(c.Before, map[string]any{"size": 1.0}) {
				t.Errorf("c.Before = %v", c.Before)
			}
			var re *RefusedError
			if err := p.Check("teardown"); !errors.As(err, &re) || !cmp.Equal(re.Resources, tt.refused) || re.Op != "teardown" {
				t.Errorf("Check = %v, want teardown refusal of %v", err, tt.refused)
			}
		})
	}
	// Only durable and ephemeral resources: teardown is allowed.
	ok := st(res("a", "network", "mock", "durable", nil), res("b", "network", "mock", "ephemeral", nil))
	if err := ForTeardown(nil, ok).Check("teardown"); err != nil {
		t.Errorf("teardown of durable+ephemeral refused: %v", err)
	}
	if p := ForTeardown(sp, st()); len(p.Changes) != 0 {
		t.Errorf("teardown of an empty state plans %v", p.Changes)
	}
}

func TestChangedKeys(t *testing.T) {
	tests := []struct {
		name          string
		before, after map[string]any
		want          []string
	}{
		{"both nil", nil, nil, nil},
		{"nil and empty", nil, map[string]any{}, nil},
		{"same", map[string]any{"a": 1.0, "b": "x"}, map[string]any{"b": "x", "a": 1.0}, nil},
		{"2 vs 2.0", map[string]any{"n": 2}, map[string]any{"n": 2.0}, nil},
		{"added", nil, map[string]any{"a": 1.0}, []string{"a"}},
		{"removed", map[string]any{"a": 1.0}, nil, []string{"a"}},
		{"set to null counts", map[string]any{"a": 1.0}, map[string]any{"a": nil}, []string{"a"}},
		{"null vs absent counts", map[string]any{}, map[string]any{"a": nil}, []string{"a"}},
		{"changed, added, removed, sorted", map[string]any{"z": 1.0, "m": "x", "keep": true}, map[string]any{"m": "y", "a": 1.0, "keep": true}, []string{"a", "m", "z"}},
		{"nested", map[string]any{"t": map[string]any{"k": "v"}}, map[string]any{"t": map[string]any{"k": "w"}}, []string{"t"}},
		{"list order matters", map[string]any{"l": []any{"a", "b"}}, map[string]any{"l": []any{"b", "a"}}, []string{"l"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, ChangedKeys(tt.before, tt.after), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("ChangedKeys (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.want, ChangedKeys(tt.after, tt.before), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("ChangedKeys is not symmetric (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDrift(t *testing.T) {
	tests := []struct {
		name           string
		want, observed map[string]any
		drift          []string
	}{
		{"nothing wanted", nil, map[string]any{"extra": 1.0}, nil},
		{"matches, extra observed attributes ignored", map[string]any{"size": 2}, map[string]any{"size": 2.0, "arn": "x"}, nil},
		{"changed", map[string]any{"size": 2.0}, map[string]any{"size": 3.0}, []string{"size"}},
		{"missing", map[string]any{"size": 2.0, "zone": "a"}, map[string]any{"zone": "a"}, []string{"size"}},
		{"nothing observed", map[string]any{"b": 1.0, "a": 1.0}, nil, []string{"a", "b"}},
		{"wanted null, observed absent", map[string]any{"n": nil}, map[string]any{}, []string{"n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.drift, Drift(tt.want, tt.observed), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Drift (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEqual(t *testing.T) {
	tests := []struct {
		name string
		a, b any
		want bool
	}{
		{"2 and 2.0", 2, 2.0, true},
		{"int64 and float64", int64(7), 7.0, true},
		{"float32 and float64", float32(0.5), 0.5, true},
		{"uint and float", uint8(3), 3.0, true},
		{"2 and 3", 2, 3.0, false},
		{"number and string", 2.0, "2", false},
		{"bool and string", true, "true", false},
		{"nil and nil", nil, nil, true},
		{"nil and empty string", nil, "", false},
		{"nil and empty map", nil, map[string]any{}, false},
		{"empty list and nil", []any{}, nil, false},
		{"nested numbers", map[string]any{"l": []any{1, map[string]any{"x": 2}}}, map[string]any{"l": []any{1.0, map[string]any{"x": 2.0}}}, true},
		{"typed slices and maps", []string{"a"}, []any{"a"}, true},
		{"typed map", map[string]int{"a": 1}, map[string]any{"a": 1.0}, true},
		{"nested differs", map[string]any{"l": []any{1}}, map[string]any{"l": []any{2}}, false},
		{"list order", []any{1, 2}, []any{2, 1}, false},
		{"strings", "a", "a", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Equal(tt.a, tt.b); got != tt.want {
				t.Errorf("Equal(%#v, %#v) = %v, want %v", tt.a, tt.b, got, tt.want)
			}
			if got := Equal(tt.b, tt.a); got != tt.want {
				t.Errorf("Equal is not symmetric for %#v, %#v", tt.a, tt.b)
			}
		})
	}
}
