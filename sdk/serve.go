package sdk

import (
	"os"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
)

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

// Serve serves p as a bulwark provider plugin and returns when the host
// disconnects, after calling p's Close when p is a Closer. Call it from
// main; it must be started by the bulwark host.
func Serve(p Provider, opts ...ServeOption) {
	cfg := serveConfig{logger: hclog.New(&hclog.LoggerOptions{Output: os.Stderr, Level: hclog.Info, JSONFormat: true})}
	for _, o := range opts {
		o(&cfg)
	}
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig:  Handshake,
		VersionedPlugins: VersionedPlugins(p),
		GRPCServer:       plugin.DefaultGRPCServer,
		Logger:           cfg.logger,
	})
	if c, ok := p.(Closer); ok {
		if err := c.Close(); err != nil {
			cfg.logger.Error("closing the provider", "error", err)
		}
	}
}
