package pgstore_test

import (
	"context"
	"fmt"
	"github.com/bulwark-iac/bulwark/core/protection"
	"sync/atomic"
	"testing"

	"github.com/bulwark-iac/bulwark/backends/pgstore/pgtest"
	"github.com/bulwark-iac/bulwark/core/journal"
	"github.com/bulwark-iac/bulwark/core/state"
	"github.com/bulwark-iac/bulwark/core/storage"
	"github.com/bulwark-iac/bulwark/core/storage/filestore"
)

// BenchmarkCommit: one step's commit (a record and a resource put), from
// 10 goroutines at once as apply's parallel steps make them, on PostgreSQL
// and on files, on the same machine.
//
//	go test -run '^$' -bench Commit ./pgstore/
func BenchmarkCommit(b *testing.B) {
	for _, backend := range []string{"postgres", "file"} {
		b.Run(backend, func(b *testing.B) {
			ctx := context.Background()
			var be storage.Backend
			var err error
			if backend == "postgres" {
				be, err = pgstoreOpen(ctx, pgtest.URL(b))
			} else {
				be, err = filestore.Open(ctx, "file://"+b.TempDir(), storage.Options{Stack: "bench"})
			}
			if err != nil {
				b.Fatal(err)
			}
			defer be.Close()
			w, err := be.Lock(ctx, storage.Holder{Op: "op_bench"})
			if err != nil {
				b.Fatal(err)
			}
			defer w.Release(ctx)
			var n atomic.Int64
			b.SetParallelism(10)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					name := fmt.Sprintf("r%d", n.Add(1))
					r := &state.Resource{Name: name, Type: "generic", Provider: "mock", Source: "mock", ID: name, Protection: protection.Ephemeral,
						Attributes: map[string]any{"arn": "mock:generic:" + name, "size": 1.0}}
					if _, err := w.Commit(ctx, storage.Commit{Records: []journal.Record{{Op: "op_bench", Kind: journal.KindStep, Resource: name, Status: journal.StepOK}},
						Change: storage.Change{Put: []*state.Resource{r}}}); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
