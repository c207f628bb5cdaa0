package pluginhost

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bulwark-iac/bulwark/core/pidcheck"
	"github.com/bulwark-iac/bulwark/core/pluginhost/grpcv1"
	"github.com/bulwark-iac/bulwark/core/protection"
	"github.com/bulwark-iac/bulwark/core/providers"
)

// The test plugin (internal/testplugin) is built once per test binary into
// pluginDir, named as the host looks for it: bulwark-provider-test.
var (
	buildOnce sync.Once
	pluginDir string
	buildErr  error
)

// helperHostEnv makes the test binary act as a bulwark host that starts the
// test plugin, prints its pid and waits to be killed (see TestMain).
const helperHostEnv = "BULWARK_PLUGINHOST_TEST_HELPER_DIR"

func TestMain(m *testing.M) {
	if dir := os.Getenv(helperHostEnv); dir != "" {
		helperHost(dir)
		return
	}
	code := m.Run()
	if pluginDir != "" {
		os.RemoveAll(pluginDir)
	}
	os.Exit(code)
}

// helperHost starts the plugin found in dir, prints "pid N" and blocks until
// it is killed.
func helperHost(dir string) {
	h := New(Options{Dirs: []string{dir}})
	p, err := h.Start(context.Background(), Config{Name: "t", Source: "test"})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	fmt.Printf("pid %d\n", p.PID())
	select {}
}

// testPlugin builds the test plugin and returns the folder that holds it.
func testPlugin(t *testing.T) string {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("process tests rely on /proc and the parent-death signal (Linux)")
	}
	buildOnce.Do(func() {
		_, file, _, ok := runtime.Caller(0)
		if !ok {
			buildErr = errors.New("runtime.Caller failed")
			return
		}
		dir, err := os.MkdirTemp("", "bulwark-pluginhost-test-")
		if err != nil {
			buildErr = err
			return
		}
		pluginDir = dir
		goBin, err := exec.LookPath("go")
		if err != nil {
			goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
		}
		// -trimpath, as make builds: the packages compile once a run, shared in the build cache with make vet's and build-demo's.
		cmd := exec.Command(goBin, "build", "-trimpath", "-o", filepath.Join(dir, Prefix+"test"), "./internal/testplugin")
		cmd.Dir = filepath.Dir(file)
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return pluginDir
}

// alive reports whether pid is a live process: not gone and not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the command name, which is in parentheses.
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z' && s[i+2] != 'X'
	}
	return !pidcheck.Gone(pid)
}

// waitGone polls until pid is no longer alive, failing at the deadline.
func waitGone(t *testing.T, pid int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for alive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d still alive after %v", pid, within)
		}
		time.Sleep(10 * time.Millisecond) // poll interval, not a wait for an outcome
	}
}

// running returns the pids of live processes running the executable at path.
func running(t *testing.T, path string) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); err == nil && exe == path && alive(pid) {
			out = append(out, pid)
		}
	}
	return out
}

