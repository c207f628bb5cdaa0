// Package handshake is the part of the provider wire contract that is not
// in the proto: the go-plugin handshake (magic cookie, protocol version,
// plugin name), the transport settings both sides use, and the mutual TLS
// exchange between a host and its plugin (both halves: the host's, used by
// the plugin host and by providertest, and the plugin's, used by the sdk's
// Serve). The host imports it and sdk/proto alone of the sdk module; it
// never changes in a way an existing plugin or host would notice.
package handshake

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
)

// ProtocolVersion is the version of the provider contract bulwark's own
// gRPC protocol (sdk/proto/providerv1) is.
const ProtocolVersion = 1

// PluginName is the name under which a provider is dispensed in a go-plugin
// plugin set. It never changes.
const PluginName = "provider"

// The go-plugin magic cookie shared by the host and every provider. It
// never changes.
const (
	MagicCookieKey   = "BULWARK_PROVIDER_PLUGIN"
	MagicCookieValue = "7f3d1c0e-bulwark-provider-contract"
)

// Config is the go-plugin handshake shared by the host and every provider.
// The protocol version is negotiated through the versioned plugin sets, so
// ProtocolVersion here is only the fallback.
func Config() plugin.HandshakeConfig {
	return plugin.HandshakeConfig{ProtocolVersion: ProtocolVersion, MagicCookieKey: MagicCookieKey, MagicCookieValue: MagicCookieValue}
}

// The HTTP/2 windows of the connection between host and plugin: fixed and
// large (a host and its plugin are one machine; a batch of reads may be
// megabytes). A fixed window also turns off grpc-go's bandwidth-delay
// estimate, which pings the other side as data arrives: frames, system
// calls and wake-ups of both processes on every call, for a link that
// never changes.
const (
	StreamWindow = 4 << 20
	ConnWindow   = 16 << 20
)

// DialOptions are the host's side of the transport settings (see
// StreamWindow).
func DialOptions() []grpc.DialOption {
	return []grpc.DialOption{grpc.WithInitialWindowSize(StreamWindow), grpc.WithInitialConnWindowSize(ConnWindow)}
}

// The mutual TLS between a host and its plugin: see the sdk's mtls.go for
// the whole exchange and why it is not go-plugin's AutoMTLS.

// ClientCertEnv is where go-plugin's AutoMTLS puts the host's certificate
// (PEM) in the plugin's environment; go-plugin's server reads it from there.
const ClientCertEnv = "PLUGIN_CLIENT_CERT"

// CertName is the name both sides' certificates are for and the host dials:
// go-plugin's AutoMTLS uses it too.
const CertName = "localhost"

// NewCert makes a fresh ECDSA P-256 key and a self-signed certificate for it,
// valid for CertName as a server and a client, in memory only. The
// validity period is long, as AutoMTLS's is, so that a long-lived plugin
// process's reconnection never fails on an expired certificate: the key
// lives no longer than the process that made it.
func NewCert() (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("plugin TLS key: %w", err)
	}
	sn, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("plugin TLS certificate serial: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          sn,
		Subject:               pkix.Name{CommonName: CertName, Organization: []string{"bulwark"}},
		DNSNames:              []string{CertName},
		NotBefore:             now.Add(-30 * time.Second),
		NotAfter:              now.Add(30 * 365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
		IsCA:                  true, // its own root: each side trusts exactly this certificate
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("plugin TLS certificate: %w", err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("plugin TLS certificate: %w", err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, nil
}

// HostTLS prepares cmd, a plugin process a host is about to start through
// go-plugin, for the mutual TLS Serve speaks, and returns the host's TLS
// config for go-plugin's ClientConfig.TLSConfig (the plugin host's side, and
// providertest's, which starts a plugin as the host does). It sets cmd.Env to the
// environment go-plugin would give the process (cmd.Env, then the host's
// environment) with the host's fresh certificate as the one
// PLUGIN_CLIENT_CERT, replacing any the host inherited (a bulwark run by a
// go-plugin plugin has its parent's). Start cmd with
// ClientConfig.SkipHostEnv (go-plugin would append the host's environment
// again, and an inherited PLUGIN_CLIENT_CERT would win) and without
// AutoMTLS.
//
// The config presents the host's certificate and trusts no server
// certificate until go-plugin loads the one the plugin announces in its
// handshake line into RootCAs: a plugin that announces none is refused.
// Every call makes a new key: call it once per process start.
func HostTLS(cmd *exec.Cmd) (*tls.Config, error) {
	cert, err := NewCert()
	if err != nil {
		return nil, err
	}
	env := append(cmd.Env[:len(cmd.Env):len(cmd.Env)], os.Environ()...)
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if !strings.HasPrefix(kv, ClientCertEnv+"=") {
			out = append(out, kv)
		}
	}
	pemCert := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Certificate[0]})
	cmd.Env = append(out, ClientCertEnv+"="+string(pemCert))
	return &tls.Config{
		Certificates: []tls.Certificate{cert},
		RootCAs:      x509.NewCertPool(), // empty: only the announced certificate is trusted
		ServerName:   CertName,
		MinVersion:   tls.VersionTLS13,
	}, nil
}

// ServerTLS is the plugin's side (the sdk's Serve): a fresh certificate of its own, and a
// config that requires a client certificate and accepts only the host's,
// clientPEM (from PLUGIN_CLIENT_CERT). It returns the certificate's DER, to
// announce.
func ServerTLS(clientPEM string) (*tls.Config, []byte, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM([]byte(clientPEM)) {
		return nil, nil, fmt.Errorf("%s holds no PEM certificate", ClientCertEnv)
	}
	cert, err := NewCert()
	if err != nil {
		return nil, nil, err
	}
	return &tls.Config{
		Certificates: []tls.Certificate{cert},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    pool,
		MinVersion:   tls.VersionTLS13,
	}, cert.Certificate[0], nil
}
