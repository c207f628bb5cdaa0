package pluginhost

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"math/big"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"

	"github.com/bulwark-iac/bulwark/core/pluginhost/grpcv1"
	"github.com/bulwark-iac/bulwark/core/providers"
	"github.com/bulwark-iac/bulwark/sdk/proto/handshake"
)

// The mutual TLS between the host and its plugins (see handshake.HostTLS): each
// side made its own key, each trusts only the other's certificate, and a
// plugin on either side's older machinery (go-plugin's AutoMTLS) still
// works.

// The host runs a plugin built on this sdk and one built on the previous
// sdk, which served with go-plugin's AutoMTLS (a P-521 certificate it
// announces); each is authenticated by the certificate it announced.
func TestHostMutualTLSWithEitherSDK(t *testing.T) {
	for _, tc := range []struct {
		name, mode string
		curve      elliptic.Curve // of the certificate the plugin presents
	}{
		{"this sdk", "", elliptic.P256()},
		{"previous sdk: go-plugin AutoMTLS", "automtls", elliptic.P521()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := testPlugin(t)
			t.Setenv("TESTPLUGIN_MODE", tc.mode)
			h := New(Options{Dirs: []string{dir}, StartTimeout: 30 * time.Second})
			defer h.Close()
			p, err := h.Start(ctxT(t), Config{Name: "t", Source: "test", DataDir: t.TempDir()})
			if err != nil {
				t.Fatalf("Start: %v", err)
			}
			if _, err := p.Read(ctxT(t), &providers.ReadRequest{Type: "thing", Name: "x"}); err != nil {
				t.Fatalf("Read: %v", err)
			}
			// A client that is not the host reaches the handshake far
			// enough to see the server's certificate (TLS 1.3 refuses the
			// client after that), and is refused.
			state, err := dialAsStranger(t, pluginAddr(t, p), foreignCert(t))
			if state.PeerCertificates == nil {
				t.Fatalf("no server certificate seen (%v)", err)
			}
			if got := curveOf(state); got != tc.curve {
				t.Errorf("the plugin presents a certificate on %v, want %v", got, tc.curve.Params().Name)
			}
			if err == nil {
				t.Fatal("a client with a certificate of its own was served")
			}
		})
	}
}

// A plugin built on this sdk serves only the host that started it: a
// client with no certificate, or with a certificate the host did not pass
// it, is refused in the TLS handshake; the host is still served after.
func TestPluginRefusesClientsButItsHost(t *testing.T) {
	f := start(t, nil)
	addr := pluginAddr(t, f.plugin)
	for _, tc := range []struct {
		name string
		cert *tls.Certificate
	}{
		{"no certificate", nil},
		{"another certificate", foreignCert(t)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := dialAsStranger(t, addr, tc.cert)
			if err == nil {
				t.Fatal("served")
			}
			if !strings.Contains(err.Error(), "tls:") {
				t.Fatalf("refused, but not by TLS: %v", err)
			}
		})
	}
	if _, err := f.plugin.Read(ctxT(t), &providers.ReadRequest{Type: "thing", Name: "x"}); err != nil {
		t.Fatalf("the host after the strangers: %v", err)
	}
}

// The host trusts no server certificate but the one the plugin announced on
// its stdout: a plugin that serves TLS without announcing its certificate
// is refused, not trusted on first use.
func TestHostRefusesUnannouncedServerCertificate(t *testing.T) {
	dir := testPlugin(t)
	t.Setenv("TESTPLUGIN_MODE", "unannounced")
	h := New(Options{Dirs: []string{dir}, StartTimeout: 30 * time.Second})
	defer h.Close()
	_, err := h.Start(ctxT(t), Config{Name: "t", Source: "test", DataDir: t.TempDir()})
	if err == nil {
		t.Fatal("Start succeeded with a server the host cannot authenticate")
	}
	if !strings.Contains(err.Error(), "TLS handshake failed") || errors.Is(err, ErrPluginExited) {
		t.Fatalf("Start = %v, want a failed TLS handshake", err)
	}
	waitNoneRunning(t, filepath.Join(dir, Prefix+"test"), 10*time.Second)
}

