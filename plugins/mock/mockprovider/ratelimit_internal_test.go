package mockprovider

import (
	"testing"
	"time"
)

// The quota's bucket: full (burst = the rate, at least 1) at the start,
// filling at the rate, never above the burst, and the wait it gives the
// calls it refuses is the time until its next token.
func TestBucket(t *testing.T) {
	start := time.Unix(1000, 0)
	type take struct {
		at      time.Duration // after start
		n       int
		granted int
		wait    time.Duration
	}
	tests := []struct {
		name  string
		rate  float64
		takes []take
	}{
		{"no limit", 0, []take{{0, 1000, 1000, 0}}},
		{"burst is the rate", 10, []take{
			{0, 12, 10, 100 * time.Millisecond},
			{50 * time.Millisecond, 1, 0, 50 * time.Millisecond},
			{100 * time.Millisecond, 2, 1, 100 * time.Millisecond},
		}},
		{"refills to the burst only", 2, []take{
			{0, 2, 2, 0},
			{time.Hour, 3, 2, 500 * time.Millisecond},
		}},
		{"under one a second: a burst of one", 0.5, []take{
			{0, 2, 1, 2 * time.Second},
			{time.Second, 1, 0, time.Second},
			{2 * time.Second, 1, 1, 0},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newBucket(tt.rate, start)
			for i, tk := range tt.takes {
				granted, wait := b.take(start.Add(tk.at), tk.n)
				if granted != tk.granted || (wait-tk.wait).Abs() > time.Microsecond {
					t.Fatalf("take %d: %d granted, wait %v; want %d, %v", i, granted, wait, tk.granted, tk.wait)
				}
			}
		})
	}
}
