package mockprovider

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// EnvCalls is the environment variable the mock's executables read at
// start: a file the mock appends one line to per call it answers (all but
// Configure), so a benchmark can count the calls a command makes per
// resource and see when each came: "TIME<TAB>CALL<TAB>N<TAB>NAME", TIME in
// RFC 3339 with nanoseconds as the call arrives (before latency_ms), N the
// resources a batch call carries (1 for the others), NAME the resource's
// name where the call has one. Unset: no log.
const EnvCalls = "BULWARK_MOCK_CALLS"

// WithCallLog makes the mock append a line to w for every call but
// Configure (see EnvCalls), lines whole under a lock.
func WithCallLog(w io.Writer) Option {
	return func(p *provider) { p.calls = &callLog{w: w} }
}

// callLog is WithCallLog's writer; a nil *callLog logs nothing.
type callLog struct {
	mu sync.Mutex
	w  io.Writer
}

func (c *callLog) note(call string, n int, name string) {
	if c == nil {
		return
	}
	line := fmt.Sprintf("%s\t%s\t%d\t%s\n", time.Now().UTC().Format(time.RFC3339Nano), call, n, name)
	c.mu.Lock()
	defer c.mu.Unlock()
	_, _ = io.WriteString(c.w, line)
}

// CallLogFromEnv returns the option EnvCalls asks for, getenv reading it:
// none when it is unset, else WithCallLog on the file it names, opened for
// appending (made 0600 if missing; several processes may share it).
func CallLogFromEnv(getenv func(string) string) ([]Option, error) {
	path := getenv(EnvCalls)
	if path == "" {
		return nil, nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", EnvCalls, err)
	}
	return []Option{WithCallLog(f)}, nil
}
