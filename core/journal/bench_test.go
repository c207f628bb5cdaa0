package journal

import (
	"io"
	"path/filepath"
	"sync"
	"testing"
)

// countingWriter counts the writes that reach the file.
type countingWriter struct {
	w      io.Writer
	mu     sync.Mutex
	writes int
}

func (c *countingWriter) Write(p []byte) (int, error) {
	c.mu.Lock()
	c.writes++
	c.mu.Unlock()
	return c.w.Write(p)
}

// BenchmarkAppendConcurrent is 10 concurrent appenders (an apply's
// --parallelism), reporting the process's CPU time (user + system, fsync
// included) and the writes per append beside the wall time.
func BenchmarkAppendConcurrent(b *testing.B) {
	j, err := Open(filepath.Join(b.TempDir(), FileName), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer j.Close()
	cw := &countingWriter{w: j.f}
	j.w = cw
	b.SetParallelism(5) // 10 goroutines on 2 cores
	cpu0 := cpuTime()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := j.Append(Record{Op: "op_bench", Kind: KindStep, Status: StepOK, Resource: "network"}); err != nil {
				b.Error(err)
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(cw.writes)/float64(b.N), "writes/op")
}
