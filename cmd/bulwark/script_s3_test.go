package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/bulwark-iac/bulwark/backends/s3store"
	"github.com/bulwark-iac/bulwark/core/storage"
)

// The scripts of testdata/s3 run bulwark on the s3 state backend
// (--state s3://…) against an S3 server on loopback: the emulator
// .ci/emulators.sh started ($BULWARK_TEST_S3_ENDPOINT), else one the
// script starts with s3-server (gofakes3, the same emulator, built from
// plugins/aws/internal/fakes3). A script starts with
//
//	[!s3-state] skip '…'
//
// so it says why it does not run on a build of bulwark whose commands do
// not yet open their state through --state s3:// (the file backend only).

var (
	fakes3Once sync.Once
	fakes3Path string
	fakes3Err  error
)

// buildFakeS3 builds the S3 emulator once.
func buildFakeS3(t *testing.T) string {
	p, err := fakeS3()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// fakeS3 is buildFakeS3 for a caller that is no test (a script's command,
// in a directory whose scripts seldom need it).
func fakeS3() (string, error) {
	fakes3Once.Do(func() {
		dir, err := os.MkdirTemp("", "bulwark-fakes3-")
		if err != nil {
			fakes3Err = err
			return
		}
		_, file, _, _ := runtime.Caller(0)
		root := filepath.Join(filepath.Dir(file), "..", "..")
		// -trimpath, as make builds: the packages compile once a run, shared in the build cache with make vet's and build-demo's.
		cmd := exec.Command("go", "build", "-trimpath", "-o", filepath.Join(dir, "fakes3"), "./plugins/aws/internal/fakes3")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			fakes3Err = fmt.Errorf("build the S3 emulator: %v\n%s", err, out)
			return
		}
		fakes3Path = filepath.Join(dir, "fakes3")
	})
	return fakes3Path, fakes3Err
}

// s3TestEnv gives this process (and the commands it starts) the
// emulator's credentials, and turns the SDK's instance metadata lookups off:
// nothing reaches beyond loopback.
func s3TestEnv(t *testing.T) {
	t.Helper()
	for k, v := range map[string]string{"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "AWS_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true"} {
		if os.Getenv(k) == "" {
			t.Setenv(k, v)
		}
	}
}

// TestScriptsS3 runs the scripts of testdata/s3 (what is S3's own: the
// lease of a holder on another machine), each starting its server.
func TestScriptsS3(t *testing.T) {
	s3TestEnv(t)
	runScripts(t, "testdata/s3", scriptBackend{name: "s3", setup: func(*testscript.Env) error { return nil }})
}

// s3StateWired reports whether this build's commands run on --state s3://:
// a status of a stack that does not exist, on a bucket no server holds,
// fails on reaching S3, not on refusing the URL.
func s3StateWired() bool {
	dir, err := os.MkdirTemp("", "bulwark-s3-probe-")
	if err != nil {
		return false
	}
	defer os.RemoveAll(dir)
	spec := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(spec, []byte("version: 1\nstack: probe\nproviders:\n  mock: {}\nresources: []\n"), 0o600); err != nil {
		return false
	}
	var out bytes.Buffer
	run([]string{"--state", "s3://probe/p?region=us-east-1&endpoint=http://127.0.0.1:1", "status", spec}, nil, &out, &out)
	s := out.String()
	return !strings.Contains(s, "unknown flag") && !strings.Contains(s, "file backend only") && !strings.Contains(s, "not yet supported")
}

// s3-server starts an S3 server on loopback (or takes the emulator's), makes
// a bucket in it, and sets $S3 to an s3:// URL of a fresh prefix there and
// $S3_ENDPOINT to the server.
func cmdS3Server(ts *testscript.TestScript, neg bool, args []string, fakes3 string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: s3-server")
	}
	endpoint := os.Getenv("BULWARK_TEST_S3_ENDPOINT")
	if endpoint == "" {
		addr := filepath.Join(ts.Getenv("WORK"), ".s3.addr")
		cmd := exec.Command(fakes3, "-listen", "127.0.0.1:0", "-addr-file", addr)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		ts.Check(cmd.Start())
		ts.Defer(func() { cmd.Process.Kill(); cmd.Wait() })
		deadline := time.Now().Add(20 * time.Second)
		for {
			b, err := os.ReadFile(addr)
			if err == nil && len(bytes.TrimSpace(b)) > 0 {
				endpoint = strings.TrimSpace(string(b))
				break
			}
			if time.Now().After(deadline) {
				ts.Fatalf("the S3 emulator did not start within 20 s")
			}
			time.Sleep(10 * time.Millisecond) // polling interval, bounded by the deadline
		}
	}
	// The emulators check no signature: an unsigned PUT makes the bucket.
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPut, endpoint+"/team-state", nil)
	ts.Check(err)
	resp, err := http.DefaultClient.Do(req)
	ts.Check(err)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusConflict {
		ts.Fatalf("create the bucket: %s", resp.Status)
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	ts.Setenv("S3_ENDPOINT", endpoint)
	ts.Setenv("S3", "s3://team-state/stacks-"+hex.EncodeToString(b[:])+"?region=us-east-1&endpoint="+url.QueryEscape(endpoint))
}

