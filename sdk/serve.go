package sdk

import (
	"crypto/tls"
	"fmt"
	"os"
	"runtime/pprof"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/bulwark-iac/bulwark/sdk/hugeheap"
	"github.com/bulwark-iac/bulwark/sdk/proto/handshake"
)

// streamWorkers is how many goroutines serve the plugin's calls, reused
// from call to call (more at once than that each get a goroutine of their
// own, as without workers): a goroutine per call grows a fresh stack for
// each, copying it at every doubling. A host runs up to --parallelism
// calls at once (10 by default).
const streamWorkers = 16

func transportServerOptions() []grpc.ServerOption {
	return []grpc.ServerOption{grpc.InitialWindowSize(handshake.StreamWindow), grpc.InitialConnWindowSize(handshake.ConnWindow), grpc.NumStreamWorkers(streamWorkers)}
}

// ServeOption changes how Serve runs.
type ServeOption func(*serveConfig)

type serveConfig struct {
	logger hclog.Logger
}

// WithLogger sets the logger the plugin machinery writes to (stderr by
// default; stdout belongs to go-plugin's handshake).
func WithLogger(l hclog.Logger) ServeOption {
	return func(c *serveConfig) { c.logger = l }
}

// CPUProfileEnv names the environment variable that turns on a provider
// process's CPU profile: when set to PREFIX, Serve writes the process's CPU
// profile to PREFIX.PID (its whole life, up to the host's disconnect). The
// host's environment reaches its plugins, so `BULWARK_PROVIDER_CPUPROFILE=/tmp/p
// bulwark apply` profiles every plugin that apply starts (what the benchmark
// harness's -plugin-cpuprofile does). Nothing is written without it.
const CPUProfileEnv = "BULWARK_PROVIDER_CPUPROFILE"

// Serve serves p as a bulwark provider plugin and returns when the host
// disconnects, after calling p's Close when p is a Closer. Call it from
// main; it must be started by the bulwark host. When the host says a
// command has much work for the plugin (hugeheap.EnvHint), Serve first
// prepares the process's heap for it (sdk/hugeheap: one collection, and
// advice to the kernel).
func Serve(p Provider, opts ...ServeOption) {
	cfg := serveConfig{logger: hclog.New(&hclog.LoggerOptions{Output: os.Stderr, Level: hclog.Info, JSONFormat: true})}
	for _, o := range opts {
		o(&cfg)
	}
	if stop := startCPUProfile(cfg.logger); stop != nil {
		defer stop()
	}
	if os.Getenv(hugeheap.EnvHint) == "1" {
		// The host has much work for this process: its heap is prepared
		// for it before the handshake, so that the first calls find it
		// ready (hugeheap says why).
		hugeheap.Prepare(hugeheap.Size)
	}
	sc := &plugin.ServeConfig{
		HandshakeConfig:  Handshake,
		VersionedPlugins: VersionedPlugins(p),
		GRPCServer: func(opts []grpc.ServerOption) *grpc.Server {
			return grpc.NewServer(append(opts, transportServerOptions()...)...)
		},
		Logger: cfg.logger,
	}
	// A host that speaks mutual TLS (bulwark's, or go-plugin's AutoMTLS)
	// passes its certificate: serve with a P-256 certificate of this
	// process's own and announce it in the handshake (see mtls.go), not
	// with the P-521 one go-plugin would make. Anything going wrong on the
	// way leaves the start to go-plugin's AutoMTLS, which works with every
	// host, only slower.
	if clientPEM := os.Getenv(handshake.ClientCertEnv); clientPEM != "" && os.Getenv(Handshake.MagicCookieKey) == Handshake.MagicCookieValue {
		if tlsConfig, der, err := handshake.ServerTLS(clientPEM); err != nil {
			cfg.logger.Warn("plugin TLS: using go-plugin's AutoMTLS", "error", err)
		} else if restore, err := announceCert(der); err != nil {
			cfg.logger.Warn("plugin TLS: using go-plugin's AutoMTLS", "error", err)
		} else {
			sc.TLSProvider = func() (*tls.Config, error) { return tlsConfig, nil }
			defer restore()
		}
	}
	plugin.Serve(sc)
	if c, ok := p.(Closer); ok {
		if err := c.Close(); err != nil {
			cfg.logger.Error("closing the provider", "error", err)
		}
	}
}

// startCPUProfile starts the CPU profile CPUProfileEnv asks for and returns
// what stops it (nil when none was asked for or it could not start: a
// profile is a measurement aid, never a reason not to serve).
func startCPUProfile(logger hclog.Logger) func() {
	prefix := os.Getenv(CPUProfileEnv)
	if prefix == "" {
		return nil
	}
	path := fmt.Sprintf("%s.%d", prefix, os.Getpid())
	f, err := os.Create(path)
	if err != nil {
		logger.Warn("no CPU profile", "env", CPUProfileEnv, "error", err)
		return nil
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		logger.Warn("no CPU profile", "env", CPUProfileEnv, "error", err)
		f.Close()
		return nil
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			logger.Warn("CPU profile", "path", path, "error", err)
		}
	}
}
