package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/bulwark-iac/bulwark/core/engine"
	"github.com/bulwark-iac/bulwark/core/secrets"
	"github.com/bulwark-iac/bulwark/core/stack"
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

// A resume that fails before its own first step does not say the operation
// changed nothing when its interrupted earlier part changed resources (a
// full disk mid-update: 201 of 300 replaced, then the resume failed at once).
func TestReportOfAResumeThatFailedAtOnce(t *testing.T) {
	cases := []struct {
		name      string
		inherited []string
		want      string
		not       string
	}{
		{"nothing changed before", nil, "before changing anything: nothing to roll back", "earlier part"},
		{"an earlier part changed resources", []string{"r1", "r2", "r3", "r4", "r5", "r6", "r7"},
			"Update failed at update:backup before this run changed anything; its interrupted earlier part had changed 7 resource(s) (r1, r2, r3, r4, r5 and 2 more), which were not rolled back",
			"before changing anything: nothing to roll back"},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			c := &cli{stdout: &out, stderr: io.Discard, red: secrets.NewRedactor()}
			res := &stack.Result{Op: "op_1", Type: "update", Outcome: engine.Failed, Inherited: tt.inherited, Err: errors.New("no space left on device"),
				Run: engine.Result{Outcome: engine.Failed, Failed: []string{"update:backup"}, Executed: []string{"update:verify", "update:compatibility", "update:backup"}}}
			c.report(res, "stack.yaml")
			if !strings.Contains(out.String(), tt.want) || strings.Contains(out.String(), tt.not) {
				t.Errorf("report:\n%s\nwant %q, not %q", out.String(), tt.want, tt.not)
			}
		})
	}
}
