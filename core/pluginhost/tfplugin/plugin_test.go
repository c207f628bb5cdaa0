package tfplugin

import (
	"io"
	"os/exec"
	"strings"
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

// TestClientConfigQuietsProvider: when the host logs nothing, the provider
// is told to log nothing either (terraform-plugin-log's loggers default to
// trace), except for a level the environment sets; when the host logs, the
// provider's levels are the environment's.
func TestClientConfigQuietsProvider(t *testing.T) {
	debug := hclog.New(&hclog.LoggerOptions{Level: hclog.Debug, Output: io.Discard})
	for _, tc := range []struct {
		name   string
		logger hclog.Logger
		env    []string
		want   map[string]string // variable → value; "" means unset
	}{
		{"quiet host", nil, []string{"A=1"}, map[string]string{
			"TF_LOG_SDK": "off", "TF_LOG_SDK_PROTO": "off", "TF_LOG_SDK_FRAMEWORK": "off",
			"TF_LOG_SDK_HELPER_SCHEMA": "off", "TF_LOG_PROVIDER": "off", "A": "1",
		}},
		{"quiet host, user's level kept", hclog.NewNullLogger(), []string{"TF_LOG_PROVIDER=debug"}, map[string]string{
			"TF_LOG_PROVIDER": "debug", "TF_LOG_SDK": "off",
		}},
		{"logging host", debug, []string{"A=1"}, map[string]string{
			"TF_LOG_SDK": "", "TF_LOG_PROVIDER": "", "A": "1",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command("true")
			cmd.Env = tc.env
			cfg := ClientConfig(StartOptions{Cmd: cmd, Logger: tc.logger})
			got := map[string][]string{}
			for _, kv := range cfg.Cmd.Env {
				k, v, _ := strings.Cut(kv, "=")
				got[k] = append(got[k], v)
			}
			for k, want := range tc.want {
				switch {
				case want == "" && len(got[k]) != 0:
					t.Errorf("%s = %q, want it unset", k, got[k])
				case want != "" && (len(got[k]) != 1 || got[k][0] != want):
					t.Errorf("%s = %q, want exactly %q", k, got[k], want)
				}
			}
		})
	}
}
