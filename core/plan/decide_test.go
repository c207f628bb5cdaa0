package plan

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/bulwark-iac/bulwark/core/protection"
	"github.com/bulwark-iac/bulwark/core/providers"
	"github.com/bulwark-iac/bulwark/core/spec"
	"github.com/bulwark-iac/bulwark/core/state"
)

var me = Identity{Stack: "demo", Lineage: "01LINEAGE"}

func TestKeys(t *testing.T) {
	k := me.Key("01REC")
	if k != "bulwark:demo:01LINEAGE:01REC" {
		t.Fatalf("Key = %q", k)
	}
	if o, ok := ParseKey(k); !ok || o != (KeyOwner{"demo", "01LINEAGE", "01REC"}) {
		t.Errorf("ParseKey(%q) = %+v, %v", k, o, ok)
	}
	for _, bad := range []string{"", "01REC", "bulwark:demo:01LINEAGE", "bulwark::L:R", "bulwark:a:b:c:d", "other:demo:L:R"} {
		if _, ok := ParseKey(bad); ok {
			t.Errorf("ParseKey(%q) accepted", bad)
		}
	}
	if !me.Issued(k) || me.Issued("bulwark:demo:OTHER:01REC") || me.Issued("bulwark:beta:01LINEAGE:01REC") || me.Issued("01REC") {
		t.Error("Issued recognises the wrong keys")
	}
	if c := me.ClaimKey("op_01X"); !IsClaim(c) || !me.Issued(c) || IsClaim(k) || IsClaim("import-01X") {
		t.Errorf("ClaimKey %q / IsClaim disagree", c)
	}
	if (Identity{Stack: "demo"}).Key("01REC") != "01REC" {
		t.Error("a stack without a lineage issues bare ids")
	}
}

