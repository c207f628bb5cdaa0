package benchharness

import (
	"strings"
	"testing"
	"time"
)

func TestWanted(t *testing.T) {
	only := func(cmds ...string) func(string, Shape, int, string) bool {
		return func(_ string, _ Shape, _ int, c string) bool {
			for _, w := range cmds {
				if w == c {
					return true
				}
			}
			return false
		}
	}
	tests := []struct {
		name string
		want func(string, Shape, int, string) bool
		runs []string
	}{
		{"all by default", nil, Commands},
		{"apply alone", only(CmdApply), []string{CmdApply}},
		{"a no-op apply needs the apply", only(CmdNoop), []string{CmdApply, CmdNoop}},
		{"a no-op plan needs the apply", only(CmdNoopPlan), []string{CmdApply, CmdNoopPlan}},
		{"a teardown needs the apply", only(CmdValidate, CmdTeardown), []string{CmdValidate, CmdApply, CmdTeardown}},
		{"none", only(), nil},
	}
	for _, tt := range tests {
		cfg := Config{Want: tt.want}
		var runs []string
		for _, c := range Commands {
			if cfg.wanted(ToolBulwark, Flat, 1000, c) {
				runs = append(runs, c)
			}
		}
		if strings.Join(runs, ",") != strings.Join(tt.runs, ",") {
			t.Errorf("%s: runs %v, want %v", tt.name, runs, tt.runs)
		}
	}
}

func TestMedian(t *testing.T) {
	res := func(cmd string, wall time.Duration, exit int) Result {
		return Result{Tool: ToolBulwark, Shape: Flat, N: 100, Command: cmd, Measurement: Measurement{Wall: wall, ExitCode: exit}}
	}
	skipped := Result{Tool: ToolBulwark, Shape: Flat, N: 100, Command: CmdNoop, Skipped: NotWanted}
	tests := []struct {
		name string
		runs [][]Result
		want []time.Duration // the wall of each command's pick
		exit []int
	}{
		{"one run", [][]Result{{res(CmdApply, 3*time.Second, 0)}}, []time.Duration{3 * time.Second}, []int{0}},
		{"three runs, per command", [][]Result{
			{res(CmdApply, 3*time.Second, 0), res(CmdNoop, 1*time.Second, 0)},
			{res(CmdApply, 1*time.Second, 0), res(CmdNoop, 3*time.Second, 0)},
			{res(CmdApply, 2*time.Second, 0), res(CmdNoop, 2*time.Second, 0)},
		}, []time.Duration{2 * time.Second, 2 * time.Second}, []int{0, 0}},
		{"two runs: the slower middle", [][]Result{{res(CmdApply, time.Second, 0)}, {res(CmdApply, 2*time.Second, 0)}},
			[]time.Duration{2 * time.Second}, []int{0}},
		{"a failure is never hidden", [][]Result{
			{res(CmdApply, time.Second, 0)}, {res(CmdApply, 5*time.Second, 1)}, {res(CmdApply, time.Second, 0)},
		}, []time.Duration{5 * time.Second}, []int{1}},
		{"not wanted is no failure", [][]Result{
			{res(CmdApply, time.Second, 0), skipped}, {res(CmdApply, 2*time.Second, 0), skipped},
		}, []time.Duration{2 * time.Second, 0}, []int{0, 0}},
	}
	for _, tt := range tests {
		got := Median(tt.runs)
		if len(got) != len(tt.want) {
			t.Fatalf("%s: %d results, want %d", tt.name, len(got), len(tt.want))
		}
		for i, r := range got {
			if r.Wall != tt.want[i] || r.ExitCode != tt.exit[i] {
				t.Errorf("%s: %s picked wall %s exit %d, want %s exit %d", tt.name, r.Command, r.Wall, r.ExitCode, tt.want[i], tt.exit[i])
			}
		}
	}
	if Median(nil) != nil {
		t.Error("Median(nil) is not nil")
	}
}

func TestVersionLine(t *testing.T) {
	tests := []struct{ out, want string }{
		{"Terraform v1.11.4\non linux_amd64\n", "Terraform v1.11.4"},
		{"\nWarning: Unable to open CLI configuration file\n\nThe CLI configuration file at \"/root/.tofurc\" does not exist.\nOpenTofu v1.12.6\non linux_amd64\n", "OpenTofu v1.12.6"},
		{"something else\nsecond\n", "something else"},
	}
	for _, tt := range tests {
		if got := versionLine(tt.out); got != tt.want {
			t.Errorf("versionLine(%q) = %q, want %q", tt.out, got, tt.want)
		}
	}
}