// A host on plain go-plugin AutoMTLS (the previous bulwark, or any
// go-plugin host) runs a plugin built on this sdk: the plugin trusts that
// host's P-521 certificate and announces its own P-256 one.
func TestAutoMTLSHostRunsPlugin(t *testing.T) {
	dir := testPlugin(t)
	t.Setenv("TESTPLUGIN_MODE", "")
	client := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  handshake.Config(),
		VersionedPlugins: map[int]plugin.PluginSet{grpcv1.ProtocolVersion: grpcv1.PluginSet()},
		Cmd:              exec.Command(filepath.Join(dir, Prefix+"test")),
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		AutoMTLS:         true,
		StartTimeout:     30 * time.Second,
		Logger:           hclog.NewNullLogger(),
	})
	defer client.Kill()
	rpc, err := client.Client()
	if err != nil {
		t.Fatalf("start under an AutoMTLS host: %v", err)
	}
	raw, err := rpc.Dispense(handshake.PluginName)
	if err != nil {
		t.Fatal(err)
	}
	schema, err := raw.(providers.Interface).GetSchema(ctxT(t), &providers.GetSchemaRequest{})
	if err != nil {
		t.Fatalf("GetSchema under an AutoMTLS host: %v", err)
	}
	if schema.ProviderName != "test" {
		t.Fatalf("schema %+v", schema)
	}
	state, err := dialAsStranger(t, client.ReattachConfig().Addr, foreignCert(t))
	if err == nil {
		t.Fatal("a stranger was served")
	}
	if curveOf(state) != elliptic.P256() {
		t.Fatalf("the plugin does not present its own P-256 certificate to an AutoMTLS host (%v)", err)
	}
}

// curveOf is the curve of the ECDSA certificate the server presented (nil
// for none or another kind).
func curveOf(state tls.ConnectionState) elliptic.Curve {
	if len(state.PeerCertificates) == 0 {
		return nil
	}
	if k, ok := state.PeerCertificates[0].PublicKey.(*ecdsa.PublicKey); ok {
		return k.Curve
	}
	return nil
}

// pluginAddr is the address the plugin's current process listens on.
func pluginAddr(t *testing.T, p *Plugin) net.Addr {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.client == nil {
		t.Fatal("no plugin process")
	}
	return p.client.ReattachConfig().Addr
}

// dialAsStranger speaks TLS to addr as a client that is not the host,
// presenting cert (none when nil), and writes a byte: it returns what it saw
// of the server and the error that refused it (nil when it was served).
func dialAsStranger(t *testing.T, addr net.Addr, cert *tls.Certificate) (tls.ConnectionState, error) {
	t.Helper()
	raw, err := net.DialTimeout(addr.Network(), addr.String(), 10*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	defer raw.Close()
	cfg := &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12, NextProtos: []string{"h2"}}
	if cert != nil {
		cfg.Certificates = []tls.Certificate{*cert}
	}
	conn := tls.Client(raw, cfg)
	if err := conn.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	err = conn.Handshake()
	if err == nil {
		// TLS 1.3: the server checks the client's certificate after the
		// client has finished; its refusal arrives as an alert on the next
		// read. A served client reads the server's HTTP/2 settings instead.
		_, err = conn.Read(make([]byte, 1))
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("neither served nor refused within the deadline: %v", err)
	}
	return conn.ConnectionState(), err
}

// foreignCert is a fresh self-signed client certificate the plugin was
// never told about.
func foreignCert(t *testing.T) *tls.Certificate {
	t.Helper()
	pub, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: "localhost"}, DNSNames: []string{"localhost"},
		NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth, x509.ExtKeyUsageServerAuth},
		IsCA:        true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, pub, key)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}