// waitNoneRunning polls until no process runs path.
func waitNoneRunning(t *testing.T, path string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		pids := running(t, path)
		if len(pids) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("plugin processes %v still running after %v", pids, within)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitClientExited polls until go-plugin has noticed that the plugin's
// process exited. The host's restart decision reads that flag (see
// TestHostNextCallAfterCrashRestarts for why the tests must wait for it).
func waitClientExited(t *testing.T, p *Plugin, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		p.mu.Lock()
		c := p.client
		p.mu.Unlock()
		if c == nil || c.Exited() {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("go-plugin did not notice the exit of plugin %s within %v", p.Name(), within)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

type fixture struct {
	host    *Host
	plugin  *Plugin
	cfg     Config
	exe     string
	dataDir string
}

// start starts the test plugin under a new host closed at the end of the test.
func start(t *testing.T, config map[string]any) *fixture {
	t.Helper()
	dir := testPlugin(t)
	h := New(Options{Dirs: []string{dir}, StartTimeout: 30 * time.Second})
	t.Cleanup(h.Close)
	data := filepath.Join(t.TempDir(), "data", "test")
	cfg := Config{Name: "t", Source: "test", Config: config, DataDir: data}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := h.Start(ctx, cfg)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	return &fixture{host: h, plugin: p, cfg: cfg, exe: filepath.Join(dir, Prefix+"test"), dataDir: data}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func deletesLog(t *testing.T, dataDir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dataDir, "deletes.log"))
	if errors.Is(err, os.ErrNotExist) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestHostLifecycle(t *testing.T) {
	f := start(t, map[string]any{"tag": "one"})
	p, ctx := f.plugin, ctxT(t)

	if p.Protocol() != grpcv1.ProtocolVersion || p.Protocol() != 1 {
		t.Errorf("Protocol() = %d, want 1", p.Protocol())
	}
	pid := p.PID()
	if pid <= 0 || !alive(pid) {
		t.Fatalf("PID() = %d, alive %v", pid, alive(pid))
	}
	if exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); exe != f.exe {
		t.Errorf("pid %d runs %q, want %q", pid, exe, f.exe)
	}
	if p.Name() != "t" || p.Source() != "test" || p.Path() != f.exe {
		t.Errorf("Name %q Source %q Path %q", p.Name(), p.Source(), p.Path())
	}
	if s := p.Schema(); s == nil || s.ProviderName != "test" || len(s.ResourceTypes) != 1 {
		t.Errorf("Schema() = %+v", s)
	}
	if fi, err := os.Stat(f.dataDir); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Errorf("data folder: %v, %v", fi, err)
	}

	// Validate: the provider's own check and the SDK's schema check.
	ds, err := p.ValidateResource(ctx, &providers.ValidateResourceRequest{Type: "thing", Name: "a", Config: providers.Attributes{"size": -1}})
	if err != nil || !ds.HasError() || ds[0].AttributePath[0] != "size" {
		t.Errorf("ValidateResource(size -1) = %v, %v", ds, err)
	}
	ds, err = p.ValidateResource(ctx, &providers.ValidateResourceRequest{Type: "thing", Name: "a", Config: providers.Attributes{"colour": "red"}})
	if err != nil || !ds.HasError() || ds[0].AttributePath[0] != "colour" {
		t.Errorf("ValidateResource(colour) = %v, %v", ds, err)
	}

	// Create, twice under the same key: one resource.
	cr, err := p.Create(ctx, &providers.CreateRequest{Type: "thing", Name: "a", Config: providers.Attributes{"size": 1}, IdempotencyKey: "op_1/a", Protection: protection.Ephemeral})
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	again, err := p.Create(ctx, &providers.CreateRequest{Type: "thing", Name: "a", Config: providers.Attributes{"size": 1}, IdempotencyKey: "op_1/a"})
	if err != nil || again.ID != cr.ID || cr.ID == "" {
		t.Fatalf("retried Create: %+v, %v (first id %q)", again, err, cr.ID)
	}
	if cr.Attributes["size"] != 1.0 {
		t.Errorf("Create attributes %v", cr.Attributes)
	}

	// Read by id, and by idempotency key alone.
	for _, req := range []*providers.ReadRequest{{Type: "thing", Name: "a", ID: cr.ID}, {Type: "thing", Name: "a", IdempotencyKey: "op_1/a"}} {
		r, err := p.Read(ctx, req)
		if err != nil || !r.Exists || r.ID != cr.ID {
			t.Errorf("Read(%+v) = %+v, %v", req, r, err)
		}
		if r != nil && (r.Attributes["pid"] != float64(pid) || r.Attributes["data_dir"] != f.dataDir) {
			t.Errorf("Read attributes %v: not served by pid %d configured with %s", r.Attributes, pid, f.dataDir)
		}
	}

	// A Create the SDK refuses is a DiagnosticsError, not a dead plugin.
	_, err = p.Create(ctx, &providers.CreateRequest{Type: "thing", Name: "b", Config: providers.Attributes{"bogus": 1}, IdempotencyKey: "k"})
	var de *DiagnosticsError
	if !errors.As(err, &de) || errors.Is(err, ErrPluginExited) || de.Method != "Create" || de.Diagnostics[0].AttributePath[0] != "bogus" {
		t.Errorf("Create(bogus) err = %v", err)
	}

	// The protection ladder's second enforcement, through a real process:
	// the plugin's Delete never runs for a protected resource.
	_, err = p.Delete(ctx, &providers.DeleteRequest{Type: "thing", Name: "a", ID: cr.ID, Protection: protection.Protected})
	if !errors.As(err, &de) || !strings.Contains(err.Error(), "refused to delete protected resource a") {
		t.Errorf("protected Delete err = %v", err)
	}
	if log := deletesLog(t, f.dataDir); log != "" {
		t.Errorf("the provider's Delete ran for a protected resource: %q", log)
	}
	if r, err := p.Read(ctx, &providers.ReadRequest{Type: "thing", Name: "a", ID: cr.ID}); err != nil || !r.Exists {
		t.Errorf("protected resource gone after a refused Delete: %+v, %v", r, err)
	}

	// An ordinary Delete reaches the provider.
	if _, err := p.Delete(ctx, &providers.DeleteRequest{Type: "thing", Name: "a", ID: cr.ID, Protection: protection.Durable}); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if log := deletesLog(t, f.dataDir); log != fmt.Sprintf("a %s durable\n", cr.ID) {
		t.Errorf("deletes.log = %q", log)
	}
	if r, err := p.Read(ctx, &providers.ReadRequest{Type: "thing", Name: "a", ID: cr.ID}); err != nil || r.Exists {
		t.Errorf("Read after Delete = %+v, %v", r, err)
	}
	if p.PID() != pid {
		t.Errorf("the plugin was restarted without a crash: pid %d -> %d", pid, p.PID())
	}
}

// A plugin that dies in the middle of Create: the error says so, and once
// the host has seen the exit, the next call runs on a new process, configured
// again.
func TestHostRestartsCrashedPlugin(t *testing.T) {
	f := start(t, map[string]any{"tag": "crashy"})
	p, ctx := f.plugin, ctxT(t)
	for round := 0; round < 3; round++ {
		old := p.PID()
		_, err := p.Create(ctx, &providers.CreateRequest{Type: "thing", Name: "crash", IdempotencyKey: fmt.Sprintf("k%d", round)})
		if !errors.Is(err, ErrPluginExited) {
			t.Fatalf("round %d: Create that kills the plugin: err = %v, want ErrPluginExited", round, err)
		}
		if !strings.Contains(err.Error(), "provider t: Create") {
			t.Errorf("error %q does not name the provider and method", err)
		}
		waitGone(t, old, 10*time.Second)
		waitClientExited(t, p, 10*time.Second)

		r, err := p.Read(ctx, &providers.ReadRequest{Type: "thing", Name: "x"})
		if err != nil {
			t.Fatalf("round %d: the call after the crash: %v", round, err)
		}
		now := p.PID()
		if now == old || now <= 0 || !alive(now) {
			t.Fatalf("round %d: pid %d -> %d (alive %v), want a new live process", round, old, now, alive(now))
		}
		if r.Attributes["pid"] != float64(now) {
			t.Errorf("round %d: served by pid %v, Plugin says %d", round, r.Attributes["pid"], now)
		}
		if got, ok := r.Attributes["configured"].(map[string]any); !ok || got["tag"] != "crashy" || r.Attributes["data_dir"] != f.dataDir {
			t.Errorf("round %d: the new process was not configured again: %v", round, r.Attributes)
		}
		if p.Protocol() != 1 {
			t.Errorf("round %d: protocol %d after restart", round, p.Protocol())
		}
	}
	if pids := running(t, f.exe); len(pids) != 1 || pids[0] != p.PID() {
		t.Errorf("plugin processes %v, want only %d", pids, p.PID())
	}
}

// The call right after a crash must start a new plugin, however quickly it
// comes: this is the compensation's Delete after a Create that crashed.
func TestHostNextCallAfterCrashRestarts(t *testing.T) {
	f := start(t, nil)
	p, ctx := f.plugin, ctxT(t)
	const rounds = 10
	failures := 0
	for i := 0; i < rounds; i++ {
		_, err := p.Create(ctx, &providers.CreateRequest{Type: "thing", Name: "crash", IdempotencyKey: fmt.Sprintf("k%d", i)})
		if !errors.Is(err, ErrPluginExited) {
			t.Fatalf("crash %d: err = %v", i, err)
		}
		if _, err := p.Read(ctx, &providers.ReadRequest{Type: "thing", Name: "x"}); err != nil {
			failures++
			t.Logf("crash %d: the next call failed: %v", i, err)
		}
	}
	if failures > 0 {
		t.Errorf("%d of %d calls right after a crash failed instead of restarting the plugin", failures, rounds)
	}
}

func TestHostCloseKillsEveryPlugin(t *testing.T) {
	dir := testPlugin(t)
	exe := filepath.Join(dir, Prefix+"test")
	waitNoneRunning(t, exe, 20*time.Second) // nothing left over from other tests
	h := New(Options{Dirs: []string{dir}})
	defer h.Close() // on failure; Close twice is harmless
	ctx := ctxT(t)
	var pids []int
	var plugins []*Plugin
	for _, name := range []string{"one", "two", "three"} {
		p, err := h.Start(ctx, Config{Name: name, Source: "test", DataDir: filepath.Join(t.TempDir(), name)})
		if err != nil {
			h.Close()
			t.Fatalf("Start %s: %v", name, err)
		}
		plugins = append(plugins, p)
		pids = append(pids, p.PID())
	}
	// One of them crashed and was restarted: Close must kill the new one.
	if _, err := plugins[1].Create(ctx, &providers.CreateRequest{Type: "thing", Name: "crash", IdempotencyKey: "k"}); !errors.Is(err, ErrPluginExited) {
		t.Fatalf("crash: %v", err)
	}
	waitClientExited(t, plugins[1], 10*time.Second)
	if _, err := plugins[1].Read(ctx, &providers.ReadRequest{Type: "thing", Name: "x"}); err != nil {
		t.Fatalf("restart: %v", err)
	}
	pids[1] = plugins[1].PID()
	for _, pid := range pids {
		if !alive(pid) {
			t.Fatalf("plugin %d not running before Close", pid)
		}
	}
	if got := running(t, exe); len(got) != 3 {
		t.Fatalf("running %v, want the 3 plugins %v", got, pids)
	}

	h.Close()
	for _, pid := range pids {
		waitGone(t, pid, 10*time.Second)
	}
	waitNoneRunning(t, exe, 10*time.Second)
	for _, p := range plugins {
		if p.PID() != 0 {
			t.Errorf("%s: PID() = %d after Close, want 0", p.Name(), p.PID())
		}
	}
	h.Close() // twice is fine

	if _, err := h.Start(ctx, Config{Name: "late", Source: "test"}); err == nil || !strings.Contains(err.Error(), "host is closed") {
		t.Errorf("Start after Close: %v", err)
	}
	waitNoneRunning(t, exe, 10*time.Second)
}

// After Close, a Plugin the host handed out must not start a process that
// nothing will ever kill.
func TestHostPluginUseAfterCloseStartsNoProcess(t *testing.T) {
	dir := testPlugin(t)
	exe := filepath.Join(dir, Prefix+"test")
	waitNoneRunning(t, exe, 20*time.Second)
	h := New(Options{Dirs: []string{dir}})
	ctx := ctxT(t)
	p, err := h.Start(ctx, Config{Name: "t", Source: "test"})
	if err != nil {
		t.Fatal(err)
	}
	h.Close()
	waitNoneRunning(t, exe, 10*time.Second)
	_, err = p.Read(ctx, &providers.ReadRequest{Type: "thing", Name: "x"})
	defer func() {
		p.kill() // clean up what the bug started
		waitNoneRunning(t, exe, 10*time.Second)
	}()
	if err == nil {
		t.Errorf("Read after Close succeeded: a new plugin process %d was started", p.PID())
	}
	if pids := running(t, exe); len(pids) != 0 {
		t.Errorf("plugin processes %v running after Close", pids)
	}
}

// A call to a plugin that does not answer returns when its context ends, and
// the plugin keeps serving other calls.
func TestHostCallDeadline(t *testing.T) {
	f := start(t, nil)
	p := f.plugin
	pid := p.PID()
	for _, timeout := range []time.Duration{200 * time.Millisecond, time.Second} {
		// begin is taken before the deadline is: on a loaded machine the
		// two can be far apart, and the deadline counts from its own.
		begin := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		type result struct {
			r   *providers.ReadResponse
			err error
		}
		ch := make(chan result, 1)
		go func() {
			r, err := p.Read(ctx, &providers.ReadRequest{Type: "thing", Name: "hang"})
			ch <- result{r, err}
		}()
		var res result
		select {
		case res = <-ch:
		case <-time.After(timeout + 10*time.Second):
			cancel()
			t.Fatalf("Read with a %v deadline still running after %v", timeout, timeout+10*time.Second)
		}
		cancel()
		elapsed := time.Since(begin)
		if !errors.Is(res.err, context.DeadlineExceeded) {
			t.Errorf("timeout %v: err = %v, want context.DeadlineExceeded", timeout, res.err)
		}
		if errors.Is(res.err, ErrPluginExited) {
			t.Errorf("timeout %v: a slow call reads as a dead plugin: %v", timeout, res.err)
		}
		if elapsed < timeout {
			t.Errorf("returned after %v, before the %v deadline", elapsed, timeout)
		}
		if elapsed > timeout+5*time.Second {
			t.Errorf("returned %v after a %v deadline", elapsed, timeout)
		}
	}
	ctx := ctxT(t)
	if r, err := p.Read(ctx, &providers.ReadRequest{Type: "thing", Name: "x"}); err != nil || r.Attributes["pid"] != float64(pid) {
		t.Errorf("the plugin does not serve after a timed-out call: %+v, %v", r, err)
	}
	// A cancelled context: the call returns Canceled.
	cctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := p.Read(cctx, &providers.ReadRequest{Type: "thing", Name: "hang"}); !errors.Is(err, context.Canceled) {
		t.Errorf("Read with a cancelled context: %v", err)
	}
}

func TestHostStartFailures(t *testing.T) {
	dir := testPlugin(t)
	exe := filepath.Join(dir, Prefix+"test")
	waitNoneRunning(t, exe, 20*time.Second)
	ctx := ctxT(t)

	h := New(Options{Dirs: []string{dir, t.TempDir()}})
	defer h.Close()
	_, err := h.Start(ctx, Config{Name: "x", Source: "absent"})
	var nf *NotFoundError
	if !errors.As(err, &nf) || nf.Source != "absent" || len(nf.Dirs) != 2 {
		t.Errorf("Start(absent) = %v", err)
	}
	if _, err := h.Start(ctx, Config{Name: "x", Source: "../test"}); err == nil || !strings.Contains(err.Error(), "bad provider source") {
		t.Errorf("Start(../test) = %v", err)
	}

	// Configure refused: an error with the provider's diagnostics, and no
	// process left behind.
	_, err = h.Start(ctx, Config{Name: "x", Source: "test", Config: map[string]any{"fail_configure": true}})
	var de *DiagnosticsError
	if !errors.As(err, &de) || de.Method != "Configure" || !strings.Contains(err.Error(), "configure refused as asked") {
		t.Errorf("Start with a refused Configure = %v", err)
	}
	waitNoneRunning(t, exe, 10*time.Second)

	// SchemaOnly never calls Configure: the same config starts, and the
	// schema is read (doctor without a spec, `providers schema`).
	p, err := h.Start(ctx, Config{Name: "x", Source: "test", Config: map[string]any{"fail_configure": true}, SchemaOnly: true})
	if err != nil || p.Schema() == nil || p.Schema().ProviderName == "" || p.Protocol() == 0 {
		t.Errorf("Start SchemaOnly with a config Configure refuses = %v, %+v", err, p)
	}

	// Not a plugin at all: the handshake fails within StartTimeout.
	fake := t.TempDir()
	writeFile(t, fake, Prefix+"liar", "#!/bin/sh\necho not a plugin\nexit 0\n", 0o755)
	h2 := New(Options{Dirs: []string{fake}, StartTimeout: 5 * time.Second})
	defer h2.Close()
	if _, err := h2.Start(ctx, Config{Name: "liar", Source: "liar"}); err == nil || !strings.Contains(err.Error(), "wrote something other than the plugin handshake") {
		t.Errorf("Start(non-plugin) = %v", err)
	}
}

// kill -9 of the host leaves no plugin behind: the kernel's parent-death
// signal ends it.
func TestHostKilledLeavesNoPlugin(t *testing.T) {
	dir := testPlugin(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, "-test.run=^$")
	cmd.Env = append(os.Environ(), helperHostEnv+"="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("helper host: %v", err)
	}
	var pid int
	if _, err := fmt.Sscanf(line, "pid %d", &pid); err != nil || pid <= 0 {
		t.Fatalf("helper host said %q", line)
	}
	if !alive(pid) {
		t.Fatalf("plugin %d not running under the helper host", pid)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	waitGone(t, pid, 10*time.Second)
}
