// Package pluginhost is the host side of the provider contract: it finds
// provider executables, starts the ones a run needs through hashicorp/go-plugin
// (gRPC, protocol version negotiated, mutual TLS with fresh keys on both
// sides: see handshake.HostTLS), drives each through the
// providers.Interface of the version it speaks (grpcv1 for bulwark's own
// protocol, version 1; tfplugin's Adapter for a provider built for
// Terraform, protocols 5 and 6), and gives the rest of the core a Plugin
// whose methods take a context per call and return plain Go errors.
//
// Guarantees:
//   - every gRPC failure is translated in one place (errors.go): a plugin that
//     died or stopped answering becomes an error wrapping ErrPluginExited, never
//     a panic of the host;
//   - a plugin that died is started again (and configured again) on the next
//     call, so a compensation can run after the Create that crashed it;
//   - Host.Close kills every plugin process it started; on Linux each plugin is
//     also started with a parent-death signal, so even a kill -9 of the host
//     leaves no plugin behind.
package pluginhost
