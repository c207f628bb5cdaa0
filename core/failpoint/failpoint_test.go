package failpoint

import (
	"os"
	"strings"
	"testing"
)

func TestParseAndFireOnNthHit(t *testing.T) {
	for _, bad := range []string{"journal", "journal:0", "journal:x", "disk:1"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) accepted", bad)
		}
	}
	s, err := Parse("state:3")
	if err != nil {
		t.Fatal(err)
	}
	fired := 0
	s.WithKill(func() { fired++ })
	for i := 0; i < 5; i++ {
		s.Hit("journal")
		s.Hit("state")
	}
	if fired != 1 {
		t.Fatalf("fired %d times, want once", fired)
	}
	var disarmed *Set
	disarmed.Hit("state") // nil-safe
}

// TestArmedAtAKindCountsOnlyThatKind: NAME:KIND:N fires at the Nth pass of
// NAME of that kind, however many passes of other kinds (or of none) come
// first; a kind may hold colons (the journal's "meta:" actions).
func TestArmedAtAKindCountsOnlyThatKind(t *testing.T) {
	for _, bad := range []string{"provider::1", "provider:update:", "provider:update:0", "provider:up date:1", "disk:update:1"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) accepted", bad)
		}
	}
	for _, tc := range []struct {
		spec   string
		passes []string // the provider passes' kinds, in order
		fireAt int      // the pass (1-based) the kill follows; 0: never
	}{
		{"provider:update:1", []string{"create", "create", "create", "update", "delete"}, 4},
		{"provider:create:2", []string{"create", "update", "delete", "create"}, 4},
		{"provider:update:2", []string{"create", "update", "delete"}, 0},
		{"provider:2", []string{"create", "update", "delete"}, 2},
		{"journal:step/started/execute/meta:move:1", []string{"step/started/execute/create", "step/started/execute/meta:move"}, 2},
	} {
		s, err := Parse(tc.spec)
		if err != nil {
			t.Fatalf("Parse(%q): %v", tc.spec, err)
		}
		point, _, _ := strings.Cut(tc.spec, ":")
		pass, firedAt := 0, 0
		s.WithKill(func() {
			if firedAt != 0 {
				t.Errorf("%s: fired again at pass %d", tc.spec, pass)
			}
			firedAt = pass
		})
		for _, k := range tc.passes {
			pass++
			s.Hit("state") // another point: never counted
			s.HitAt(point, k)
		}
		if firedAt != tc.fireAt {
			t.Errorf("%s over %v: fired after pass %d, want %d", tc.spec, tc.passes, firedAt, tc.fireAt)
		}
	}
}

func TestFromEnvTalliesEveryPoint(t *testing.T) {
	tally := t.TempDir() + "/tally"
	for _, tc := range []struct {
		name, armed string
		want        string // the tally after the passes below
		fired       int
	}{
		{name: "tally only", armed: "", want: "journal op/started\nstate\njournal\nprovider create\n", fired: 0},
		{name: "tally and armed", armed: "journal:2", want: "journal op/started\nstate\njournal\nprovider create\n", fired: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			os.Remove(tally)
			t.Setenv(EnvVar, tc.armed)
			t.Setenv(TallyEnvVar, tally)
			s, err := FromEnv()
			if err != nil || s == nil {
				t.Fatalf("FromEnv: %v, %v", s, err)
			}
			fired := 0
			s.WithKill(func() { fired++ })
			// A pass that says its kind is counted as one that does
			// not: journal:2 fires at the second journal pass.
			s.HitAt("journal", "op/started")
			s.Hit("state")
			s.Hit("journal")
			s.HitAt("provider", "create")
			b, err := os.ReadFile(tally)
			if err != nil || string(b) != tc.want {
				t.Fatalf("tally %q (%v), want %q", b, err, tc.want)
			}
			if fired != tc.fired {
				t.Fatalf("fired %d times, want %d", fired, tc.fired)
			}
		})
	}
	t.Setenv(EnvVar, "")
	t.Setenv(TallyEnvVar, "")
	if s, err := FromEnv(); s != nil || err != nil {
		t.Fatalf("FromEnv with neither variable: %v, %v", s, err)
	}
	t.Setenv(TallyEnvVar, t.TempDir()+"/missing/tally")
	if _, err := FromEnv(); err == nil || !strings.Contains(err.Error(), TallyEnvVar) {
		t.Fatalf("FromEnv with an unwritable tally: %v", err)
	}
}
