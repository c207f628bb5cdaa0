//go:build linux

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// fullDiskSpec is 30 resources in a chain on the mock.
func fullDiskSpec(t *testing.T) string {
	var b strings.Builder
	b.WriteString("version: 1\nstack: full\nproviders:\n  mock: {}\nresources:\n")
	// Enough resources that even the largest free space below runs out
	// before the apply ends (a change costs the mock an appended line and
	// the state a delta: 30 used to be enough, when both rewrote whole
	// files).
	for i := range 120 {
		fmt.Fprintf(&b, "  - name: r%02d\n    type: generic\n", i)
		if i > 0 {
			fmt.Fprintf(&b, "    depends_on: [r%02d]\n", i-1)
		}
	}
	return writeSpec(t, b.String())
}

// A disk that fills up during an apply (the state folder on a small tmpfs,
// a filler file leaving a few KB) gives one bounded line per failure, never
// kilobytes; once space is back, resume converges the stack. Needs root (it
// mounts a tmpfs); skipped otherwise.
func TestFullDiskGivesOneBoundedLinePerFailure(t *testing.T) {
	t.Parallel() // a tmpfs and folders of its own
	// A step writes what it changed (its record and the resource), so an
	// apply of these 30 needs under 64 KB: the space left is less.
	for _, freeKB := range []int{24, 32, 40} {
		t.Run(fmt.Sprintf("free%dk", freeKB), func(t *testing.T) {
			mnt := filepath.Join(t.TempDir(), "full")
			if err := os.Mkdir(mnt, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := syscall.Mount("tmpfs", mnt, "tmpfs", 0, "size=1m"); err != nil {
				t.Skipf("cannot mount a tmpfs (%v): this test needs root", err)
			}
			t.Cleanup(func() { syscall.Unmount(mnt, syscall.MNT_DETACH) })
			e := newCrashEnv(t, "full")
			e.stateDir = filepath.Join(mnt, "state")
			spec := fullDiskSpec(t)
			var st syscall.Statfs_t
			if err := syscall.Statfs(mnt, &st); err != nil {
				t.Fatal(err)
			}
			filler := filepath.Join(mnt, "filler")
			if err := os.WriteFile(filler, make([]byte, int64(st.Bavail)*st.Bsize-int64(freeKB)*1024), 0o600); err != nil {
				t.Fatal(err)
			}
			r := e.run("", "apply", "--yes", spec)
			if r.killed || !slices.Contains([]int{1, 13}, r.code) {
				t.Fatalf("want exit 1 or 13 on a full disk: %s", r)
			}
			lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
			if len(lines) > 15 || len(r.stderr) > 4500 {
				t.Errorf("%d lines, %d bytes on stderr:\n%s", len(lines), len(r.stderr), r.stderr)
			}
			for _, l := range lines {
				if len(l) > 400 {
					t.Errorf("a line of %d bytes: %s", len(l), l)
				}
			}
			if !strings.Contains(r.stdout, "bulwark resume") {
				t.Errorf("stdout does not say to run resume: %s", r)
			}
			// Whatever could not be recorded, no later command takes the
			// operation for finished.
			if r := e.run("", "apply", "--yes", spec); r.code != 1 || !strings.Contains(r.stderr, "is unfinished") {
				t.Errorf("an apply after the full disk: want it refused, the operation unfinished: %s", r)
			}
			if err := os.Remove(filler); err != nil {
				t.Fatal(err)
			}
			r1 := e.run("", "resume", spec)
			if !slices.Contains([]int{0, 11}, r1.code) {
				t.Fatalf("resume with space back: %s\n%s", r1, e.history())
			}
			e.must(0, "resume", spec)
			t.Logf("apply: exit %d, %d line(s), %d bytes on stderr:\n%s", r.code, len(lines), len(r.stderr), r.stderr)
			e.checkSettled(spec)
			e.checkAgreement(e.readState(), e.mockWorld())
			e.assertNothingLeft()
		})
	}
}

// fullDiskUpdateSpec is 120 computes of the given size on the mock: an
// update from one size to another changes every one of them.
func fullDiskUpdateSpec(t *testing.T, size int) string {
	var b strings.Builder
	b.WriteString("version: 1\nstack: full\nproviders:\n  mock: {}\nresources:\n")
	for i := range 120 {
		fmt.Fprintf(&b, "  - name: r%03d\n    type: compute\n    config: {size: %d, zone: a}\n", i, size)
	}
	return writeSpec(t, b.String())
}

// backupUsage is how many backups the stack's folder holds, and their
// bytes.
func backupUsage(t *testing.T, dir string) (n int, size int64) {
	entries, err := os.ReadDir(filepath.Join(dir, "backups"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	for _, en := range entries {
		if fi, err := en.Info(); err == nil {
			n, size = n+1, size+fi.Size()
		}
	}
	return n, size
}

// retryArgs are the arguments of a retry: resume, or apply again.
func retryArgs(cmd, spec string) []string {
	if cmd == "resume" {
		return []string{"resume", spec}
	}
	return []string{"apply", "--yes", spec}
}

// nextTry is what a person retries after r: resume when told to (or when
// a resume failed), apply otherwise.
func nextTry(r crashRes) string {
	if (len(r.args) > 0 && r.args[0] == "resume") || strings.Contains(r.stdout+r.stderr, "bulwark resume") {
		return "resume"
	}
	return "apply"
}

// An update that runs out of disk, retried again and again while the disk
// stays full (resume when told to, apply otherwise), never adds to the
// backups: an attempt that failed before changing anything leaves none, and
// bulwark's own copies of the state do not keep a full disk full. Once
// space is back, the update converges. Needs root (it mounts a tmpfs);
// skipped otherwise.
func TestFullDiskRetriesDoNotGrowTheBackups(t *testing.T) {
	t.Parallel() // a tmpfs and folders of its own
	// Free space beyond one copy of the state: too little for the backup,
	// enough for it but not for the stage after it (an attempt that left
	// its backup behind before), and more (the update gets part way).
	for _, extraKB := range []int{4, 12, 24} {
		t.Run(fmt.Sprintf("extra%dk", extraKB), func(t *testing.T) {
			mnt := filepath.Join(t.TempDir(), "full")
			if err := os.Mkdir(mnt, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := syscall.Mount("tmpfs", mnt, "tmpfs", 0, "size=4m"); err != nil {
				t.Skipf("cannot mount a tmpfs (%v): this test needs root", err)
			}
			t.Cleanup(func() { syscall.Unmount(mnt, syscall.MNT_DETACH) })
			e := newCrashEnv(t, "full")
			e.stateDir = filepath.Join(mnt, "state")
			v1, v2 := fullDiskUpdateSpec(t, 1), fullDiskUpdateSpec(t, 2)
			e.must(0, "apply", "--yes", v1)
			dir := filepath.Join(e.stateDir, e.stack)
			fi, err := os.Stat(filepath.Join(dir, "state.json"))
			if err != nil {
				t.Fatal(err)
			}
			var st syscall.Statfs_t
			if err := syscall.Statfs(mnt, &st); err != nil {
				t.Fatal(err)
			}
			filler := filepath.Join(mnt, "filler")
			if err := os.WriteFile(filler, make([]byte, int64(st.Bavail)*st.Bsize-fi.Size()-int64(extraKB)*1024), 0o600); err != nil {
				t.Fatal(err)
			}
			r := e.run("", "apply", "--yes", v2)
			if r.killed || r.code == 0 {
				t.Fatalf("want the update to fail on a full disk: %s", r)
			}
			n0, size0 := backupUsage(t, dir)
			changedNothing := strings.Contains(r.stdout, "before changing anything")
			t.Logf("update on a full disk: exit %d, %d backup(s) of %d bytes, changed nothing: %v\n%s", r.code, n0, size0, changedNothing, r.stdout)
			if changedNothing && n0 != 0 {
				t.Errorf("an update that changed nothing left %d backup(s)", n0)
			}
			for i := range 5 {
				cmd := nextTry(r)
				r = e.run("", retryArgs(cmd, v2)...)
				if r.killed || r.code == 0 {
					t.Fatalf("retry %d (%s) on a full disk: want it to fail: %s", i, cmd, r)
				}
				n, size := backupUsage(t, dir)
				t.Logf("retry %d (%s): exit %d, %d backup(s) of %d bytes", i, cmd, r.code, n, size)
				if n > n0 || size > size0 {
					t.Errorf("retry %d (%s) on a full disk: %d backup(s) of %d bytes, after the first attempt %d of %d\n%s", i, cmd, n, size, n0, size0, r)
				}
			}
			if err := os.Remove(filler); err != nil {
				t.Fatal(err)
			}
			if cmd := nextTry(r); cmd == "resume" {
				if r := e.run("", retryArgs(cmd, v2)...); !slices.Contains([]int{0, 11}, r.code) {
					t.Fatalf("resume with space back: %s\n%s", r, e.history())
				}
			}
			e.must(0, "apply", "--yes", v2)
			if n, _ := backupUsage(t, dir); n < 1 || n > 2 {
				t.Errorf("after the update went through: %d backup(s), want the update's own (and the interrupted part's)", n)
			}
			e.checkSettled(v2)
			e.checkAgreement(e.readState(), e.mockWorld())
			e.assertNothingLeft()
		})
	}
}
