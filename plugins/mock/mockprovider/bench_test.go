package mockprovider_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/bulwark-iac/bulwark/sdk"
)

// BenchmarkWorld measures one call's cost in a world of 10,000 resources:
// it must not depend on the world's size (a Read stats the files; a change
// appends one line and fsyncs it, shared by concurrent changes).
func BenchmarkWorld(b *testing.B) {
	dir := b.TempDir()
	p := configured(&testing.T{}, dir, nil)
	ctx := context.Background()
	const n = 10000
	for i := range n {
		if _, err := p.Create(ctx, &sdk.CreateRequest{Type: "generic", Name: fmt.Sprintf("g%d", i), IdempotencyKey: fmt.Sprintf("k%d", i)}); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("read", func(b *testing.B) {
		i := 0
		for b.Loop() {
			if _, err := p.Read(ctx, &sdk.ReadRequest{Type: "generic", Name: fmt.Sprintf("g%d", i%n)}); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	var next atomic.Int64
	b.Run("create-parallel-10", func(b *testing.B) {
		b.SetParallelism(5) // 10 goroutines on 2 cores
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				i := next.Add(1)
				if _, err := p.Create(ctx, &sdk.CreateRequest{Type: "generic", Name: fmt.Sprintf("c%d", i), IdempotencyKey: fmt.Sprintf("ck%d", i)}); err != nil {
					b.Fatal(err)
				}
			}
		})
	})
}

// BenchmarkWave measures what a wave of the engine at --parallelism 50
// costs the mock: 50 goroutines, each a Create and then the Read of what
// it made (Verify's read-back), against one world. The calls' cost under
// the mock's locks is what each waits for the others; a real provider's
// calls do not wait for each other this way.
func BenchmarkWave(b *testing.B) {
	dir := b.TempDir()
	p := configured(&testing.T{}, dir, nil)
	ctx := context.Background()
	var next atomic.Int64
	b.SetParallelism(25) // 50 goroutines on 2 cores
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := next.Add(1)
			resp, err := p.Create(ctx, &sdk.CreateRequest{Type: "generic", Name: fmt.Sprintf("w%d", i), IdempotencyKey: fmt.Sprintf("wk%d", i)})
			if err != nil {
				b.Fatal(err)
			}
			if r, err := p.Read(ctx, &sdk.ReadRequest{Type: "generic", Name: fmt.Sprintf("w%d", i), ID: resp.ID}); err != nil || !r.Exists {
				b.Fatalf("read w%d back: %v (exists %v)", i, err, r != nil && r.Exists)
			}
		}
	})
}
