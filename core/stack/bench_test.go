package stack_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/bulwark-iac/bulwark/core/stack"
)

// BenchmarkApply measures the engine's own cost per resource (planning,
// journaling every transition with fsync, atomic state writes) on the
// in-process fake provider: a fresh apply of 50 independent resources, and
// the no-op re-run, at parallelism 1 and 10. Group commit is what makes 10
// cheaper per resource than 1.
func BenchmarkApply(b *testing.B) {
	var rs []res
	for i := 0; i < 50; i++ {
		rs = append(rs, res{name: fmt.Sprintf("r%02d", i), typ: "generic"})
	}
	sp := mkSpec(b, rs...)
	for _, par := range []int{1, 10} {
		b.Run(fmt.Sprintf("create-50/parallelism-%d", par), func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				w := newFakeWorld()
				o := stack.Options{StorageOptions: stack.StorageOptions{StateDir: b.TempDir()}, TestHooks: stack.TestHooks{Starter: w.Starter()}, RunOptions: stack.RunOptions{Parallelism: par}}
				b.StartTimer()
				if _, err := stack.Apply(context.Background(), sp, o); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("noop-50/parallelism-%d", par), func(b *testing.B) {
			w := newFakeWorld()
			o := stack.Options{StorageOptions: stack.StorageOptions{StateDir: b.TempDir()}, TestHooks: stack.TestHooks{Starter: w.Starter()}, RunOptions: stack.RunOptions{Parallelism: par}}
			if _, err := stack.Apply(context.Background(), sp, o); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				if _, err := stack.Apply(context.Background(), sp, o); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
