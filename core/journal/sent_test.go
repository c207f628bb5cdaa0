package journal

import "testing"

// A not_sent record hides only the start it names of its own operation and
// step: one that names another step's start, or a start of another
// operation, must leave that start visible (it may be a call that went out).
func TestSentHidesOnlyItsOwnStart(t *testing.T) {
	started := func(op, step, id string) Record {
		return Record{ID: id, Op: op, Kind: KindStep, Step: step, Phase: "execute", Status: StepStarted}
	}
	notSent := func(op, step, key string) Record {
		return Record{ID: "n-" + key, Op: op, Kind: KindStep, Step: step, Phase: "execute", Status: StepNotSent, Key: key}
	}
	for _, tt := range []struct {
		name string
		recs []Record
		want []string // ids of the starts left
	}{
		{"its own start", []Record{started("op1", "a", "s1"), notSent("op1", "a", "s1")}, nil},
		{"another step's start", []Record{started("op1", "a", "s1"), started("op1", "b", "s2"), notSent("op1", "a", "s2")}, []string{"s1", "s2"}},
		{"another operation's start", []Record{started("op1", "a", "s1"), notSent("op2", "a", "s1")}, []string{"s1"}},
		{"no key", []Record{started("op1", "a", "s1"), notSent("op1", "a", "")}, []string{"s1"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, r := range Sent(tt.recs) {
				if r.Status == StepNotSent {
					t.Fatalf("a not_sent record was kept: %+v", r)
				}
				if r.Status == StepStarted {
					got = append(got, r.ID)
				}
			}
			if len(got) != len(tt.want) {
				t.Fatalf("starts left %v, want %v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Fatalf("starts left %v, want %v", got, tt.want)
				}
			}
		})
	}
}
