package failpoint

import "testing"

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