// TestDecide is the one decision, case by case: ownership, then what the
// resource needs.
func TestDecide(t *testing.T) {
	sp := parse(t, `  - {name: db, type: s3_bucket, protection: protected, config: {zone: z1, size: 1}, depends_on: [a, b]}
  - {name: a, type: network}
  - {name: b, type: network}
  - {name: imp, type: network, import: net-7, config: {size: 2}}
`)
	db, _ := sp.Resource("db")
	imp, _ := sp.Resource("imp")
	rec := func(mod func(*state.Resource)) *state.Resource {
		r := res("db", "s3_bucket", "mock", "protected", map[string]any{"zone": "z1", "size": 1.0}, "a", "b")
		r.IdempotencyKey = me.Key("01A")
		if mod != nil {
			mod(r)
		}
		return r
	}
	found := func(key string, attrs map[string]any) *Observation {
		return &Observation{Exists: true, ID: "id-db", Key: key, Attributes: attrs}
	}
	same := map[string]any{"zone": "z1", "size": 1.0}
	tests := []struct {
		name      string
		in        Input
		action    Action
		ownership Ownership
		reason    string // part of Reason
	}{
		{"nothing recorded, nothing found", Input{Spec: db, Observed: &Observation{}}, Create, Absent, ""},
		{"nothing recorded, not read", Input{Spec: db}, Create, Unknown, ""},
		{"found by identity with no key", Input{Spec: db, Observed: found("", same), KeysReported: true}, Conflict, Foreign, "not made by bulwark"},
		{"found, provider reports no keys", Input{Spec: db, Observed: found("", same)}, Conflict, Foreign, "does not report owners"},
		{"found under another stack's key", Input{Spec: db, Observed: found("bulwark:alpha:L1:01X", same), KeysReported: true}, Conflict, Foreign, "belongs to stack alpha"},
		{"found under another lineage", Input{Spec: db, Observed: found("bulwark:demo:L1:01X", same), KeysReported: true}, Conflict, Foreign, "another lineage of stack demo"},
		{"found under a bare old key", Input{Spec: db, Observed: found("01X", same), KeysReported: true}, Conflict, Foreign, "names no stack"},
		{"found under our key: a crash", Input{Spec: db, Observed: found(me.Key("01B"), same), KeysReported: true}, Update, Recovered, ""},
		{"found, recorded under another name", Input{Spec: db, Observed: found(me.Key("01B"), same), RecordedAs: "olddb"}, Conflict, Foreign, "recorded in this stack as olddb"},
		{"recorded and the same", Input{Spec: db, Recorded: rec(nil), Observed: found(me.Key("01A"), same)}, NoOp, Owned, ""},
		{"recorded, legacy without key", Input{Spec: db, Recorded: rec(func(r *state.Resource) { r.IdempotencyKey = "" }), Observed: found("", same)}, NoOp, Owned, ""},
		{"recorded, depends_on reordered", Input{Spec: db, Recorded: rec(func(r *state.Resource) { r.DependsOn = []string{"b", "a"} }), Observed: found(me.Key("01A"), same)}, NoOp, Owned, ""},
		{"recorded, one dependency fewer", Input{Spec: db, Recorded: rec(func(r *state.Resource) { r.DependsOn = []string{"a"} }), Observed: found(me.Key("01A"), same)}, Update, Owned, ""},
		{"recorded, another key there now", Input{Spec: db, Recorded: rec(nil), Observed: found("bulwark:beta:L:01C", same)}, Conflict, Foreign, "what exists there now carries"},
		{"recorded, made again out of band with no key", Input{Spec: db, Recorded: rec(nil), Observed: found("", same), KeysReported: true}, Conflict, Foreign, "now carries no key"},
		{"recorded, provider reports no keys", Input{Spec: db, Recorded: rec(nil), Observed: found("", same)}, NoOp, Owned, ""},
		{"recorded, our claim released", Input{Spec: db, Recorded: rec(nil), Observed: found(providers.ReleasedKey(me.Key("01A")), same), KeysReported: true}, Conflict, Foreign, "now carries released:"},
		{"found, released by another stack", Input{Spec: db, Observed: found(providers.ReleasedKey("bulwark:alpha:L1:01X"), same), KeysReported: true}, Conflict, Foreign, "released by stack alpha"},
		{"recorded, gone", Input{Spec: db, Recorded: rec(nil), Observed: &Observation{}}, Create, Gone, ""},
		{"recorded, size drifted", Input{Spec: db, Recorded: rec(nil), Observed: found(me.Key("01A"), map[string]any{"zone": "z1", "size": 5.0}), Schema: schemas["mock"]}, Update, Owned, ""},
		{"recorded protected, zone drifted: refused replace", Input{Spec: db, Recorded: rec(nil), Observed: found(me.Key("01A"), map[string]any{"zone": "z9", "size": 1.0}), Schema: schemas["mock"]}, Replace, Owned, ""},
		{"import found", Input{Spec: imp, Observed: &Observation{Exists: true, ID: "net-7", Attributes: map[string]any{"size": 2.0}}}, Import, Importing, ""},
		{"import not found", Input{Spec: imp, Observed: &Observation{}}, Conflict, Foreign, "was not found"},
		{"import already recorded as another id", Input{Spec: imp, Recorded: res("imp", "network", "mock", "ephemeral", nil)}, Conflict, Foreign, "records it as id-imp"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.in.Identity = me
			c := Decide(tt.in)
			if c.Action != tt.action || c.Ownership != tt.ownership || !strings.Contains(c.Reason, tt.reason) {
				t.Errorf("Decide = %s/%s %q; want %s/%s %q", c.Action, c.Ownership, c.Reason, tt.action, tt.ownership, tt.reason)
			}
		})
	}
}

// A protected resource whose force_new attribute drifted out of band is a
// replace the ladder refuses, whoever asks: the plan's Check is the apply's.
func TestDecideProtectedDriftIsRefused(t *testing.T) {
	sp := parse(t, "  - {name: db, type: s3_bucket, protection: protected, config: {zone: z1}}\n")
	s := st(res("db", "s3_bucket", "mock", "protected", map[string]any{"zone": "z1"}))
	obs := map[string]*Observation{"db": {Exists: true, ID: "id-db", Attributes: map[string]any{"zone": "z2"}}}
	p := Make(sp, s, Env{Schemas: schemas, Identity: me}, obs)
	var re *RefusedError
	if err := p.Check("apply"); !errors.As(err, &re) || re.Resources[0] != "db" {
		t.Fatalf("Check = %v, want db refused", err)
	}
	if c, _ := p.Change("db"); c.Action != Replace || len(c.ForceNew) != 1 || c.ForceNew[0] != "zone" {
		t.Errorf("change = %+v", c)
	}
}

