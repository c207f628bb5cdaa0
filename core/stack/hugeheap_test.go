package stack_test

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/bulwark-iac/bulwark/core/pluginhost"
	"github.com/bulwark-iac/bulwark/core/stack"
)

// flat is n independent resources named r0… of the fake's type generic.
func flat(n int) []res {
	rs := make([]res, n)
	for i := range rs {
		rs[i] = res{name: fmt.Sprintf("r%d", i), typ: "generic"}
	}
	return rs
}

// TestLargeWorkPreparesTheHeaps: a command with at least 100 resources of a
// provider (in the spec, or in the state for a teardown) asks that
// provider's plugin to prepare its heap (pluginhost.Config.HugeHeap) and
// runs Options.PrepareHeap once; a smaller one does neither (the collection
// it costs would buy less than it saves: sdk/hugeheap).
func TestLargeWorkPreparesTheHeaps(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  func(e *env, prepared func(*stack.Options)) error
		want bool
	}{
		{"apply of 99", func(e *env, p func(*stack.Options)) error {
			_, err := e.apply(mkSpec(t, flat(99)...), p)
			return err
		}, false},
		{"apply of 100", func(e *env, p func(*stack.Options)) error {
			_, err := e.apply(mkSpec(t, flat(100)...), p)
			return err
		}, true},
		{"teardown of 100 recorded, none in the spec", func(e *env, p func(*stack.Options)) error {
			if _, err := e.apply(mkSpec(t, flat(100)...)); err != nil {
				return err
			}
			e.w.mu.Lock()
			e.w.starts = nil
			e.w.mu.Unlock()
			_, err := e.teardown(mkSpec(t), p)
			return err
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			var calls atomic.Int32
			done := make(chan struct{}, 8)
			prepared := func(o *stack.Options) {
				o.PrepareHeap = func() { calls.Add(1); done <- struct{}{} }
			}
			if err := tc.run(e, prepared); err != nil {
				t.Fatal(err)
			}
			e.w.mu.Lock()
			starts := append([]pluginhost.Config(nil), e.w.starts...)
			e.w.mu.Unlock()
			if len(starts) == 0 {
				t.Fatal("no provider started")
			}
			for _, cfg := range starts {
				if cfg.HugeHeap != tc.want {
					t.Errorf("provider %s started with HugeHeap %v, want %v", cfg.Name, cfg.HugeHeap, tc.want)
				}
			}
			if tc.want {
				<-done // PrepareHeap runs in a goroutine of its own; the test's deadline bounds the wait
			}
			if got, want := calls.Load(), map[bool]int32{false: 0, true: 1}[tc.want]; got != want {
				t.Errorf("PrepareHeap ran %d times, want %d", got, want)
			}
		})
	}
}
