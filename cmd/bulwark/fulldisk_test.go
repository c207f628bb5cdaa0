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
			r := e.run("", "apply", spec)
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
			if r := e.run("", "apply", spec); r.code != 1 || !strings.Contains(r.stderr, "is unfinished") {
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