// lockURL is the HTTP URL of the lock object of stack under $S3.
func lockURL(ts *testscript.TestScript, stack string) string {
	u, err := url.Parse(ts.Getenv("S3"))
	ts.Check(err)
	return ts.Getenv("S3_ENDPOINT") + "/" + u.Host + u.Path + "/" + stack + "/lock.json"
}

func getLock(ts *testscript.TestScript, stack string) map[string]any {
	resp, err := http.Get(lockURL(ts, stack))
	ts.Check(err)
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		ts.Fatalf("read the lock of %s: %s", stack, resp.Status)
	}
	var lr map[string]any
	ts.Check(json.NewDecoder(resp.Body).Decode(&lr))
	return lr
}

// s3-lock-elsewhere STACK makes the lock a killed bulwark left look as if
// its holder ran on another machine: this machine cannot see that process
// is dead, so only its lease running out frees the lock.
func cmdS3LockElsewhere(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: s3-lock-elsewhere STACK")
	}
	lr := getLock(ts, args[0])
	delete(lr, "proc")
	h, _ := lr["holder"].(map[string]any)
	if h == nil {
		ts.Fatalf("the lock holds no holder: %v", lr)
	}
	h["host"] = "machine-a"
	body, err := json.Marshal(lr)
	ts.Check(err)
	// Deleted first: the emulator would keep the old object's checksum.
	del, err := http.NewRequest(http.MethodDelete, lockURL(ts, args[0]), nil)
	ts.Check(err)
	dresp, err := http.DefaultClient.Do(del)
	ts.Check(err)
	dresp.Body.Close()
	req, err := http.NewRequest(http.MethodPut, lockURL(ts, args[0]), bytes.NewReader(body))
	ts.Check(err)
	resp, err := http.DefaultClient.Do(req)
	ts.Check(err)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		ts.Fatalf("rewrite the lock: %s", resp.Status)
	}
}

// s3-wait-lease STACK polls, with a deadline, until the lease of the lock
// of STACK has run out.
func cmdS3WaitLease(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: s3-wait-lease STACK")
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		h, _ := getLock(ts, args[0])["holder"].(map[string]any)
		until, _ := h["until"].(string)
		t, err := time.Parse(time.RFC3339Nano, until)
		if err != nil {
			ts.Fatalf("the lock's lease end %q: %v", until, err)
		}
		if time.Now().After(t) {
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("the lease of %s did not run out within 60 s (until %s)", args[0], until)
		}
		time.Sleep(50 * time.Millisecond) // polling interval, bounded by the deadline
	}
}

// s3-hold-lock URL STACK OP takes the lock of STACK at URL (an s3:// URL)
// as operation OP, on host testhost, taking over a lease that ran out, as
// another machine's bulwark would; it holds it until s3-release-lock or
// the script's end.
func (l *heldLocks) s3Hold(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: s3-hold-lock URL STACK OP")
	}
	ctx := context.Background()
	b, err := s3store.Open(ctx, args[0], storage.Options{Stack: args[1]})
	ts.Check(err)
	w, err := b.Lock(ctx, storage.Holder{Op: args[2], PID: os.Getpid(), Host: "testhost", Since: time.Now()})
	ts.Check(err)
	l.put(ts, "s3:"+args[1], func() {
		w.Release(ctx)
		b.Close()
	})
	ts.Setenv("S3_HELD", args[1])
}

// s3-release-lock releases the lock s3-hold-lock took.
func (l *heldLocks) s3Release(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: s3-release-lock")
	}
	l.take(ts, "s3:"+ts.Getenv("S3_HELD"))()
}
