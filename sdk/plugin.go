package sdk

import (
	"context"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/bulwark-iac/bulwark/sdk/proto/handshake"
	pb "github.com/bulwark-iac/bulwark/sdk/proto/providerv1"
)

// ProtocolVersion is the version of the provider contract this package speaks.
const ProtocolVersion = handshake.ProtocolVersion

// PluginName is the name under which a provider is dispensed in a go-plugin
// plugin set. It never changes.
const PluginName = handshake.PluginName

// Handshake is the go-plugin handshake shared by the host and every provider.
// The magic cookie never changes; the protocol version is negotiated through
// VersionedPlugins, so ProtocolVersion here is only the fallback.
var Handshake = handshake.Config()

// GRPCProviderPlugin adapts a Provider to go-plugin's gRPC transport. Impl is
// set on the provider side. The calling side (providertest, which starts a
// plugin as the host does) leaves it nil and receives a Provider backed by
// the connection from GRPCClient; the bulwark host dispenses its own
// (core/pluginhost/grpcv1).
type GRPCProviderPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	Impl Provider
}

var _ plugin.GRPCPlugin = (*GRPCProviderPlugin)(nil)

// GRPCServer registers the provider's v1 service.
func (p *GRPCProviderPlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	pb.RegisterProviderServer(s, newServer(p.Impl))
	return nil
}

// GRPCClient returns a Provider that speaks v1 over conn.
func (p *GRPCProviderPlugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, conn *grpc.ClientConn) (interface{}, error) {
	return newGRPCClient(conn), nil
}

// VersionedPlugins returns the plugin sets keyed by protocol version for a
// provider that serves impl (nil on the calling side: providertest).
func VersionedPlugins(impl Provider) map[int]plugin.PluginSet {
	return map[int]plugin.PluginSet{
		ProtocolVersion: {PluginName: &GRPCProviderPlugin{Impl: impl}},
	}
}
