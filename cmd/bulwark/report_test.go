package main

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/bulwark-iac/bulwark/core/engine"
)

// An error of many long failures (a full disk fails every step the same
// way) is shown as a few bounded lines, the cause last; no line spans more
// than one line.
func TestErrorLinesAreFewAndBounded(t *testing.T) {
	long := strings.Repeat("write /very/long/path/state.json: no space left on device; ", 20)
	comp, steps := map[string]error{}, map[string]error{}
	for i := range 30 {
		comp[fmt.Sprintf("r%02d", i)] = errors.New(long)
	}
	steps["r30"] = errors.New("provider panicked: boom\ngoroutine 1 [running]:\nmain.main()")
	err := &engine.UnrecordedError{Reached: engine.RollbackIncomplete, Err: errors.New("record the outcome: " + long),
		Cause: &engine.RollbackError{Failures: comp, Cause: &engine.StepError{Failures: steps}}}
	lines := errorLines(err)
	if len(lines) != 1+maxErrorLines+1 {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), 1+maxErrorLines+1, strings.Join(lines, "\n"))
	}
	for _, l := range lines {
		if len(l) > maxErrorLine+40 || strings.Contains(l, "\n") {
			t.Errorf("line of %d bytes: %q", len(l), l)
		}
	}
	if !strings.Contains(lines[maxErrorLines], "… and 25 more: r05, r06") {
		t.Errorf("the summary line is %q", lines[maxErrorLines])
	}
	if last := lines[len(lines)-1]; !strings.HasPrefix(last, "after: r30: provider panicked: boom [2 more line(s)") {
		t.Errorf("the cause line is %q", last)
	}
}
