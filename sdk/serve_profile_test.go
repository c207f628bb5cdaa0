package sdk

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/go-hclog"
)

func TestStartCPUProfile(t *testing.T) {
	for _, tc := range []struct {
		name   string
		prefix func(dir string) string
		want   bool // a profile is written
	}{
		{"unset", func(string) string { return "" }, false},
		{"set", func(dir string) string { return filepath.Join(dir, "cpu") }, true},
		{"folder missing", func(dir string) string { return filepath.Join(dir, "no", "cpu") }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			prefix := tc.prefix(dir)
			t.Setenv(CPUProfileEnv, prefix)
			stop := startCPUProfile(hclog.NewNullLogger())
			if (stop != nil) != tc.want {
				t.Fatalf("startCPUProfile with %s=%q: got a stop %v, want %v", CPUProfileEnv, prefix, stop != nil, tc.want)
			}
			if stop == nil {
				return
			}
			stop()
			fi, err := os.Stat(fmt.Sprintf("%s.%d", prefix, os.Getpid()))
			if err != nil {
				t.Fatal(err)
			}
			if fi.Size() == 0 {
				t.Fatal("the profile is empty")
			}
		})
	}
}
