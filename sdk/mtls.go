package sdk

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"os"
	"os/exec"
	"strings"
	"time"
)

// The mutual TLS between a host and its plugin.
//
// go-plugin's AutoMTLS makes both sides generate an ECDSA P-521 key and a
// self-signed certificate at every start, and the TLS handshake then signs
// and verifies with them: most of the CPU a command that starts one plugin
// spends, in the host and as much in the plugin (P-521 has no assembly in
// Go). This file does the same exchange with ECDSA P-256 keys, an order of
// magnitude cheaper. (Ed25519, measured too, is a little faster in a
// process that makes many handshakes but slower in one that makes a single
// one, as a plugin process does: its base point table is computed at first
// use, where P-256's is built into the binary. The figures are in bulwark's
// bench/history.md.) It goes over the very channels AutoMTLS uses, so
// either side still works with the other's go-plugin AutoMTLS:
//
//   - the host generates its key and certificate, passes the certificate
//     (public) to the plugin in PLUGIN_CLIENT_CERT, and dials with a TLS
//     config that trusts nothing but the certificate the plugin announces;
//   - the plugin (Serve) generates its own key and certificate, trusts only
//     the host's certificate from PLUGIN_CLIENT_CERT (its client must
//     present it: tls.RequireAndVerifyClientCert), and announces its
//     certificate in the 6th field of go-plugin's handshake line, on its
//     stdout, which only the host that started it reads.
//
// Each key is made fresh by the process that uses it, lives only in its
// memory and dies with it: no private key is ever written to disk or passed
// to another process. In particular the host does not make the plugin's key
// and hand it over in the environment (or an inherited descriptor), which
// would have let the host pick the faster algorithm alone: the plugin's
// environment is inherited by every process it starts (the aws SDK's
// credential_process, a shell a provider runs), and a plugin built on an
// older sdk would not even know to remove it.
//
// go-plugin's server announces a certificate only when it generated it
// itself (AutoMTLS); with a TLSProvider of its own it announces nothing.
// Serve therefore passes its own TLS config as the TLSProvider and writes
// its certificate into the handshake line on the way out: go-plugin prints
// that line to os.Stdout, which Serve points at a pipe for the one line
// (see announceCert). The host side, in go-plugin's client, loads an
// announced certificate into the TLS config's RootCAs whether or not
// AutoMTLS is on.
//
// Compatibility, both ways:
//   - a host on plain AutoMTLS (an older bulwark) sends its P-521
//     certificate in PLUGIN_CLIENT_CERT and loads the P-256 one Serve
//     announces; Go's TLS verifies either kind;
//   - a plugin on plain AutoMTLS (an older sdk) receives the host's P-256
//     certificate, makes and announces its P-521 one, which the host then
//     trusts; it costs that plugin what it always did.

// clientCertEnv is where go-plugin's AutoMTLS puts the host's certificate
// (PEM) in the plugin's environment; go-plugin's server reads it from there.
const clientCertEnv = "PLUGIN_CLIENT_CERT"

// certName is the name both sides' certificates are for and the host dials:
// go-plugin's AutoMTLS uses it too.
const certName = "localhost"

// newCert makes a fresh ECDSA P-256 key and a self-signed certificate for it,
// valid for certName as a server and a client, in memory only. The
// validity period is long, as AutoMTLS's is, so that a long-lived plugin
// process's reconnection never fails on an expired certificate: the key
// lives no longer than the process that made it.
func newCert() (tls.Certificate, error) {
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
		Subject:               pkix.Name{CommonName: certName, Organization: []string{"bulwark"}},
		DNSNames:              []string{certName},
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
// config for go-plugin's ClientConfig.TLSConfig. It sets cmd.Env to the
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
	cert, err := newCert()
	if err != nil {
		return nil, err
	}
	env := append(cmd.Env[:len(cmd.Env):len(cmd.Env)], os.Environ()...)
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if !strings.HasPrefix(kv, clientCertEnv+"=") {
			out = append(out, kv)
		}
	}
	pemCert := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Certificate[0]})
	cmd.Env = append(out, clientCertEnv+"="+string(pemCert))
	return &tls.Config{
		Certificates: []tls.Certificate{cert},
		RootCAs:      x509.NewCertPool(), // empty: only the announced certificate is trusted
		ServerName:   certName,
		MinVersion:   tls.VersionTLS13,
	}, nil
}

// serverTLS is the plugin's side: a fresh certificate of its own, and a
// config that requires a client certificate and accepts only the host's,
// clientPEM (from PLUGIN_CLIENT_CERT). It returns the certificate's DER, to
// announce.
func serverTLS(clientPEM string) (*tls.Config, []byte, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM([]byte(clientPEM)) {
		return nil, nil, fmt.Errorf("%s holds no PEM certificate", clientCertEnv)
	}
	cert, err := newCert()
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

// withCert returns go-plugin's handshake line (without its newline) with
// der in its 6th field, where go-plugin's client looks for the server's
// certificate: CORE|APP|NETWORK|ADDR|PROTOCOL|CERT[|MUX]. A line that is no
// handshake line, or already names a certificate, is returned unchanged.
func withCert(line string, der []byte) string {
	parts := strings.Split(line, "|")
	if len(parts) < 6 || parts[5] != "" {
		return line
	}
	parts[5] = base64.RawStdEncoding.EncodeToString(der)
	return strings.Join(parts, "|")
}

// announceCert makes the first line written to os.Stdout, go-plugin's
// handshake line, reach the real stdout with der in it (see withCert).
// os.Stdout points at a pipe until that line has gone through; go-plugin
// itself then points os.Stdout at its own stdio stream, so nothing else is
// written to the pipe. Call the returned function when plugin.Serve
// returns: it puts os.Stdout back if go-plugin did not replace it (it
// returned before its handshake) and waits for what the pipe held to be
// forwarded. Only the goroutine that calls plugin.Serve may call this and
// its result: they set os.Stdout, as go-plugin does.
func announceCert(der []byte) (func(), error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("plugin handshake: %w", err)
	}
	stdout := os.Stdout
	os.Stdout = w
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer r.Close()
		line, err := bufio.NewReader(r).ReadString('\n')
		if err == nil {
			line = withCert(strings.TrimSuffix(line, "\n"), der) + "\n"
		} else if !errors.Is(err, io.EOF) {
			return
		}
		// The handshake is on its way: go-plugin writes nothing more here.
		// (Closing the write end while go-plugin Syncs it only makes that
		// Sync fail, which it ignores.)
		w.Close()
		io.WriteString(stdout, line)
		stdout.Sync()
	}()
	return func() {
		if os.Stdout == w {
			os.Stdout = stdout
		}
		w.Close()
		<-done
	}, nil
}
