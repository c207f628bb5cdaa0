package sdk

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	hs "github.com/bulwark-iac/bulwark/sdk/proto/handshake"
)

// hostSide is the host's half as go-plugin's client uses it: HostTLS's
// config and the PEM it put in the plugin's environment.
func hostSide(t *testing.T) (*tls.Config, string) {
	t.Helper()
	cmd := exec.Command("plugin")
	cmd.Env = []string{"A=1"}
	cfg, err := hs.HostTLS(cmd)
	if err != nil {
		t.Fatal(err)
	}
	var pemCert string
	for _, kv := range cmd.Env {
		if v, ok := strings.CutPrefix(kv, hs.ClientCertEnv+"="); ok {
			pemCert = v
		}
	}
	return cfg, pemCert
}

// announce does what go-plugin's client does with the certificate in a
// handshake line: trust it, and it alone.
func announce(t *testing.T, cfg *tls.Config, der []byte) {
	t.Helper()
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(c)
	cfg.RootCAs, cfg.ClientCAs = pool, pool
}

// p521Cert is a certificate as go-plugin's AutoMTLS makes it (an older host
// or plugin).
func p521Cert(t *testing.T) (tls.Certificate, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P521(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "localhost"}, DNSNames: []string{"localhost"},
		NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment | x509.KeyUsageKeyAgreement | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth, x509.ExtKeyUsageServerAuth},
		IsCA:        true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key},
		string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}

// tlsHandshake runs a TLS handshake between client and server over a pipe and
// returns each side's error.
func tlsHandshake(client, server *tls.Config) (clientErr, serverErr error) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	done := make(chan error, 1)
	go func() {
		s := tls.Server(a, server)
		err := s.Handshake()
		if err == nil {
			// TLS 1.3: the client's certificate is checked as the
			// client's Finished arrives; answer so the client sees it.
			_, err = s.Write([]byte{1})
		}
		if err != nil {
			a.Close() // the client must not wait for an answer
		}
		done <- err
	}()
	c := tls.Client(b, client)
	clientErr = c.Handshake()
	if clientErr == nil {
		_, clientErr = c.Read(make([]byte, 1))
	}
	b.Close()
	return clientErr, <-done
}

// Each side accepts only the certificate the other passed over the channel
// only the two of them share (the environment one way, the handshake line
// the other): a client or a server with any other certificate, or none, is
// refused. Either side may be go-plugin's AutoMTLS (P-521).
func TestMutualTLS(t *testing.T) {
	for _, tc := range []struct {
		name string
		// pair returns the host's and the plugin's configs.
		pair func(t *testing.T) (client, server *tls.Config)
		ok   bool
	}{
		{"host and its plugin", func(t *testing.T) (*tls.Config, *tls.Config) {
			host, pemCert := hostSide(t)
			server, der, err := hs.ServerTLS(pemCert)
			if err != nil {
				t.Fatal(err)
			}
			announce(t, host, der)
			return host, server
		}, true},
		{"a client without a certificate", func(t *testing.T) (*tls.Config, *tls.Config) {
			host, pemCert := hostSide(t)
			server, der, err := hs.ServerTLS(pemCert)
			if err != nil {
				t.Fatal(err)
			}
			announce(t, host, der)
			host.Certificates = nil
			return host, server
		}, false},
		{"a client with another certificate", func(t *testing.T) (*tls.Config, *tls.Config) {
			host, pemCert := hostSide(t)
			server, der, err := hs.ServerTLS(pemCert)
			if err != nil {
				t.Fatal(err)
			}
			announce(t, host, der)
			other, err := hs.NewCert()
			if err != nil {
				t.Fatal(err)
			}
			host.Certificates = []tls.Certificate{other}
			return host, server
		}, false},
		{"a server other than the one announced", func(t *testing.T) (*tls.Config, *tls.Config) {
			host, pemCert := hostSide(t)
			server, _, err := hs.ServerTLS(pemCert)
			if err != nil {
				t.Fatal(err)
			}
			_, otherDER, err := hs.ServerTLS(pemCert)
			if err != nil {
				t.Fatal(err)
			}
			announce(t, host, otherDER)
			return host, server
		}, false},
		{"no server certificate announced", func(t *testing.T) (*tls.Config, *tls.Config) {
			host, pemCert := hostSide(t)
			server, _, err := hs.ServerTLS(pemCert)
			if err != nil {
				t.Fatal(err)
			}
			return host, server
		}, false},
		{"an AutoMTLS host (P-521)", func(t *testing.T) (*tls.Config, *tls.Config) {
			cert, pemCert := p521Cert(t)
			server, der, err := hs.ServerTLS(pemCert)
			if err != nil {
				t.Fatal(err)
			}
			host := &tls.Config{Certificates: []tls.Certificate{cert}, ServerName: "localhost", MinVersion: tls.VersionTLS12}
			announce(t, host, der)
			return host, server
		}, true},
		{"an AutoMTLS plugin (P-521)", func(t *testing.T) (*tls.Config, *tls.Config) {
			host, pemCert := hostSide(t)
			cert, serverPEM := p521Cert(t)
			pool := x509.NewCertPool()
			pool.AppendCertsFromPEM([]byte(pemCert))
			server := &tls.Config{Certificates: []tls.Certificate{cert}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool, MinVersion: tls.VersionTLS12}
			block, _ := pem.Decode([]byte(serverPEM))
			announce(t, host, block.Bytes)
			return host, server
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client, server := tc.pair(t)
			cerr, serr := tlsHandshake(client, server)
			if tc.ok && (cerr != nil || serr != nil) {
				t.Fatalf("refused: client %v, server %v", cerr, serr)
			}
			if !tc.ok && cerr == nil && serr == nil {
				t.Fatal("accepted")
			}
		})
	}
}

