// Package grpcv1 is bulwark's own provider protocol, version 1
// (sdk/proto/providerv1), on the host's side: one implementation of
// providers.Interface, over the gRPC connection go-plugin makes to a plugin
// process. It holds the client, the conversions between the host's types
// and the wire's, and the go-plugin plugin set the plugin host offers for
// the version. The wire contract it shares with the sdk's Serve is the
// proto and sdk/proto/handshake; nothing of the sdk's author API.
package grpcv1

import (
	"context"
	"errors"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/bulwark-iac/bulwark/sdk/proto/handshake"
)

// ProtocolVersion is the go-plugin protocol version this package speaks.
const ProtocolVersion = handshake.ProtocolVersion

// Plugin is the host's side of the v1 protocol in a go-plugin plugin set:
// dispensing it gives a providers.Interface on the plugin's connection.
type Plugin struct {
	plugin.NetRPCUnsupportedPlugin
}

var _ plugin.GRPCPlugin = (*Plugin)(nil)

// GRPCServer is the plugin's side, which the host never serves.
func (*Plugin) GRPCServer(*plugin.GRPCBroker, *grpc.Server) error {
	return errors.New("grpcv1: the host side serves no provider")
}

// GRPCClient returns a providers.Interface that speaks v1 over conn.
func (*Plugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, conn *grpc.ClientConn) (interface{}, error) {
	return NewClient(conn), nil
}

// PluginSet is the plugin set the host offers for version 1.
func PluginSet() plugin.PluginSet {
	return plugin.PluginSet{handshake.PluginName: &Plugin{}}
}