// Removed from the spec: deleted when ours, nothing when gone, a conflict
// when what the recorded id holds is another's.
func TestDecideRemoved(t *testing.T) {
	cur := res("old", "network", "mock", "ephemeral", nil)
	cur.IdempotencyKey = me.Key("01A")
	for _, tt := range []struct {
		obs    *Observation
		action Action
	}{
		{nil, Delete},
		{&Observation{Exists: true, ID: "id-old", Key: me.Key("01A")}, Delete},
		{&Observation{Exists: true, ID: "id-old"}, Delete},
		{&Observation{}, NoOp},
		{&Observation{Exists: true, ID: "id-old", Key: "bulwark:beta:L:01Z"}, Conflict},
	} {
		if c := Decide(Input{Recorded: cur, Observed: tt.obs, Identity: me}); c.Action != tt.action {
			t.Errorf("observed %+v: %s, want %s", tt.obs, c.Action, tt.action)
		}
	}
	// From a provider that reports keys, what carries none at the recorded
	// id was made again out of band: the teardown would refuse it, so the
	// plan says so too.
	for _, tt := range []struct {
		obs    *Observation
		action Action
	}{
		{&Observation{Exists: true, ID: "id-old", Key: me.Key("01A")}, Delete},
		{&Observation{Exists: true, ID: "id-old"}, Conflict},
		{&Observation{}, NoOp},
	} {
		if c := Decide(Input{Recorded: cur, Observed: tt.obs, Identity: me, KeysReported: true}); c.Action != tt.action {
			t.Errorf("keys reported, observed %+v: %s, want %s", tt.obs, c.Action, tt.action)
		}
	}
}

// TestDecideRetention: the ladder's rollback column for what a rollback's
// target revision lacks (durable and protected are retained, ephemeral is
// deleted), and a retained resource: kept by every apply that lacks it,
// decided as any resource of a spec that has it, never refused or deleted.
func TestDecideRetention(t *testing.T) {
	sp := parse(t, "  - {name: d, type: s3_bucket, protection: durable}\n")
	d, _ := sp.Resource("d")
	rec := func(level, retainedBy string) *state.Resource {
		r := res("d", "s3_bucket", "mock", level, nil)
		r.IdempotencyKey, r.RetainedBy = me.Key("01A"), retainedBy
		return r
	}
	here := &Observation{Exists: true, ID: "id-d", Key: me.Key("01A")}
	for _, tt := range []struct {
		name     string
		in       Input
		action   Action
		retained bool
	}{
		{"apply, gone from the spec, durable: deleted", Input{Recorded: rec("durable", ""), Observed: here}, Delete, false},
		{"rollback lacks it, durable: retained", Input{Recorded: rec("durable", ""), Observed: here, Rollback: true}, Retain, false},
		{"rollback lacks it, protected: retained, not refused", Input{Recorded: rec("protected", ""), Observed: here, Rollback: true}, Retain, false},
		{"rollback lacks it, not read: retained", Input{Recorded: rec("durable", ""), Rollback: true}, Retain, false},
		{"rollback lacks it, ephemeral: deleted", Input{Recorded: rec("ephemeral", ""), Observed: here, Rollback: true}, Delete, false},
		{"rollback lacks it, already gone: nothing", Input{Recorded: rec("durable", ""), Observed: &Observation{}, Rollback: true}, NoOp, false},
		{"retained, apply without it: kept", Input{Recorded: rec("durable", "op_R"), Observed: here}, NoOp, true},
		{"retained protected, apply without it: kept, not refused", Input{Recorded: rec("protected", "op_R"), Observed: here}, NoOp, true},
		{"retained, not read: kept", Input{Recorded: rec("durable", "op_R")}, NoOp, true},
		{"retained, rollback without it: kept", Input{Recorded: rec("durable", "op_R"), Observed: here, Rollback: true}, NoOp, true},
		{"retained, another key there now: a conflict, as any record", Input{Recorded: rec("durable", "op_R"), Observed: &Observation{Exists: true, ID: "id-d", Key: "bulwark:beta:L:01Z"}}, Conflict, false},
		{"retained, in the spec again: an ordinary resource of it", Input{Spec: d, Recorded: rec("durable", "op_R"), Observed: here}, NoOp, false},
		{"retained, in the spec again, not read: an ordinary resource of it", Input{Spec: d, Recorded: rec("durable", "op_R")}, NoOp, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.in.Identity = me
			c := Decide(tt.in)
			if c.Action != tt.action || c.Retained != tt.retained {
				t.Fatalf("Decide = %s retained=%v, want %s retained=%v", c.Action, c.Retained, tt.action, tt.retained)
			}
			if err := (&Plan{Changes: []Change{c}}).Check("rollback"); err != nil && c.Action != Conflict {
				t.Errorf("Check refused: %v", err)
			}
		})
	}
}

func TestConflictErrorAdvice(t *testing.T) {
	sp := parse(t, "  - {name: db, type: s3_bucket}\n")
	p := Make(sp, st(), Env{Identity: me, KeysReported: map[string]bool{"mock": true}},
		map[string]*Observation{"db": {Exists: true, ID: "bk-1", Key: "bulwark:alpha:L:01X"}})
	var ce *ConflictError
	err := p.Check("apply")
	if !errors.As(err, &ce) {
		t.Fatalf("Check = %v", err)
	}
	for _, want := range []string{"apply refused", "db: s3_bucket db already exists (id bk-1) and belongs to stack alpha", "bulwark import stack.yaml NAME ID", "import: ID"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q lacks %q", err, want)
		}
	}
}

