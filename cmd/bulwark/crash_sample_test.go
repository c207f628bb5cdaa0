package main

import (
	mrand "math/rand"
	"slices"
	"testing"
)

// TestCrashKindSample: the file backend's harness kills, by default, at the
// first boundary of every kind its tally counted, the first and the last
// of all, and crashKindExtra more that the seed picks; the same seed picks
// the same, another seed (mostly) others.
func TestCrashKindSample(t *testing.T) {
	started, ok := "step/started/execute/resource", "step/ok/execute/resource"
	kinds := []string{"op/running/-/-", started, ok, started, ok, started, ok, started, ok, started, ok, "op/succeeded/-/-"}
	picks := crashKindSample(kinds, mrand.New(mrand.NewSource(1)))
	for _, n := range []int{1, 2, 3, 12} {
		if !slices.Contains(picks, n) {
			t.Errorf("picks %v lack %d", picks, n)
		}
	}
	if len(picks) != 4+crashKindExtra || !slices.IsSorted(picks) || len(slices.Compact(slices.Clone(picks))) != len(picks) {
		t.Errorf("picks %v: want %d distinct, sorted", picks, 4+crashKindExtra)
	}
	if again := crashKindSample(kinds, mrand.New(mrand.NewSource(1))); !slices.Equal(again, picks) {
		t.Errorf("the same seed picked %v, then %v", picks, again)
	}
	differ := false
	for seed := int64(2); seed < 20 && !differ; seed++ {
		differ = !slices.Equal(crashKindSample(kinds, mrand.New(mrand.NewSource(seed))), picks)
	}
	if !differ {
		t.Errorf("19 seeds all picked %v: the sample does not rotate", picks)
	}
	if got := crashKindSample([]string{"a", "a"}, mrand.New(mrand.NewSource(1))); !slices.Equal(got, []int{1, 2}) {
		t.Errorf("two boundaries: picked %v, want both", got)
	}
	if got := crashKindSample(nil, mrand.New(mrand.NewSource(1))); len(got) != 0 {
		t.Errorf("no boundaries: picked %v", got)
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
