// Package parallel runs independent calls a bounded number at once.
package parallel

import (
	"context"
	"sync"

	"github.com/bulwark-iac/bulwark/core/internal/stackhint"
)

// ForEach calls fn(ctx, i) for i in [0, n), up to par at once (at least
// one), and returns when every call has returned. After the first error no
// call starts that has not started yet; the error returned is the one of the
// lowest i that failed, so the same input gives the same error whatever the
// scheduling.
func ForEach(ctx context.Context, n, par int, fn func(ctx context.Context, i int) error) error {
	if n == 0 {
		return nil
	}
	par = max(1, min(par, n))
	errs := make([]error, n)
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		next   int
		failed bool
	)
	take := func() (int, bool) {
		mu.Lock()
		defer mu.Unlock()
		if failed || next >= n {
			return 0, false
		}
		next++
		return next - 1, true
	}
	for range par {
		wg.Add(1)
		go func() {
			defer wg.Done()
			stackhint.Grow() // fn goes deep (a provider call)
			for {
				i, ok := take()
				if !ok {
					return
				}
				if err := fn(ctx, i); err != nil {
					errs[i] = err
					mu.Lock()
					failed = true
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
