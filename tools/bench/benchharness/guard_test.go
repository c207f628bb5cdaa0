package benchharness

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestGuardCheck(t *testing.T) {
	f := Floor{RoundTrip: 100 * time.Microsecond, Append: 200 * time.Microsecond} // 0.3 ms per resource
	g := &GuardFile{N: 1000, Max: map[Shape]map[string]float64{
		Flat:  {CmdApply: 100, CmdNoop: 50},
		Chain: {CmdApply: 150},
	}}
	ok := func(shape Shape, cmd string, wall time.Duration) Result {
		return Result{Tool: ToolBulwark, Shape: shape, N: 1000, Command: cmd, Measurement: Measurement{Wall: wall}}
	}
	tests := []struct {
		name    string
		results []Result
		failed  []string // "shape command" of the checks that must fail
		why     string   // part of the first failure's reason
	}{{
		name:    "within the margins",
		results: []Result{ok(Flat, CmdApply, 26*time.Second), ok(Flat, CmdNoop, 14*time.Second), ok(Chain, CmdApply, 39*time.Second)},
	}, {
		name:    "exactly at a margin passes",
		results: []Result{ok(Flat, CmdApply, 30*time.Second), ok(Flat, CmdNoop, 15*time.Second), ok(Chain, CmdApply, 45*time.Second)},
	}, {
		name:    "past a margin",
		results: []Result{ok(Flat, CmdApply, 31*time.Second), ok(Flat, CmdNoop, 14*time.Second), ok(Chain, CmdApply, 39*time.Second)},
		failed:  []string{"flat apply"}, why: "103× of the floor, more than the 100× allowed",
	}, {
		name: "stopped",
		results: []Result{ok(Flat, CmdApply, 26*time.Second), ok(Flat, CmdNoop, 14*time.Second),
			{Tool: ToolBulwark, Shape: Chain, N: 1000, Command: CmdApply, Measurement: Measurement{Wall: time.Minute, Stopped: true}}},
		failed: []string{"chain apply"}, why: "stopped after 60.0 s",
	}, {
		name: "a failed command fails its figure",
		results: []Result{ok(Flat, CmdApply, time.Second), ok(Chain, CmdApply, time.Second),
			{Tool: ToolBulwark, Shape: Flat, N: 1000, Command: CmdNoop, Measurement: Measurement{Wall: time.Second, ExitCode: 1}, Tail: "locked"}},
		failed: []string{"flat no-op apply"}, why: "exit 1: locked",
	}, {
		name:    "missing and skipped figures fail",
		results: []Result{ok(Flat, CmdApply, time.Second), {Tool: ToolBulwark, Shape: Flat, N: 1000, Command: CmdNoop, Skipped: "apply exited 1"}},
		failed:  []string{"flat no-op apply", "chain apply"}, why: "skipped: apply exited 1",
	}, {
		name: "another size or tool does not count",
		results: []Result{ok(Flat, CmdApply, time.Second), ok(Flat, CmdNoop, time.Second),
			{Tool: "terraform", Shape: Chain, N: 1000, Command: CmdApply, Measurement: Measurement{Wall: time.Second}},
			{Tool: ToolBulwark, Shape: Chain, N: 100, Command: CmdApply, Measurement: Measurement{Wall: time.Second}}},
		failed: []string{"chain apply"}, why: "not measured",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep := g.Check("guard.json", f, tt.results)
			if len(rep.Checks) != 3 {
				t.Fatalf("%d checks, want 3", len(rep.Checks))
			}
			var failed []string
			for _, c := range rep.Failed() {
				failed = append(failed, string(c.Shape)+" "+c.Command)
			}
			if strings.Join(failed, ",") != strings.Join(tt.failed, ",") {
				t.Fatalf("failed %v, want %v", failed, tt.failed)
			}
			md := rep.Markdown()
			checkTables(t, md)
			if len(tt.failed) == 0 {
				if !strings.Contains(md, "All 3 guarded figures are within their margins.") {
					t.Errorf("markdown does not say it passed:\n%s", md)
				}
				return
			}
			if why := rep.Failed()[0].Why; !strings.Contains(why, tt.why) {
				t.Errorf("reason %q, want it to say %q", why, tt.why)
			}
			if !strings.Contains(md, "**FAIL**") {
				t.Errorf("markdown does not show the failure:\n%s", md)
			}
		})
	}
}

func TestGuardAllowed(t *testing.T) {
	f := Floor{RoundTrip: 100 * time.Microsecond, Append: 200 * time.Microsecond}
	g := &GuardFile{N: 1000, Max: map[Shape]map[string]float64{Flat: {CmdApply: 100}}}
	if got, want := g.Allowed(f, Flat, CmdApply), 30*time.Second; got != want {
		t.Errorf("Allowed = %s, want %s", got, want)
	}
	if got := g.Allowed(f, Chain, CmdApply); got != 0 {
		t.Errorf("an unguarded figure: Allowed = %s, want 0", got)
	}
}

