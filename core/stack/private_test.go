package stack_test

import (
	"strings"
	"testing"
)

// What a provider's Create returns as private data is stored with the
// resource (never in clear) and handed back on every later call about it:
// the Read by id of the next plan, the Update, the Delete of a teardown.
func TestPrivateDataTravelsWithTheResource(t *testing.T) {
	e := newEnv(t)
	e.mustApply(t, mkSpec(t, res{name: "net", typ: "network", size: 1.0}))
	st := e.state(t, "s")
	r := st.Resources["net"]
	if r == nil {
		t.Fatal("net is not recorded")
	}
	want := "made " + r.ID + " under " + r.IdempotencyKey
	if r.Private.IsZero() || strings.Contains(r.Private.Text(), r.ID) {
		t.Fatalf("the state records private data %q: want it, sealed or encoded", r.Private)
	}

	e.mustApply(t, mkSpec(t, res{name: "net", typ: "network", size: 2.0}))
	if got := e.w.ReadPrivate("net"); got != want {
		t.Errorf("the plan's Read by id carried private data %q, want %q", got, want)
	}
	ups := e.w.Updates()
	if len(ups) != 1 || ups[0].Private != want {
		t.Fatalf("updates %+v: want one carrying %q", ups, want)
	}

	if _, err := e.teardown(mkSpec(t, res{name: "net", typ: "network", size: 2.0})); err != nil {
		t.Fatal(err)
	}
	dels := e.w.Deletes()
	if len(dels) != 1 || dels[0].Private != want {
		t.Fatalf("deletes %+v: want one carrying %q", dels, want)
	}
}
