package tfplugin

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/bulwark-iac/bulwark/core/pluginhost/tfplugin/internal/tfplugin5"
	"github.com/bulwark-iac/bulwark/core/pluginhost/tfplugin/internal/tfplugin6"
	"github.com/bulwark-iac/bulwark/sdk/proto/handshake"
)

// The go-plugin handshake of Terraform's providers: the magic cookie every
// provider built on Terraform's SDKs checks before it serves (Terraform's
// and OpenTofu's own value), and the name the provider is dispensed under.
const (
	MagicCookieKey   = "TF_PLUGIN_MAGIC_COOKIE"
	MagicCookieValue = "d602bf8f470bc67ca7faa0386276bbdd4330efaf76d1a219cb4d6991ca9872b2"
	PluginName       = "provider"
)

// Protocol versions this package speaks.
const (
	Protocol5 = 5
	Protocol6 = 6
)

// HandshakeConfig is the handshake Terraform offers its providers. Its
// ProtocolVersion is unused: the versions come from VersionedPlugins.
func HandshakeConfig() plugin.HandshakeConfig {
	return plugin.HandshakeConfig{MagicCookieKey: MagicCookieKey, MagicCookieValue: MagicCookieValue}
}

// VersionedPlugins are the plugin sets for protocols 5 and 6: dispensing
// PluginName gives a *Provider speaking the negotiated version.
func VersionedPlugins() map[int]plugin.PluginSet {
	return map[int]plugin.PluginSet{
		Protocol5: {PluginName: &grpcPlugin{version: Protocol5}},
		Protocol6: {PluginName: &grpcPlugin{version: Protocol6}},
	}
}

// grpcPlugin is the host's side of one protocol version in a plugin set.
type grpcPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	version int
}

var _ plugin.GRPCPlugin = (*grpcPlugin)(nil)

// GRPCServer is the provider's side, which the host never serves.
func (*grpcPlugin) GRPCServer(*plugin.GRPCBroker, *grpc.Server) error {
	return errors.New("tfplugin: the host side serves no provider")
}

// GRPCClient returns a *Provider that speaks the plugin's version over conn.
func (g *grpcPlugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, conn *grpc.ClientConn) (interface{}, error) {
	return NewProvider(conn, g.version)
}

// NewProvider returns a Provider speaking protocol version (5 or 6) over
// conn, a connection to a provider's gRPC server made elsewhere (a test's,
// a reattached provider's). Start is the usual way to get one.
func NewProvider(conn grpc.ClientConnInterface, version int) (*Provider, error) {
	var w wire
	switch version {
	case Protocol5:
		w = &wire5{c: tfplugin5.NewProviderClient(conn)}
	case Protocol6:
		w = &wire6{c: tfplugin6.NewProviderClient(conn)}
	default:
		return nil, fmt.Errorf("tfplugin: protocol version %d is not spoken (5 and 6 are)", version)
	}
	return &Provider{w: w, version: version}, nil
}

// StartOptions say how to start a provider executable.
type StartOptions struct {
	// Cmd is the process to start (exec.Command of the provider's
	// executable, with what the caller sets on it: a parent-death signal,
	// a folder). Its Env, when nil, is the host's environment, as
	// Terraform gives its providers (their credentials come from it); the
	// caller's own Env is used as it is. Either way any
	// PLUGIN_CLIENT_CERT is dropped: go-plugin sets the host's.
	Cmd *exec.Cmd
	// Logger receives go-plugin's log and the provider's stderr; nil
	// discards.
	Logger hclog.Logger
	// StartTimeout bounds the handshake (default 20s).
	StartTimeout time.Duration
}

