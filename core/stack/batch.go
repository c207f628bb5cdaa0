package stack

import "context"

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

// inBatches makes the calls for items 0..n-1 (the reads of an observe, the
// validations of a validate), up to Parallelism calls at once. An item
// whose provider (providerOf; "" for none) says many of them go in one call
// (many: Provider.ReadsMany, Provider.ValidatesMany) goes with the others of
// that provider in batches, each one call of batch: as many batches as
// there are calls to spread them over, of at most maxBatch items (chunks).
// Every other item is one call of single. The first error a call returns
// stops the calls not yet begun and is returned (forEach).
func (s *session) inBatches(ctx context.Context, n int, providerOf func(i int) string, many func(Provider) bool,
	single func(ctx context.Context, i int) error,
	batch func(ctx context.Context, p Provider, idx []int) error) error {
	var tasks []func(context.Context) error
	batched := map[string][]int{}
	var provs []string
	for i := range n {
		if pn := providerOf(i); pn != "" {
			if p := s.plugins[pn]; p != nil && many(p) {
				if batched[pn] == nil {
					provs = append(provs, pn)
				}
				batched[pn] = append(batched[pn], i)
				continue
			}
		}
		tasks = append(tasks, func(ctx context.Context) error { return single(ctx, i) })
	}
	par := max(1, s.opts.Parallelism)
	for _, pn := range provs {
		p := s.plugins[pn]
		for _, chunk := range chunks(batched[pn], par) {
			tasks = append(tasks, func(ctx context.Context) error { return batch(ctx, p, chunk) })
		}
	}
	return forEach(ctx, len(tasks), par, func(ctx context.Context, i int) error { return tasks[i](ctx) })
}
