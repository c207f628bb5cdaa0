package benchharness

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Measurement is what one command cost.
type Measurement struct {
	Wall     time.Duration
	ExitCode int
	// Stopped reports that the command ran past its budget and was killed:
	// Wall is then the budget, a lower bound.
	Stopped bool
	// PeakRSS is the command's own peak resident set in bytes: the largest
	// VmHWM read from /proc/PID/status while it ran (0 where there is no
	// /proc). Plugin processes are not in it.
	PeakRSS int64
	// PeakRSSTree is wait4's ru_maxrss (os/exec's ProcessState.SysUsage):
	// the largest peak of the command and of every child it waited for,
	// which for bulwark includes its plugin processes.
	PeakRSSTree int64
	// CPU is the user and system time of the command and of every child it
	// waited for (wait4's rusage): bulwark and its plugins.
	CPU time.Duration
	// CPUSelf is the command's own user and system time, read from
	// /proc/PID/stat once it has exited and before it is reaped (on
	// Linux; elsewhere the last value read while it ran, 0 where there
	// is no /proc).
	// CPU - CPUSelf is, near enough, its plugins'.
	CPUSelf time.Duration
}

// rssSampleEvery is how often a running command's VmHWM is read. VmHWM
// only grows, so the last read before the exit misses at most this much of
// the run.
const rssSampleEvery = 10 * time.Millisecond

// run runs name with args in dir, its stdout and stderr going to the files
// out and errOut, and measures it. A command still running after budget is
// killed (its plugins die with it: bulwark starts them with a parent-death
// signal). An exit code other than 0 is not an error: it is in the
// Measurement; an error means the command could not be run or measured.
func run(ctx context.Context, budget time.Duration, dir string, env []string, out, errOut io.Writer, name string, args ...string) (Measurement, error) {
	if budget > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, budget)
		defer cancel()
	}
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = env
	cmd.Stdin = nil // /dev/null: nothing waits on a terminal
	cmd.Stdout, cmd.Stderr = out, errOut
	cmd.WaitDelay = 5 * time.Second
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return Measurement{}, fmt.Errorf("start %s: %w", name, err)
	}
	sampled := make(chan procSample, 1)
	done := make(chan struct{})
	go func() { sampled <- sampleProc(cmd.Process.Pid, done) }()
	// Its own CPU once it has exited and before it is reaped: exact,
	// where the last sample misses up to its last rssSampleEvery.
	final, finalOK := finalCPU(cmd.Process.Pid)
	werr := cmd.Wait()
	wall := time.Since(start)
	close(done)
	last := <-sampled
	m := Measurement{Wall: wall, PeakRSS: last.hwm, CPUSelf: last.cpu}
	if finalOK && final > m.CPUSelf {
		m.CPUSelf = final
	}
	if ps := cmd.ProcessState; ps != nil {
		m.ExitCode = ps.ExitCode()
		m.PeakRSSTree = maxRSS(ps)
		m.CPU = ps.UserTime() + ps.SystemTime()
	}
	if ctx.Err() != nil && budget > 0 && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		m.Stopped, m.Wall = true, budget
		return m, nil
	}
	if err := ctx.Err(); err != nil {
		return m, err
	}
	var exit *exec.ExitError
	if werr != nil && !errors.As(werr, &exit) {
		return m, fmt.Errorf("%s: %w", name, werr)
	}
	return m, nil
}

// procSample is what was last read of a running process.
type procSample struct {
	hwm int64         // the largest VmHWM, in bytes
	cpu time.Duration // utime + stime
}

// sampleProc reads pid's VmHWM and CPU time until done is closed and
// returns the largest and the last values read.
func sampleProc(pid int, done <-chan struct{}) procSample {
	status := fmt.Sprintf("/proc/%d/status", pid)
	stat := fmt.Sprintf("/proc/%d/stat", pid)
	var s procSample
	t := time.NewTicker(rssSampleEvery)
	defer t.Stop()
	for {
		if v, ok := readHWM(status); ok && v > s.hwm {
			s.hwm = v
		}
		if b, err := os.ReadFile(stat); err == nil {
			if c, ok := parseStatCPU(b); ok && c > s.cpu {
				s.cpu = c
			}
		}
		select {
		case <-done:
			return s
		case <-t.C:
		}
	}
}

// clockTick is the unit of /proc/PID/stat's times (USER_HZ, 100 on Linux).
const clockTick = 10 * time.Millisecond

// parseStatCPU reads utime + stime (fields 14 and 15) of a /proc/PID/stat.
// The command name (field 2) is in parentheses and may hold spaces, so the
// fields are counted from the last ')'.
func parseStatCPU(stat []byte) (time.Duration, bool) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(stat[i+1:])) // f[0] is field 3
	if len(f) < 13 {
		return 0, false
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return time.Duration(u+st) * clockTick, true
}

// readHWM reads the VmHWM line of a /proc/PID/status file, in bytes.
func readHWM(path string) (int64, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	return parseHWM(b)
}

// parseHWM finds "VmHWM:   1234 kB" in the text of a /proc/PID/status.
func parseHWM(status []byte) (int64, bool) {
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0, false
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, false
		}
		return kb * 1024, true
	}
	return 0, false
}

// fileSize is the size of path, 0 when it does not exist.
func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// treeSize is the total size of the regular files under dir, 0 when it does
// not exist.
func treeSize(dir string) int64 {
	var total int64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				total += fi.Size()
			}
		}
		return nil
	})
	return total
}
