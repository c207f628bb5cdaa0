package benchharness

import (
	"strings"
	"testing"
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
