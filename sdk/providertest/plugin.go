package providertest

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"

	"github.com/bulwark-iac/bulwark/sdk"
	"github.com/bulwark-iac/bulwark/sdk/proto/handshake"
)

// envServe, in a process RunPlugin starts, names the test whose provider the
// process serves.
const envServe = "BULWARK_PROVIDERTEST_SERVE"

// RunPlugin runs the suite against newProvider's provider served by a real
// plugin process: the test binary, re-executed to run only the calling test,
// with RunPlugin in that process calling sdk.Serve(newProvider(t)) and
// exiting when the host lets go. It is started the way the bulwark host
// starts a plugin (go-plugin handshake, protocol negotiation, gRPC, mutual TLS: handshake.HostTLS)
// and killed when its test ends; one process per provider instance.
//
// Whatever the calling test does before RunPlugin also runs in the plugin
// process, so call RunPlugin first (in its own test function, ideally), and
// write nothing to stdout before it: stdout carries go-plugin's handshake.
func RunPlugin(t *testing.T, newProvider func(t *testing.T) sdk.Provider, cfg Config) {
	t.Helper()
	if name, ok := os.LookupEnv(envServe); ok {
		if name != t.Name() {
			t.Skipf("providertest: this process serves the provider of %s", name)
		}
		sdk.Serve(instance(t, newProvider))
		os.Exit(0)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatalf("providertest: find the test binary: %v", err)
	}
	test := t.Name()
	run(t, cfg, true, func(t *testing.T) (sdk.Provider, sdk.Provider) {
		args := []string{"-test.run=" + runPattern(test)}
		if d, ok := t.Deadline(); ok {
			// Should this process outlive its host, it ends with the host's deadline.
			args = append(args, "-test.timeout="+max(time.Until(d), time.Minute).Round(time.Second).String())
		}
		cmd := exec.Command(exe, args...)
		cmd.Env = []string{envServe + "=" + test} // go-plugin adds the rest of the environment
		if _, ok := os.LookupEnv("GORACE"); !ok {
			// A -race binary otherwise sleeps a second on exit.
			cmd.Env = append(cmd.Env, "GORACE=atexit_sleep_ms=0")
		}
		p, _ := startPlugin(t, cmd)
		return p, nil
	})
}

// RunExecutable runs the suite against the provider executable at path,
// started as a plugin process the way the bulwark host starts one (one
// process per provider instance, killed when its test ends).
func RunExecutable(t *testing.T, path string, cfg Config) {
	t.Helper()
	run(t, cfg, true, func(t *testing.T) (sdk.Provider, sdk.Provider) {
		return StartPlugin(t, path), nil
	})
}

// StartPlugin starts the provider executable at path as a plugin process,
// the way the bulwark host does, and returns the host side of its
// connection. The process is killed when t ends; its log (and the plugin
// machinery's) is shown if t failed.
func StartPlugin(t *testing.T, path string) sdk.Provider {
	t.Helper()
	p, _ := startPlugin(t, exec.Command(path))
	return p
}

// StartPluginClient is StartPlugin that also returns the go-plugin client,
// for tests that watch the process itself (Exited, Kill).
func StartPluginClient(t *testing.T, path string) (sdk.Provider, *plugin.Client) {
	t.Helper()
	return startPlugin(t, exec.Command(path))
}

// Build builds the main package in the calling test's folder (a provider's
// module root, as `go test` runs there) into a temporary folder, as the
// executable bulwark-provider-<name>, and returns its path.
func Build(t *testing.T, name string) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("providertest: no go command to build the plugin with")
	}
	bin := filepath.Join(t.TempDir(), "bulwark-provider-"+name)
	// -trimpath, as make builds: the packages compile once a run, shared in the build cache with make vet's and build-demo's.
	if out, err := exec.Command(goBin, "build", "-trimpath", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("providertest: go build: %v\n%s", err, out)
	}
	return bin
}

func startPlugin(t *testing.T, cmd *exec.Cmd) (sdk.Provider, *plugin.Client) {
	t.Helper()
	logs := &lockedBuffer{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("plugin %s log:\n%s", cmd.Path, logs)
		}
	})
	tlsConfig, err := handshake.HostTLS(cmd)
	if err != nil {
		t.Fatalf("providertest: start plugin %s: %v", cmd.Path, err)
	}
	client := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  sdk.Handshake,
		VersionedPlugins: sdk.VersionedPlugins(nil),
		Cmd:              cmd,
		SkipHostEnv:      true, // HostTLS put the environment in cmd.Env
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		TLSConfig:        tlsConfig,
		Logger:           hclog.New(&hclog.LoggerOptions{Name: "host", Output: logs, Level: hclog.Debug}),
	})
	t.Cleanup(client.Kill)
	rpc, err := client.Client()
	if err != nil {
		t.Fatalf("providertest: start plugin %s: %v", cmd.Path, err)
	}
	if v := client.NegotiatedVersion(); v != sdk.ProtocolVersion {
		t.Fatalf("providertest: plugin %s negotiated protocol version %d, want %d", cmd.Path, v, sdk.ProtocolVersion)
	}
	return dispense(t, rpc), client
}

// runPattern returns the -test.run pattern that matches the test named name
// (a subtest's name has slashes) and nothing else.
func runPattern(name string) string {
	parts := strings.Split(name, "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	return strings.Join(parts, "/")
}

// lockedBuffer collects the plugin machinery's log.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