func TestCalibrate(t *testing.T) {
	f := Floor{RoundTrip: 100 * time.Microsecond, Append: 200 * time.Microsecond}
	prev := &GuardFile{Comment: []string{"why"}, N: 1000, LeastMax: 1.2, Max: map[Shape]map[string]float64{
		Flat: {CmdApply: 1e9}, Chain: {CmdNoop: 5, CmdValidate: 5},
	}}
	results := []Result{
		{Tool: ToolBulwark, Shape: Flat, N: 1000, Command: CmdApply, Measurement: Measurement{Wall: 26 * time.Second}},          // 86.67×
		{Tool: ToolBulwark, Shape: Chain, N: 1000, Command: CmdNoop, Measurement: Measurement{Wall: 150 * time.Millisecond}},    // 0.5×
		{Tool: ToolBulwark, Shape: Flat, N: 1000, Command: CmdTeardown, Measurement: Measurement{Wall: time.Second}},            // not guarded
		{Tool: ToolBulwark, Shape: Flat, N: 100, Command: CmdNoop, Measurement: Measurement{Wall: time.Hour}},                   // another size
		{Tool: "tofu", Shape: Chain, N: 1000, Command: CmdApply, Measurement: Measurement{Wall: time.Hour}},                     // another tool
		{Tool: ToolBulwark, Shape: Chain, N: 1000, Command: CmdValidate, Measurement: Measurement{Wall: 30 * time.Millisecond}}, // 0.1×
		{Tool: ToolBulwark, Shape: Chain, N: 1000, Command: CmdPlan, Skipped: NotWanted},                                        // not run
	}
	g, err := Calibrate(prev, results, f, 2.5, "today")
	if err != nil {
		t.Fatal(err)
	}
	if got := g.Max[Flat][CmdApply]; got != 220 { // 86.67 × 2.5 = 216.7, up to two digits
		t.Errorf("flat apply max = %v, want 220", got)
	}
	if got := g.Max[Chain][CmdNoop]; got != 1.3 { // 0.5 × 2.5 = 1.25
		t.Errorf("chain no-op max = %v, want 1.3", got)
	}
	if got := g.Max[Chain][CmdValidate]; got != 1.2 { // 0.1 × 2.5 = 0.25, less than the least maximum
		t.Errorf("chain validate max = %v, want the least maximum 1.2", got)
	}
	if got := g.Measured[Flat][CmdApply]; got != 86.67 {
		t.Errorf("flat apply measured = %v, want 86.67", got)
	}
	if len(g.Max[Flat]) != 1 || len(g.Max[Chain]) != 2 {
		t.Errorf("max = %v: only what the guard guarded may be in it", g.Max)
	}

	// What Calibrate writes, LoadGuard reads back the same, and the run it
	// was calibrated from passes it.
	path := filepath.Join(t.TempDir(), "guard.json")
	if err := g.Write(path); err != nil {
		t.Fatal(err)
	}
	back, err := LoadGuard(path)
	if err != nil {
		t.Fatal(err)
	}
	if back.Max[Flat][CmdApply] != 220 || back.N != 1000 || back.Factor != 2.5 || back.Comment[0] != "why" || back.Calibrated != "today" || back.LeastMax != 1.2 {
		t.Errorf("read back %+v", back)
	}
	if failed := back.Check("guard.json", f, results).Failed(); len(failed) != 0 {
		t.Errorf("the calibrating run fails its own guard: %+v", failed)
	}

	bad := append([]Result{}, results...)
	bad[0].ExitCode = 1
	if _, err := Calibrate(prev, bad, f, 2.5, ""); err == nil {
		t.Error("calibrated from a failed command")
	}
	if _, err := Calibrate(prev, results[1:], f, 2.5, ""); err == nil {
		t.Error("calibrated with a guarded figure missing")
	}
}

func TestLoadGuardRejects(t *testing.T) {
	tests := []struct{ name, text, want string }{
		{"not json", "{", "unexpected end"},
		{"no n", `{"max_floor_multiple": {"flat": {"apply": 1}}}`, "needs n"},
		{"no margins", `{"n": 1000}`, "needs n and max_floor_multiple"},
		{"bad shape", `{"n": 1000, "max_floor_multiple": {"tree": {"apply": 1}}}`, `unknown shape "tree"`},
		{"bad command", `{"n": 1000, "max_floor_multiple": {"flat": {"destroy": 1}}}`, `unknown command "destroy"`},
		{"zero margin", `{"n": 1000, "max_floor_multiple": {"flat": {"apply": 0}}}`, "positive multiple"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "guard.json")
			if err := os.WriteFile(path, []byte(tt.text), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := LoadGuard(path)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("LoadGuard: %v, want an error saying %q", err, tt.want)
			}
		})
	}
}

func TestCeilSignificant(t *testing.T) {
	for _, tt := range []struct{ in, want float64 }{
		{86.3, 87}, {216.7, 220}, {1.25, 1.3}, {5, 5}, {100, 100}, {0.53, 0.53}, {0.531, 0.54}, {0, 0},
	} {
		if got := ceilSignificant(tt.in, 2); got != tt.want {
			t.Errorf("ceilSignificant(%v) = %v, want %v", tt.in, got, tt.want)
		}
	}
}
