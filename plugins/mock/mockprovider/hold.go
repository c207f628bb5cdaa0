package mockprovider

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// EnvHold is the environment variable the mock's executables read at
// start: a folder of hold files, so that a test can keep one chosen
// provider call in flight for as long as it likes instead of guessing with
// latency_ms. Each call but Configure has a name, CALL-NAME-N (or CALL-N
// for a call that names no resource: GetSchema and the batch calls): the
// call as the call log names it, the resource's name, and how many calls
// of that kind naming that resource this process has received, this one
// included (from 1). When the file HOLD/CALL-NAME-N.hold exists as the
// call arrives, the call makes HOLD/CALL-NAME-N.begun (so the test knows
// it is in flight), then waits, before latency_ms and before doing
// anything, until the .hold file is gone (the test removes it) or the
// call's context ends (the call then fails with the context's error and
// changes nothing). Unset: no call is ever held, and nothing is read.
const EnvHold = "BULWARK_MOCK_HOLD"

// holdPoll is how often a held call looks for its .hold file.
const holdPoll = 5 * time.Millisecond

// WithHold makes the mock hold the calls the .hold files in dir name (see
// EnvHold).
func WithHold(dir string) Option {
	return func(p *provider) { p.holds = &holds{dir: dir, seen: map[string]int{}} }
}

// HoldFromEnv returns the option EnvHold asks for, getenv reading it: none
// when it is unset, else WithHold on the folder it names, which must exist.
func HoldFromEnv(getenv func(string) string) ([]Option, error) {
	dir := getenv(EnvHold)
	if dir == "" {
		return nil, nil
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", EnvHold, err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%s: %s is not a folder", EnvHold, dir)
	}
	return []Option{WithHold(dir)}, nil
}

// holds is WithHold's state: the folder and how many calls of each kind
// and name arrived. A nil *holds holds nothing.
type holds struct {
	dir  string
	mu   sync.Mutex
	seen map[string]int
}

// HoldName is the name of the nth call (from 1) of kind call naming the
// resource name ("" for none) in EnvHold's folder, without its .hold or
// .begun suffix. A path separator in the name is replaced by "_".
func HoldName(call, name string, n int) string {
	if name == "" {
		return call + "-" + strconv.Itoa(n)
	}
	name = strings.NewReplacer("/", "_", `\`, "_").Replace(name)
	return call + "-" + name + "-" + strconv.Itoa(n)
}

// wait counts the call and, when its .hold file exists, marks it begun and
// waits until the file is gone or ctx ends.
func (h *holds) wait(ctx context.Context, call, name string) error {
	if h == nil {
		return nil
	}
	h.mu.Lock()
	k := call + "\x00" + name
	h.seen[k]++
	n := h.seen[k]
	h.mu.Unlock()
	base := filepath.Join(h.dir, HoldName(call, name, n))
	held := func() (bool, error) {
		_, err := os.Stat(base + ".hold")
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("%s: %w", EnvHold, err)
		}
		return true, nil
	}
	if ok, err := held(); !ok {
		return err
	}
	if err := os.WriteFile(base+".begun", nil, 0o600); err != nil {
		return fmt.Errorf("%s: %w", EnvHold, err)
	}
	tick := time.NewTicker(holdPoll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
		if ok, err := held(); !ok {
			return err
		}
	}
}
