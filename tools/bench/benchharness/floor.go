package benchharness

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/bulwark-iac/bulwark/core/journal"
	"github.com/bulwark-iac/bulwark/core/pluginhost"
	"github.com/bulwark-iac/bulwark/core/providers"
)

// Floor is what one durable step cannot go below on this machine, measured
// in the same run as the figures it scales.
type Floor struct {
	// RoundTrip is the median of one unary gRPC call (Read of a resource
	// that does not exist) to a real mock plugin process started through
	// core/pluginhost: go-plugin, mutual TLS, the host's own wrapping.
	RoundTrip time.Duration
	Calls     int
	// Append is the median of one core/journal Append (one record written
	// and fsynced, no concurrent appender to share the fsync with) in the
	// scratch folder, on the disk the stacks' state folders are on.
	Append  time.Duration
	Appends int
	// RawSync is the median of a bare os.File write of one journal-sized
	// line followed by Sync, in the same folder: what Append costs beyond
	// the disk.
	RawSync time.Duration
}

// MeanFloor is the mean of two measurements of the floor, each part
// averaged: measured before and after the stacks, it follows a machine
// whose disk or load changed during the run better than either alone.
func MeanFloor(a, b Floor) Floor {
	return Floor{
		RoundTrip: (a.RoundTrip + b.RoundTrip) / 2, Calls: a.Calls + b.Calls,
		Append: (a.Append + b.Append) / 2, Appends: a.Appends + b.Appends,
		RawSync: (a.RawSync + b.RawSync) / 2,
	}
}

// PerResource is the floor one resource's work is scaled by: one provider
// round trip plus one durable journal append.
func (f Floor) PerResource() time.Duration { return f.RoundTrip + f.Append }

// Multiple is how many floors per resource wall is for n resources; 0 when
// it cannot be said.
func (f Floor) Multiple(wall time.Duration, n int) float64 {
	if n <= 0 || f.PerResource() <= 0 {
		return 0
	}
	return float64(wall) / float64(n) / float64(f.PerResource())
}

// MeasureFloor measures the floor: calls Read round trips to the mock
// provider found in pluginDirs, and appends journal appends and raw syncs in
// a folder made under scratch.
func MeasureFloor(ctx context.Context, pluginDirs []string, scratch string, calls, appends int) (Floor, error) {
	dir, err := os.MkdirTemp(scratch, "floor-")
	if err != nil {
		return Floor{}, err
	}
	defer os.RemoveAll(dir)
	f := Floor{Calls: calls, Appends: appends}
	if f.RoundTrip, err = measureRoundTrip(ctx, pluginDirs, filepath.Join(dir, "mock"), calls); err != nil {
		return Floor{}, err
	}
	if f.Append, err = measureAppend(filepath.Join(dir, journal.FileName), appends); err != nil {
		return Floor{}, err
	}
	if f.RawSync, err = measureRawSync(filepath.Join(dir, "raw"), appends); err != nil {
		return Floor{}, err
	}
	return f, nil
}

// warmup is how many calls are made and not timed before timing starts.
const warmup = 20

func measureRoundTrip(ctx context.Context, pluginDirs []string, dataDir string, calls int) (time.Duration, error) {
	h := pluginhost.New(pluginhost.Options{Dirs: pluginDirs})
	defer h.Close()
	p, err := h.Start(ctx, pluginhost.Config{Name: "mock", Source: "mock", DataDir: dataDir})
	if err != nil {
		return 0, fmt.Errorf("floor: start the mock provider: %w", err)
	}
	req := &providers.ReadRequest{Type: "generic", Name: "floor"}
	return medianOf(warmup, calls, func() error {
		_, err := p.Read(ctx, req)
		return err
	})
}

func measureAppend(path string, appends int) (time.Duration, error) {
	j, err := journal.Open(path, nil)
	if err != nil {
		return 0, fmt.Errorf("floor: %w", err)
	}
	defer j.Close()
	// A record like the ones a step writes.
	rec := journal.Record{Op: journal.NewOpID(), Kind: journal.KindStep, Status: journal.StepOK,
		Step: "create:r000000", Resource: "r000000", Action: "create", Phase: "execute"}
	return medianOf(warmup, appends, func() error {
		_, err := j.Append(rec)
		return err
	})
}

func measureRawSync(path string, syncs int) (time.Duration, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return 0, fmt.Errorf("floor: %w", err)
	}
	defer f.Close()
	line := make([]byte, 200)
	for i := range line {
		line[i] = 'x'
	}
	line[len(line)-1] = '\n'
	return medianOf(warmup, syncs, func() error {
		if _, err := f.Write(line); err != nil {
			return err
		}
		return f.Sync()
	})
}

// medianOf runs fn warm times untimed, then n times timed, and returns the
// median duration.
func medianOf(warm, n int, fn func() error) (time.Duration, error) {
	if n <= 0 {
		return 0, fmt.Errorf("floor: need at least one sample")
	}
	for i := 0; i < warm; i++ {
		if err := fn(); err != nil {
			return 0, fmt.Errorf("floor: %w", err)
		}
	}
	ds := make([]time.Duration, n)
	for i := range ds {
		start := time.Now()
		if err := fn(); err != nil {
			return 0, fmt.Errorf("floor: %w", err)
		}
		ds[i] = time.Since(start)
	}
	return median(ds), nil
}

// median of ds (which it sorts); 0 for none.
func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	m := len(ds) / 2
	if len(ds)%2 == 1 {
		return ds[m]
	}
	return (ds[m-1] + ds[m]) / 2
}