// TestUnknownIsAChange: a value known only after apply is a change of the
// attribute it is in: an update in place, a replace only when force_new.
func TestUnknownIsAChange(t *testing.T) {
	schema := &providers.GetSchemaResponse{ResourceTypes: []providers.ResourceType{{Name: "generic", Attributes: []providers.Attribute{
		{Name: "tags", Type: providers.TypeMap}, {Name: "zone", Type: providers.TypeString, ForceNew: true},
	}}}}
	cur := &state.Resource{Name: "sub", Type: "generic", Provider: "mock", ID: "s-1", Protection: protection.Ephemeral,
		Config: map[string]any{"tags": map[string]any{"net": "n-1"}, "zone": "in-n-1"}}
	obs := &Observation{Exists: true, ID: "s-1", Attributes: map[string]any{"tags": map[string]any{"net": "n-1"}, "zone": "in-n-1"}}
	cases := []struct {
		name     string
		cfg      map[string]any
		action   Action
		forceNew []string
	}{
		{"nothing unknown", map[string]any{"tags": map[string]any{"net": "n-1"}, "zone": "in-n-1"}, NoOp, nil},
		{"unknown inside a map", map[string]any{"tags": map[string]any{"net": AfterApply{}}, "zone": "in-n-1"}, Update, nil},
		{"unknown force_new", map[string]any{"tags": map[string]any{"net": "n-1"}, "zone": AfterApply{}}, Replace, []string{"zone"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := &spec.Resource{Name: "sub", Type: "generic", Provider: "mock", Protection: protection.Ephemeral, Config: c.cfg}
			for _, o := range []*Observation{obs, nil} {
				got := Decide(Input{Spec: r, Recorded: cur, Observed: o, Schema: schema})
				if got.Action != c.action || !reflect.DeepEqual(got.ForceNew, c.forceNew) {
					t.Errorf("observed=%v: %s %v, want %s %v", o != nil, got.Action, got.ForceNew, c.action, c.forceNew)
				}
			}
		})
	}
	if b, _ := json.Marshal(map[string]any{"zone": AfterApply{}}); string(b) != `{"zone":"(known after apply)"}` {
		t.Errorf("json %s", b)
	}
	if k := Known(map[string]any{"a": 1, "b": []any{AfterApply{}}}); len(k) != 1 || k["a"] != 1 {
		t.Errorf("Known = %v", k)
	}
}