// ClientConfig is the go-plugin client configuration Terraform uses for a
// provider, for opts.Cmd: Terraform's handshake, protocols 5 and 6, gRPC
// only, go-plugin's automatic mutual TLS (the host's key on P-256, see
// below), not managed (the caller kills the client). It sets opts.Cmd.Env (see StartOptions).
func ClientConfig(opts StartOptions) *plugin.ClientConfig {
	logger := opts.Logger
	quiet := logger == nil || logger.GetLevel() == hclog.NoLevel || logger.GetLevel() == hclog.Off
	if quiet {
		// A logger that writes nothing (hclog's null logger has no level)
		// is given to go-plugin as one that is off: go-plugin then skips
		// the provider's stderr without parsing it. Providers on
		// Terraform's frameworks log every call at trace level as JSON
		// lines, and parsing them only to drop them was most of the
		// host's CPU on a stack of small resources (bench/README.md,
		// "Terraform-protocol rows").
		logger = hclog.New(&hclog.LoggerOptions{Level: hclog.Off, Output: io.Discard})
	}
	timeout := opts.StartTimeout
	if timeout == 0 {
		timeout = 20 * time.Second
	}
	env := opts.Cmd.Env
	if env == nil {
		env = os.Environ()
	}
	clean := make([]string, 0, len(env))
	for _, kv := range env {
		// An inherited certificate (a host that is itself a go-plugin
		// plugin) would be trusted by the provider in place of ours.
		if !strings.HasPrefix(kv, handshake.ClientCertEnv+"=") {
			clean = append(clean, kv)
		}
	}
	if quiet {
		clean = quietProviderLogs(clean)
	}
	cfg := &plugin.ClientConfig{
		HandshakeConfig:  HandshakeConfig(),
		VersionedPlugins: VersionedPlugins(),
		Cmd:              opts.Cmd,
		SkipHostEnv:      true, // the host's environment is in Cmd.Env already, or deliberately not
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		AutoMTLS:         true,
		Managed:          false,
		StartTimeout:     timeout,
		Logger:           logger,
		GRPCDialOptions:  handshake.DialOptions(),
	}
	// The mutual TLS AutoMTLS makes, with the host's side's key on P-256:
	// the host's fresh certificate in PLUGIN_CLIENT_CERT, which the
	// provider's go-plugin trusts alone, and only the certificate the
	// provider announces in its handshake line trusted in return (go-plugin
	// loads it into RootCAs; a provider that announces none is refused).
	// AutoMTLS's own P-521 key, its certificate's signature and the
	// handshake's were the larger part of the host's CPU at a provider's
	// start; the provider's certificate stays its own (as for bulwark's
	// plugins, handshake.HostTLS). Should no key be made, AutoMTLS makes one.
	if cert, err := handshake.NewCert(); err == nil {
		pemCert := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Certificate[0]})
		clean = append(clean, handshake.ClientCertEnv+"="+string(pemCert))
		cfg.AutoMTLS = false
		cfg.TLSConfig = &tls.Config{
			Certificates: []tls.Certificate{cert},
			RootCAs:      x509.NewCertPool(), // empty: only the announced certificate is trusted
			ServerName:   handshake.CertName,
			MinVersion:   tls.VersionTLS12,
		}
	}
	opts.Cmd.Env = clean
	return cfg
}

// quietProviderLogs sets to off, where env does not set them already, the
// variables terraform-plugin-log reads for the levels of the loggers of
// terraform-plugin-go, -framework, -sdk/v2 and the provider's own root
// logger. A provider on Terraform's frameworks
// otherwise writes a JSON line to stderr at trace level for every call,
// which the host only throws away, and its CPU is the larger part of a
// no-op apply's (bench/profile-terraform-*.md). A level the
// user set (to debug a provider through BULWARK_LOG) is kept.
func quietProviderLogs(env []string) []string {
	set := make(map[string]bool, len(env))
	for _, kv := range env {
		if k, _, ok := strings.Cut(kv, "="); ok {
			set[k] = true
		}
	}
	for _, k := range []string{
		"TF_LOG_SDK", "TF_LOG_SDK_PROTO", "TF_LOG_SDK_FRAMEWORK",
		"TF_LOG_SDK_HELPER_SCHEMA", "TF_LOG_SDK_HELPER_RESOURCE", "TF_LOG_PROVIDER",
	} {
		if !set[k] {
			env = append(env, k+"=off")
		}
	}
	return env
}

// Start starts a provider executable and completes the handshake: the
// returned Provider speaks the version the provider chose (5 or 6) and
// owns the process (Close kills it). A provider that fails to start is
// killed, and the error says why (go-plugin's words).
func Start(ctx context.Context, opts StartOptions) (*Provider, error) {
	if opts.Cmd == nil {
		return nil, errors.New("tfplugin: no command to start")
	}
	client := plugin.NewClient(ClientConfig(opts))
	rpc, err := client.Client()
	if err != nil {
		client.Kill()
		return nil, fmt.Errorf("start %s: %w", opts.Cmd.Path, err)
	}
	raw, err := rpc.Dispense(PluginName)
	if err != nil {
		client.Kill()
		return nil, fmt.Errorf("start %s: %w", opts.Cmd.Path, err)
	}
	p, ok := raw.(*Provider)
	if !ok {
		client.Kill()
		return nil, fmt.Errorf("start %s: dispensed %T, not a provider", opts.Cmd.Path, raw)
	}
	if err := ctx.Err(); err != nil {
		client.Kill()
		return nil, err
	}
	p.client = client
	if rc := client.ReattachConfig(); rc != nil {
		p.pid = rc.Pid
	}
	return p, nil
}
