package observe

import (
	"context"

	"github.com/bulwark-iac/bulwark/core/parallel"
)

// maxBatch is the most reads (or validations) one call carries.
const maxBatch = 500

// chunks splits idx into batches for up to par calls at once: as many
// batches as there are calls to spread them over, of at most maxBatch.
func chunks(idx []int, par int) [][]int {
	size := min(maxBatch, max(1, (len(idx)+par-1)/par))
	var out [][]int
	for start := 0; start < len(idx); start += size {
		out = append(out, idx[start:min(start+size, len(idx))])
	}
	return out
}

// Batches is what InBatches calls, for items of providers of type P.
type Batches[P any] struct {
	// Spread is how many calls a provider's batched items are spread
	// over (0: the parallelism InBatches is given).
	Spread int
	// Lookup returns the running provider of a name (false: none runs).
	Lookup func(name string) (P, bool)
	// ProviderOf names item i's provider ("" for none: one call alone).
	ProviderOf func(i int) string
	// Many says whether many items of p go in one call (a provider's
	// ReadsMany, ValidatesMany).
	Many func(p P) bool
	// Single is the call of one item alone.
	Single func(ctx context.Context, i int) error
	// Batch is one call of items idx, all of provider p.
	Batch func(ctx context.Context, p P, idx []int) error
}

// InBatches makes the calls for items 0..n-1 (the reads of an observe, the
// validations of a validate), up to par calls at once. An item whose
// provider (ProviderOf; "" for none) says many of them go in one call
// (Many: Provider.ReadsMany, Provider.ValidatesMany) goes with the others of
// that provider in batches, each one call of Batch: as many batches as
// there are calls to spread them over, of at most maxBatch items (chunks).
// Every other item is one call of Single; the single calls come first, in
// item order, then each provider's batches, the providers in the order of
// their first item. The first error a call returns stops the calls not yet
// begun and is returned (parallel.ForEach).
func InBatches[P any](ctx context.Context, n, par int, b Batches[P]) error {
	var tasks []func(context.Context) error
	batched := map[string][]int{}
	found := map[string]P{}
	var provs []string
	for i := range n {
		if pn := b.ProviderOf(i); pn != "" {
			if p, ok := b.Lookup(pn); ok && b.Many(p) {
				if batched[pn] == nil {
					provs = append(provs, pn)
					found[pn] = p
				}
				batched[pn] = append(batched[pn], i)
				continue
			}
		}
		tasks = append(tasks, func(ctx context.Context) error { return b.Single(ctx, i) })
	}
	par = max(1, par)
	spread := par
	if b.Spread > 0 {
		spread = b.Spread
	}
	for _, pn := range provs {
		p := found[pn]
		for _, chunk := range chunks(batched[pn], spread) {
			tasks = append(tasks, func(ctx context.Context) error { return b.Batch(ctx, p, chunk) })
		}
	}
	return parallel.ForEach(ctx, len(tasks), par, func(ctx context.Context, i int) error { return tasks[i](ctx) })
}
