package pluginhost

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"
)

// A plugin that fails to start is reported for what it did, within
// StartTimeout, in words a terminal shows safely.
func TestStartFailuresSaidForWhatTheyAre(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("shell-script plugins and signals (Linux)")
	}
	const timeout = 2 * time.Second
	for _, tt := range []struct {
		name, script string
		want         []string
		not          []string
	}{
		{name: "segv", script: "#!/bin/sh\nkill -SEGV $$\n",
			want: []string{"crashed before the plugin handshake", "signal SIGSEGV"},
			not:  []string{"wrote something other than"}},
		{name: "wrapsegv", script: "#!/bin/sh\nsh -c 'kill -SEGV $$'\nexit $?\n",
			want: []string{"exited before the plugin handshake", "status 139", "SIGSEGV"},
			not:  []string{"wrote something other than"}},
		{name: "exits", script: "#!/bin/sh\necho 'boom' >&2\nexit 3\n",
			want: []string{"exited before the plugin handshake", "status 3"},
			not:  []string{"wrote something other than"}},
		{name: "escapes", script: "#!/bin/sh\nprintf '\\033]0;owned\\007\\033[2J\\033[31mred\\n'\nexec sleep 30\n",
			want: []string{"wrote something other than the plugin handshake", `\x1b[31mred`},
			not:  []string{"\x1b", "\a"}},
		// The wrapper's child keeps stdout open after the wrapper is gone:
		// the start still ends at StartTimeout, and the child is killed.
		{name: "wrapchild", script: "#!/bin/sh\nsleep 60 &\nexit 0\n",
			want: []string{"did not complete the plugin handshake in time"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, dir, Prefix+tt.name, tt.script, 0o755)
			h := New(Options{Dirs: []string{dir}, StartTimeout: timeout})
			defer h.Close()
			start := time.Now()
			_, err := h.Start(context.Background(), Config{Name: tt.name, Source: tt.name})
			took := time.Since(start)
			if err == nil {
				t.Fatal("Start succeeded")
			}
			if took > timeout+5*time.Second {
				t.Errorf("Start took %v, StartTimeout is %v", took, timeout)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(err.Error(), n) {
					t.Errorf("error %q says %q", err, n)
				}
			}
		})
	}
}