// TestDecideReplaceOrder: the order of a replace comes from what the
// provider says of two instances at once (providers.Coexistence; nothing said:
// they cannot), and --replace makes a replace with no change; both are the
// one decision plan and apply share.
func TestDecideReplaceOrder(t *testing.T) {
	sp := parse(t, `  - {name: db, type: s3_bucket, protection: durable, config: {zone: z2, bucket: b1}}
  - {name: same, type: s3_bucket, config: {zone: z1, bucket: b1}}
  - {name: later, type: s3_bucket, config: {zone: z1, bucket: b2}}
`)
	db, _ := sp.Resource("db")
	same, _ := sp.Resource("same")
	later, _ := sp.Resource("later")
	later.Config["zone"] = AfterApply{}
	schema := func(c providers.Coexistence) *providers.GetSchemaResponse {
		return &providers.GetSchemaResponse{ResourceTypes: []providers.ResourceType{{Name: "s3_bucket", Coexistence: c,
			Attributes: []providers.Attribute{{Name: "zone", ForceNew: true}, {Name: "bucket", ForceNew: true}}}}}
	}
	byZone := schema(providers.Coexistence{WhenDiffers: []string{"zone"}})
	rec := func(name string) *state.Resource {
		r := res(name, "s3_bucket", "mock", "ephemeral", map[string]any{"zone": "z1", "bucket": "b1"})
		r.Attributes = map[string]any{"zone": "z1", "bucket": "b1", "arn": "x"}
		r.IdempotencyKey = me.Key("01A")
		return r
	}
	tests := []struct {
		name      string
		in        Input
		action    Action
		mode      ReplaceMode
		requested bool
		consent   bool // the ladder asks for --replace
	}{
		{"zone differs, type coexists by zone: create first", Input{Spec: db, Recorded: rec("db"), Schema: byZone}, Replace, CreateFirst, false, true},
		{"zone differs, --replace given: consented", Input{Spec: db, Recorded: rec("db"), Schema: byZone, Replace: true}, Replace, CreateFirst, true, false},
		{"provider says nothing: delete first", Input{Spec: db, Recorded: rec("db"), Schema: schema(providers.Coexistence{})}, Replace, DeleteFirst, false, true},
		{"coexists always", Input{Spec: db, Recorded: rec("db"), Schema: schema(providers.Coexistence{Always: true})}, Replace, CreateFirst, false, true},
		{"identity unchanged (bucket): delete first", Input{Spec: db, Recorded: rec("db"), Schema: schema(providers.Coexistence{WhenDiffers: []string{"bucket"}})}, Replace, DeleteFirst, false, true},
		{"no change, --replace: replaced, same zone: delete first", Input{Spec: same, Recorded: rec("same"), Schema: byZone, Replace: true}, Replace, DeleteFirst, true, false},
		{"no change, no --replace: nothing", Input{Spec: same, Recorded: rec("same"), Schema: byZone}, NoOp, "", false, false},
		{"identity known only after apply: delete first", Input{Spec: later, Recorded: rec("later"), Schema: byZone}, Replace, DeleteFirst, false, false},
		{"observed zone is what counts", Input{Spec: same, Recorded: rec("same"), Schema: byZone, Observed: &Observation{Exists: true, ID: "id-same", Key: me.Key("01A"), Attributes: map[string]any{"zone": "z0", "bucket": "b1"}}}, Replace, CreateFirst, false, false},
		{"--replace of what is not recorded: a create", Input{Spec: same, Schema: byZone, Replace: true}, Create, "", true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.in.Identity = me
			c := Decide(tt.in)
			if c.Action != tt.action || c.Mode != tt.mode || c.Requested != tt.requested {
				t.Fatalf("Decide = %s/%q requested %v; want %s/%q requested %v", c.Action, c.Mode, c.Requested, tt.action, tt.mode, tt.requested)
			}
			if c.NeedsConsent() != tt.consent {
				t.Errorf("NeedsConsent = %v, want %v (protection %s)", c.NeedsConsent(), tt.consent, c.Protection)
			}
		})
	}
}

// TestDecideRemovedGone: a recorded resource gone from the spec that its
// provider no longer finds. Its record is dropped (no change: nothing is
// left to delete), unless it is protected: dropping a protected record is
// refused whole like deleting it (RefusedError.Gone), as a teardown refuses
// it whether it exists or not, so an apply never drops one on its own. A
// rollback, which retains what it lacks, is not refused for it.
func TestDecideRemovedGone(t *testing.T) {
	rec := func(level string) *state.Resource {
		r := res("vault", "s3_bucket", "mock", level, nil)
		r.IdempotencyKey = me.Key("01A")
		return r
	}
	gone := &Observation{}
	for _, tt := range []struct {
		name    string
		in      Input
		action  Action
		op      string
		refused bool
	}{
		{"ephemeral: dropped", Input{Recorded: rec("ephemeral"), Observed: gone}, NoOp, "apply", false},
		{"durable: dropped", Input{Recorded: rec("durable"), Observed: gone}, NoOp, "apply", false},
		{"protected: refused", Input{Recorded: rec("protected"), Observed: gone}, Delete, "apply", true},
		{"protected, rollback: nothing, not refused", Input{Recorded: rec("protected"), Observed: gone, Rollback: true}, NoOp, "rollback", false},
		{"protected, not read: a delete, refused", Input{Recorded: rec("protected")}, Delete, "apply", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.in.Identity = me
			c := Decide(tt.in)
			if c.Action != tt.action {
				t.Fatalf("Decide = %s (%s), want %s", c.Action, c.Ownership, tt.action)
			}
			err := (&Plan{Spec: "s.yaml", Changes: []Change{c}}).Check(tt.op)
			var re *RefusedError
			if got := errors.As(err, &re); got != tt.refused {
				t.Fatalf("Check = %v, refused want %v", err, tt.refused)
			}
			if !tt.refused {
				return
			}
			if obs := tt.in.Observed; obs != nil && !obs.Exists {
				if len(re.Gone) != 1 || re.Gone[0] != "vault" || len(re.Resources) != 0 {
					t.Fatalf("RefusedError = %+v, want vault among Gone only", re)
				}
				for _, want := range []string{"apply refused", "protected resource(s) vault are no longer in the spec", "`bulwark state forget s.yaml vault`", "nothing was deleted"} {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("the refusal lacks %q:\n%v", want, err)
					}
				}
				return
			}
			if len(re.Resources) != 1 || len(re.Gone) != 0 {
				t.Fatalf("RefusedError = %+v, want vault among Resources only", re)
			}
		})
	}
}