// HostTLS makes a new key every time, puts only its certificate in the
// environment go-plugin would give (cmd.Env, then the host's), and replaces
// a PLUGIN_CLIENT_CERT set there or inherited.
func TestHostTLSEnvironment(t *testing.T) {
	t.Setenv(hs.ClientCertEnv, "inherited from the host's parent")
	t.Setenv("BULWARK_HOSTTLS_TEST", "host")
	cmd := exec.Command("plugin")
	cmd.Env = []string{"A=1", hs.ClientCertEnv + "=set", "B=2"}
	cfg, err := hs.HostTLS(cmd)
	if err != nil {
		t.Fatal(err)
	}
	var certs []string
	var others []string
	for _, kv := range cmd.Env {
		if v, ok := strings.CutPrefix(kv, hs.ClientCertEnv+"="); ok {
			certs = append(certs, v)
		} else {
			others = append(others, kv)
		}
		if strings.Contains(kv, "PRIVATE KEY") {
			t.Errorf("a private key in the plugin's environment: %.40s…", kv)
		}
	}
	if len(certs) != 1 || !strings.HasPrefix(certs[0], "-----BEGIN CERTIFICATE-----") {
		t.Fatalf("%s values %q, want the host's certificate alone", hs.ClientCertEnv, certs)
	}
	if len(others) < 3 || fmt.Sprint(others[:2]) != "[A=1 B=2]" || !slices.Contains(others, "BULWARK_HOSTTLS_TEST=host") {
		t.Errorf("the rest of the environment is not cmd.Env then the host's: %v", others)
	}
	block, _ := pem.Decode([]byte(certs[0]))
	if block == nil || string(block.Bytes) != string(cfg.Certificates[0].Certificate[0]) {
		t.Error("the certificate in the environment is not the one the config presents")
	}
	again, err := hs.HostTLS(exec.Command("plugin"))
	if err != nil {
		t.Fatal(err)
	}
	if string(again.Certificates[0].Certificate[0]) == string(cfg.Certificates[0].Certificate[0]) {
		t.Error("two starts share a certificate")
	}
}

func TestWithCert(t *testing.T) {
	der := []byte("a certificate's DER, longer than fifty bytes for go-plugin to read it")
	b64 := base64.RawStdEncoding.EncodeToString(der)
	for _, tc := range []struct{ line, want string }{
		{"1|1|unix|/tmp/plugin1|grpc|", "1|1|unix|/tmp/plugin1|grpc|" + b64},
		{"1|1|unix|/tmp/plugin1|grpc||true", "1|1|unix|/tmp/plugin1|grpc|" + b64 + "|true"},
		{"1|1|tcp|127.0.0.1:1234|grpc|", "1|1|tcp|127.0.0.1:1234|grpc|" + b64},
		{"1|1|unix|/tmp/plugin1|grpc|ALREADY", "1|1|unix|/tmp/plugin1|grpc|ALREADY"},
		{"1|1|unix|/tmp/plugin1|grpc", "1|1|unix|/tmp/plugin1|grpc"},
		{"not a handshake", "not a handshake"},
	} {
		if got := withCert(tc.line, der); got != tc.want {
			t.Errorf("withCert(%q) = %q, want %q", tc.line, got, tc.want)
		}
	}
}

// The first line written to os.Stdout reaches the real stdout with the
// certificate in it; when go-plugin never writes one, os.Stdout is put
// back.
func TestAnnounceCert(t *testing.T) {
	der := []byte("a certificate's DER, longer than fifty bytes for go-plugin to read it")
	for _, tc := range []struct {
		name    string
		write   string // what "go-plugin" prints
		replace bool   // whether it then points os.Stdout elsewhere
		want    string
	}{
		{"handshake", "1|1|unix|/tmp/p|grpc|\n", true, "1|1|unix|/tmp/p|grpc|" + base64.RawStdEncoding.EncodeToString(der) + "\n"},
		{"returned before its handshake", "", false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			saved := os.Stdout
			defer func() { os.Stdout = saved }()
			os.Stdout = w
			restore, err := announceCert(der)
			if err != nil {
				t.Fatal(err)
			}
			if os.Stdout == w {
				t.Fatal("os.Stdout not redirected")
			}
			fmt.Print(tc.write)
			elsewhere := os.Stdout
			if tc.replace {
				elsewhere = saved
				os.Stdout = elsewhere
			}
			restore()
			if tc.replace && os.Stdout != elsewhere {
				t.Error("restore undid go-plugin's own os.Stdout")
			}
			if !tc.replace && os.Stdout != w {
				t.Error("os.Stdout not put back")
			}
			w.Close()
			got, err := io.ReadAll(r)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("stdout got %q, want %q", got, tc.want)
			}
		})
	}
}
