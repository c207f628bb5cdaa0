package tfplugin

import (
	"io"
	"os/exec"
	"testing"

	"github.com/hashicorp/go-hclog"
)

// TestClientConfigLogger: a logger that writes nothing reaches go-plugin as
// one that is off (so it leaves a provider's stderr unparsed); a logger
// that logs keeps its level.
func TestClientConfigLogger(t *testing.T) {
	for _, tc := range []struct {
		name   string
		logger hclog.Logger
		want   hclog.Level
	}{
		{"none", nil, hclog.Off},
		{"null logger", hclog.NewNullLogger(), hclog.Off},
		{"debug", hclog.New(&hclog.LoggerOptions{Level: hclog.Debug, Output: io.Discard}), hclog.Debug},
		{"trace", hclog.New(&hclog.LoggerOptions{Level: hclog.Trace, Output: io.Discard}), hclog.Trace},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := ClientConfig(StartOptions{Cmd: exec.Command("true"), Logger: tc.logger})
			if got := cfg.Logger.GetLevel(); got != tc.want {
				t.Errorf("go-plugin's logger level = %v, want %v", got, tc.want)
			}
		})
	}
}
