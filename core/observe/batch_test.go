package observe

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"testing"
)

func TestChunks(t *testing.T) {
	seq := func(n int) []int {
		out := make([]int, n)
		for i := range out {
			out[i] = i
		}
		return out
	}
	tests := []struct {
		name  string
		n     int
		par   int
		sizes []int
	}{
		{"none", 0, 4, nil},
		{"one", 1, 4, []int{1}},
		{"fewer than calls: one each", 3, 10, []int{1, 1, 1}},
		{"spread over the calls", 10, 4, []int{3, 3, 3, 1}},
		{"even", 8, 4, []int{2, 2, 2, 2}},
		{"one call", 7, 1, []int{7}},
		{"at most maxBatch", 1200, 1, []int{maxBatch, maxBatch, 200}},
		{"maxBatch per call", 2 * maxBatch, 2, []int{maxBatch, maxBatch}},
		{"above maxBatch per call", 2*maxBatch + 2, 2, []int{maxBatch, maxBatch, 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			idx := seq(tt.n)
			got := chunks(idx, tt.par)
			var sizes []int
			var all []int
			for _, c := range got {
				sizes = append(sizes, len(c))
				all = append(all, c...)
			}
			if !slices.Equal(sizes, tt.sizes) {
				t.Errorf("chunks(%d, %d) sizes = %v, want %v", tt.n, tt.par, sizes, tt.sizes)
			}
			if !slices.Equal(all, idx) && tt.n > 0 {
				t.Errorf("chunks(%d, %d) = %v: not every item once, in order", tt.n, tt.par, got)
			}
		})
	}
}

// prov is a provider for InBatches: whether it takes many in one call.
type prov struct {
	name string
	many bool
}

func TestInBatches(t *testing.T) {
	running := map[string]*prov{
		"bulk":  {name: "bulk", many: true},
		"bulk2": {name: "bulk2", many: true},
		"one":   {name: "one"},
	}
	tests := []struct {
		name      string
		providers []string // item i's provider; "" for none
		par       int
		singles   []int
		batches   map[string][][]int
	}{
		{"nothing", nil, 4, nil, nil},
		{"one by one", []string{"one", "one"}, 4, []int{0, 1}, nil},
		{"no provider is one call", []string{"", "bulk"}, 1, []int{0}, map[string][][]int{"bulk": {{1}}}},
		{"a provider not running is one call", []string{"gone", "bulk"}, 1, []int{0}, map[string][][]int{"bulk": {{1}}}},
		{"batched by provider, in item order", []string{"bulk", "one", "bulk2", "bulk", "bulk2", "one"}, 1,
			[]int{1, 5}, map[string][][]int{"bulk": {{0, 3}}, "bulk2": {{2, 4}}}},
		{"spread over the calls", []string{"bulk", "bulk", "bulk", "bulk", "bulk"}, 2,
			nil, map[string][][]int{"bulk": {{0, 1, 2}, {3, 4}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var (
				mu      sync.Mutex
				singles []int
				batches = map[string][][]int{}
			)
			err := InBatches(context.Background(), len(tt.providers), tt.par, Batches[*prov]{
				Lookup: func(name string) (*prov, bool) {
					p, ok := running[name]
					return p, ok
				},
				ProviderOf: func(i int) string { return tt.providers[i] },
				Many:       func(p *prov) bool { return p.many },
				Single: func(_ context.Context, i int) error {
					mu.Lock()
					defer mu.Unlock()
					singles = append(singles, i)
					return nil
				},
				Batch: func(_ context.Context, p *prov, idx []int) error {
					mu.Lock()
					defer mu.Unlock()
					batches[p.name] = append(batches[p.name], slices.Clone(idx))
					return nil
				},
			})
			if err != nil {
				t.Fatal(err)
			}
			slices.Sort(singles)
			if !slices.Equal(singles, tt.singles) {
				t.Errorf("single calls = %v, want %v", singles, tt.singles)
			}
			for _, bs := range batches {
				slices.SortFunc(bs, func(a, b []int) int { return a[0] - b[0] })
			}
			if len(batches) != len(tt.batches) || (len(batches) > 0 && !reflect.DeepEqual(batches, tt.batches)) {
				t.Errorf("batches = %v, want %v", batches, tt.batches)
			}
		})
	}
}

// TestInBatchesFirstErrorWins: with one call at a time, the first call that
// fails stops the others, and its error is returned; singles go before
// batches.
func TestInBatchesFirstErrorWins(t *testing.T) {
	providers := []string{"bulk", "one", "one", "bulk"}
	var calls []string
	err := InBatches(context.Background(), len(providers), 1, Batches[string]{
		Lookup:     func(name string) (string, bool) { return name, true },
		ProviderOf: func(i int) string { return providers[i] },
		Many:       func(p string) bool { return p == "bulk" },
		Single: func(_ context.Context, i int) error {
			calls = append(calls, fmt.Sprint("single ", i))
			if i == 2 {
				return fmt.Errorf("item %d failed", i)
			}
			return nil
		},
		Batch: func(_ context.Context, p string, idx []int) error {
			calls = append(calls, fmt.Sprint("batch ", idx))
			return errors.New("batch failed")
		},
	})
	if err == nil || err.Error() != "item 2 failed" {
		t.Fatalf("err = %v, want item 2's", err)
	}
	if want := []string{"single 1", "single 2"}; !slices.Equal(calls, want) {
		t.Fatalf("calls = %v, want %v", calls, want)
	}
}
