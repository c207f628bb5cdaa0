package mockprovider

import (
	"math"
	"sync"
	"time"
)

// bucket is the write quota rate_limit sets, as a cloud's write APIs have
// one: a token bucket that fills with rate tokens a second up to burst
// (the rate, at least 1), each Create, Update and Delete taking one. Reads
// and validations take none: a cloud's quotas on its describe calls are
// far above its mutating ones, and what the mock models is the write path
// a large apply or teardown runs into (the benchmark's "flat 1,000 against
// a mock limited to 50 calls a second"). It is the process's own: two
// processes sharing a world each have a quota.
type bucket struct {
	rate  float64 // tokens a second; 0: no limit
	burst float64

	mu     sync.Mutex
	tokens float64
	last   time.Time
}

func newBucket(rate float64, now time.Time) *bucket {
	burst := max(1, math.Floor(rate))
	return &bucket{rate: rate, burst: burst, tokens: burst, last: now}
}

// take takes a token for each of n calls made at now, as many as there
// are: granted is how many got one (the first ones), and wait, when some
// did not, is the time until the next token.
func (b *bucket) take(now time.Time, n int) (granted int, wait time.Duration) {
	if b == nil || b.rate <= 0 {
		return n, 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if elapsed := now.Sub(b.last); elapsed > 0 {
		b.tokens = min(b.burst, b.tokens+elapsed.Seconds()*b.rate)
		b.last = now
	}
	granted = min(n, int(math.Floor(b.tokens)))
	b.tokens -= float64(granted)
	if granted == n {
		return granted, 0
	}
	wait = time.Duration((1 - b.tokens) / b.rate * float64(time.Second))
	return granted, max(wait, time.Millisecond)
}
