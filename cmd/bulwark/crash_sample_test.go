package main

import (
	"fmt"
	mrand "math/rand"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestCrashKindSample: the file backend's harness kills, by default, at the
// first boundary of every kind its tally counted, armed at that kind (so
// that parallel steps in another order cannot turn it into a kill at
// another kind), the last of all and crashKindExtra more that the seed
// picks, by index; the same seed picks the same, another seed (mostly)
// others.
func TestCrashKindSample(t *testing.T) {
	tallied := []string{"op/running/-/-", "step/started/execute/create", "step/ok/execute/create",
		"step/started/execute/update", "step/ok/execute/update", "step/started/execute/create", "step/ok/execute/create",
		"step/started/execute/meta:backup", "step/ok/execute/meta:backup", "step/started/execute/delete", "step/ok/execute/delete", "op/succeeded/-/-"}
	picks := crashKindSample("journal", tallied, mrand.New(mrand.NewSource(1)))
	want := []crashTarget{{"op/running/-/-", 1}, {"step/started/execute/create", 1}, {"step/ok/execute/create", 1},
		{"step/started/execute/meta:backup", 1}, {"step/ok/execute/meta:backup", 1},
		{"op/succeeded/-/-", 1}} // the last, and the first of its kind
	for _, w := range want {
		if !slices.Contains(picks, w) {
			t.Errorf("picks %v lack %v", picks, w)
		}
	}
	var extra []crashTarget
	for _, p := range picks {
		if !slices.Contains(want, p) {
			extra = append(extra, p)
		}
	}
	if len(picks) != len(want)+crashKindExtra || len(extra) != crashKindExtra {
		t.Errorf("picks %v: want %d, %d of them drawn", picks, len(want)+crashKindExtra, crashKindExtra)
	}
	for _, p := range extra {
		// Drawn by index, among the boundaries not picked otherwise: the
		// update's (folded into the create's kind) and the delete's.
		if p.kind != "" || !slices.Contains([]int{4, 5, 6, 7, 10, 11}, p.n) {
			t.Errorf("drew %v, want an index of a boundary not otherwise picked", p)
		}
	}
	if again := crashKindSample("journal", tallied, mrand.New(mrand.NewSource(1))); !slices.Equal(again, picks) {
		t.Errorf("the same seed picked %v, then %v", picks, again)
	}
	differ := false
	for seed := int64(2); seed < 20 && !differ; seed++ {
		differ = !slices.Equal(crashKindSample("journal", tallied, mrand.New(mrand.NewSource(seed))), picks)
	}
	if !differ {
		t.Errorf("19 seeds all picked %v: the sample does not rotate", picks)
	}
	// The update scenario's provider calls, in one run's order: each kind
	// armed at itself, the last (a delete) by index.
	got := crashKindSample("provider", []string{"create", "update", "create", "delete", "delete"}, mrand.New(mrand.NewSource(1)))
	if w := []crashTarget{{"create", 1}, {"update", 1}, {"", 3}, {"delete", 1}, {"", 5}}; !slices.Equal(got, w) {
		t.Errorf("provider: picked %v, want %v (in the tally's order)", got, w)
	}
	if got := crashKindSample("provider", []string{"create", "create"}, mrand.New(mrand.NewSource(1))); !slices.Equal(got, []crashTarget{{"create", 1}, {"", 2}}) {
		t.Errorf("two boundaries: picked %v, want both", got)
	}
	if got := crashKindSample("provider", nil, mrand.New(mrand.NewSource(1))); len(got) != 0 {
		t.Errorf("no boundaries: picked %v", got)
	}
}

// TestCrashKilledAt: the pass a kill followed is the Nth of the point's
// passes, or the Nth of its kind when armed at one, however many of other
// kinds came before it (as parallel steps in another order than the
// tally's make them come).
func TestCrashKilledAt(t *testing.T) {
	run := []string{"create", "create", "delete", "update"}
	for _, c := range []struct {
		at   crashTarget
		want int
	}{
		{crashTarget{"", 2}, 1},
		{crashTarget{"update", 1}, 3},
		{crashTarget{"create", 2}, 1},
		{crashTarget{"update", 2}, -1},
		{crashTarget{"", 5}, -1},
	} {
		if got := crashKilledAt(run, c.at); got != c.want {
			t.Errorf("crashKilledAt(%v, %v) = %d, want %d", run, c.at, got, c.want)
		}
	}
	if got := (crashTarget{"step/ok/execute/meta:backup", 2}).failpoint("journal"); got != "journal:step/ok/execute/meta:backup:2" {
		t.Errorf("failpoint %s", got)
	}
	if got := (crashTarget{"", 3}).failpoint("provider"); got != "provider:3" {
		t.Errorf("failpoint %s", got)
	}
}

// TestCrashKindOf: a journal record's kind drops its resource step's
// action (the provider point's kinds tell the calls apart) and keeps the
// rest; the other points' kinds are kept.
func TestCrashKindOf(t *testing.T) {
	for _, c := range []struct{ point, in, want string }{
		{"journal", "step/started/execute/create", "step/started/execute/resource"},
		{"journal", "step/ok/verify/delete/set-aside/queued", "step/ok/verify/resource/set-aside/queued"},
		{"journal", "step/ok/execute/meta:backup", "step/ok/execute/meta"},
		{"journal", "op/running/-/-", "op/running/-/-"},
		{"provider", "create", "create"},
		{"state", "commit", "commit"},
	} {
		if got := crashKindOf(c.point, c.in); got != c.want {
			t.Errorf("crashKindOf(%s, %s) = %s, want %s", c.point, c.in, got, c.want)
		}
	}
}

// recordingT is a crashT whose Errorf is recorded, not reported: for tests
// of the harness's own checks, which must fail on what they are shown.
type recordingT struct {
	*testing.T
	errs []string
}

func (r *recordingT) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

// TestCrashAgreementCatchesADoubleCreate: a resource made twice (a second
// Create under another key, as a resume that lost the first one's outcome
// would make it) is two objects of one name in the mock's world, one of
// them recorded; the check every crash iteration ends with
// (checkEnd's checkAgreement, on the world as the mock's file and log
// hold it) fails naming it, and passes on the same world without the
// second object.
func TestCrashAgreementCatchesADoubleCreate(t *testing.T) {
	dir := t.TempDir()
	world := `{"version":1,"resources":[{"id":"net-1","type":"network","name":"network","idempotency_key":"k1"}]}`
	log := `{"put":{"id":"cache-1","type":"generic","name":"cache","idempotency_key":"k2"}}` + "\n"
	if err := os.WriteFile(filepath.Join(dir, "world.json"), []byte(world), 0o600); err != nil {
		t.Fatal(err)
	}
	st := crashState{Resources: map[string]crashStateRes{
		"network": {Name: "network", Type: "network", ID: "net-1"},
		"cache":   {Name: "cache", Type: "generic", ID: "cache-1"},
	}}
	for _, c := range []struct {
		name, log string
		want      string // "" : no complaint
	}{
		{"once", log, ""},
		{"twice", log + `{"put":{"id":"cache-2","type":"generic","name":"cache","idempotency_key":"k3"}}` + "\n", "resource cache exists 2 times"},
	} {
		if err := os.WriteFile(filepath.Join(dir, "world.log"), []byte(c.log), 0o600); err != nil {
			t.Fatal(err)
		}
		rt := &recordingT{T: t}
		e := &crashEnv{t: rt}
		e.checkAgreement(st, mockWorldAt(rt, dir))
		switch {
		case c.want == "" && len(rt.errs) > 0:
			t.Errorf("%s: complained: %v", c.name, rt.errs)
		case c.want != "" && !slices.ContainsFunc(rt.errs, func(s string) bool { return strings.Contains(s, c.want) }):
			t.Errorf("%s: want a complaint with %q, got %v", c.name, c.want, rt.errs)
		}
	}
}
