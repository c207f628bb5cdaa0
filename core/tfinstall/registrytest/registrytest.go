// Package registrytest runs a provider registry on loopback for tests: it
// speaks Terraform's provider registry protocol (service discovery, the
// versions and download endpoints), serves the archives, SHA256SUMS and
// its detached OpenPGP signature made with a key generated for the server,
// over TLS with a certificate of its own, and can be told to misbehave.
package registrytest

import (
	"archive/zip"
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/ProtonMail/go-crypto/openpgp/packet"

	"github.com/bulwark-iac/bulwark/core/tfinstall"
)

// Provider is one provider the registry offers.
type Provider struct {
	Namespace, Type string
	Versions        []string
	// Platforms each version is built for; empty: the current platform.
	Platforms []tfinstall.Platform
	// Protocols each version announces; empty: ["5.0"].
	Protocols []string
	// Exe is the executable's content for a version; nil: a shell script
	// that prints the version.
	Exe func(version string, p tfinstall.Platform) []byte
}

// Fault makes the server misbehave.
type Fault struct {
	WrongShasum      bool // the download document's shasum is another archive's
	CorruptArchive   bool // the archive served is not the one SHA256SUMS lists
	ForeignSignature bool // SHA256SUMS is signed by a key nobody knows
	NoSignature      bool // the download document gives no signature URL
	HideKeys         bool // the download document names no signing key
	MissingDownload  bool // the download document answers 404
}

// Server is a running registry.
type Server struct {
	// Host is HOST:PORT of the server, for a source address
	// (Host + "/NAMESPACE/TYPE").
	Host string
	// CertPEM is the server's certificate, to trust (e.g. as
	// SSL_CERT_FILE, or with Client).
	CertPEM []byte
	// Key signs SHA256SUMS; PublicKey is its armored public key.
	Key       *openpgp.Entity
	PublicKey string

	srv       *httptest.Server
	foreign   *openpgp.Entity
	providers []Provider
	archives  map[string][]byte // by path under /files/

	mu    sync.Mutex
	fault Fault
	hits  map[string]int
}

// New starts a registry on 127.0.0.1 serving providers.
func New(providers ...Provider) (*Server, error) {
	s := &Server{providers: providers, archives: map[string][]byte{}, hits: map[string]int{}}
	var err error
	if s.Key, err = NewKey("registrytest signing key"); err != nil {
		return nil, err
	}
	if s.foreign, err = NewKey("someone else"); err != nil {
		return nil, err
	}
	if s.PublicKey, err = ArmoredPublicKey(s.Key); err != nil {
		return nil, err
	}
	for i := range s.providers {
		p := &s.providers[i]
		if len(p.Platforms) == 0 {
			p.Platforms = []tfinstall.Platform{tfinstall.CurrentPlatform()}
		}
		if len(p.Protocols) == 0 {
			p.Protocols = []string{"5.0"}
		}
		for _, v := range p.Versions {
			for _, pl := range p.Platforms {
				z, err := Archive(p.Type, v, exe(p, v, pl))
				if err != nil {
					return nil, err
				}
				s.archives[archivePath(p, v, pl)] = z
			}
		}
	}
	cert, certPEM, err := selfSigned()
	if err != nil {
		return nil, err
	}
	s.CertPEM = certPEM
	s.srv = httptest.NewUnstartedServer(http.HandlerFunc(s.serve))
	s.srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	s.srv.StartTLS()
	s.Host = strings.TrimPrefix(s.srv.URL, "https://")
	return s, nil
}

// Close stops the server.
func (s *Server) Close() { s.srv.Close() }

// Client returns an HTTP client that trusts the server.
func (s *Server) Client() *http.Client {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(s.CertPEM)
	return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
}

// SetFault sets how the server misbehaves from now on.
func (s *Server) SetFault(f Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fault = f
}

// Hits returns how many requests a path got (e.g. the archive's,
// "/files/NAMESPACE/TYPE/VERSION/FILE.zip").
func (s *Server) Hits(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits[path]
}

// ArchiveBytes returns the archive served for a version and platform.
func (s *Server) ArchiveBytes(namespace, typ, version string, p tfinstall.Platform) []byte {
	for i := range s.providers {
		if pr := &s.providers[i]; pr.Namespace == namespace && pr.Type == typ {
			return s.archives[archivePath(pr, version, p)]
		}
	}
	return nil
}

func exe(p *Provider, v string, pl tfinstall.Platform) []byte {
	if p.Exe != nil {
		return p.Exe(v, pl)
	}
	return []byte(fmt.Sprintf("#!/bin/sh\necho %s %s %s\n", p.Type, v, pl))
}

func fileName(p *Provider, v string, pl tfinstall.Platform) string {
	return fmt.Sprintf("terraform-provider-%s_%s_%s.zip", p.Type, v, pl)
}

func archivePath(p *Provider, v string, pl tfinstall.Platform) string {
	return "/files/" + p.Namespace + "/" + p.Type + "/" + v + "/" + fileName(p, v, pl)
}

// Archive builds a provider package: a zip holding the executable
// terraform-provider-TYPE_vVERSION (mode 0755, a fixed time, so the bytes
// and both hashes are the same every run).
func Archive(typ, version string, exe []byte) ([]byte, error) {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	h := &zip.FileHeader{Name: "terraform-provider-" + typ + "_v" + version, Method: zip.Deflate, Modified: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	h.SetMode(0o755)
	w, err := zw.CreateHeader(h)
	if err != nil {
		return nil, err
	}
	if _, err := w.Write(exe); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// NewKey makes an OpenPGP signing key (EdDSA: quick to make).
func NewKey(name string) (*openpgp.Entity, error) {
	return openpgp.NewEntity(name, "", "", &packet.Config{Algorithm: packet.PubKeyAlgoEdDSA})
}

// ArmoredPublicKey returns a key's public part, armored.
func ArmoredPublicKey(e *openpgp.Entity) (string, error) {
	var buf bytes.Buffer
	w, err := armor.Encode(&buf, openpgp.PublicKeyType, nil)
	if err != nil {
		return "", err
	}
	if err := e.Serialize(w); err != nil {
		return "", err
	}
	if err := w.Close(); err != nil {
		return "", err
	}
	return buf.String(), nil
}

func (s *Server) provider(ns, typ string) *Provider {
	for i := range s.providers {
		if p := &s.providers[i]; strings.EqualFold(p.Namespace, ns) && strings.EqualFold(p.Type, typ) {
			return p
		}
	}
	return nil
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.hits[r.URL.Path]++
	f := s.fault
	s.mu.Unlock()
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	switch {
	case r.URL.Path == "/.well-known/terraform.json":
		writeJSON(w, map[string]string{"providers.v1": "/v1/providers/"})
	case len(parts) == 5 && parts[0] == "v1" && parts[1] == "providers" && parts[4] == "versions":
		p := s.provider(parts[2], parts[3])
		if p == nil {
			http.NotFound(w, r)
			return
		}
		type platform struct {
			OS   string `json:"os"`
			Arch string `json:"arch"`
		}
		type version struct {
			Version   string     `json:"version"`
			Protocols []string   `json:"protocols"`
			Platforms []platform `json:"platforms"`
		}
		var vs []version
		for _, v := range p.Versions {
			ver := version{Version: v, Protocols: p.Protocols}
			for _, pl := range p.Platforms {
				ver.Platforms = append(ver.Platforms, platform{pl.OS, pl.Arch})
			}
			vs = append(vs, ver)
		}
		writeJSON(w, map[string]any{"versions": vs})
	case len(parts) == 8 && parts[0] == "v1" && parts[1] == "providers" && parts[5] == "download":
		s.download(w, r, f, parts[2], parts[3], parts[4], tfinstall.Platform{OS: parts[6], Arch: parts[7]})
	case len(parts) == 5 && parts[0] == "files":
		s.file(w, r, f, parts[1], parts[2], parts[3], parts[4])
	default:
		http.NotFound(w, r)
	}
}

func (s *Server) download(w http.ResponseWriter, r *http.Request, f Fault, ns, typ, v string, pl tfinstall.Platform) {
	p := s.provider(ns, typ)
	if p == nil || f.MissingDownload || !slices.Contains(p.Versions, v) || !slices.Contains(p.Platforms, pl) {
		http.NotFound(w, r)
		return
	}
	sum := sha256.Sum256(s.archives[archivePath(p, v, pl)])
	if f.WrongShasum {
		sum = sha256.Sum256([]byte("another archive"))
	}
	base := "/files/" + p.Namespace + "/" + p.Type + "/" + v + "/"
	doc := map[string]any{
		"protocols":    p.Protocols,
		"os":           pl.OS,
		"arch":         pl.Arch,
		"filename":     fileName(p, v, pl),
		"download_url": base + fileName(p, v, pl), // relative, as registries may answer
		"shasums_url":  "https://" + s.Host + base + sumsName(p, v),
		"shasum":       hex.EncodeToString(sum[:]),
	}
	if !f.NoSignature {
		doc["shasums_signature_url"] = base + sumsName(p, v) + ".sig"
	}
	if !f.HideKeys {
		doc["signing_keys"] = map[string]any{"gpg_public_keys": []map[string]string{{
			"key_id": fmt.Sprintf("%016X", s.Key.PrimaryKey.KeyId), "ascii_armor": s.PublicKey,
		}}}
	}
	writeJSON(w, doc)
}

func sumsName(p *Provider, v string) string {
	return fmt.Sprintf("terraform-provider-%s_%s_SHA256SUMS", p.Type, v)
}

func (s *Server) sums(p *Provider, v string) []byte {
	var lines []string
	for _, pl := range p.Platforms {
		sum := sha256.Sum256(s.archives[archivePath(p, v, pl)])
		lines = append(lines, fmt.Sprintf("%x  %s\n", sum, fileName(p, v, pl)))
	}
	sort.Strings(lines)
	return []byte(strings.Join(lines, ""))
}

func (s *Server) file(w http.ResponseWriter, r *http.Request, f Fault, ns, typ, v, name string) {
	p := s.provider(ns, typ)
	if p == nil {
		http.NotFound(w, r)
		return
	}
	switch {
	case name == sumsName(p, v):
		w.Write(s.sums(p, v))
	case name == sumsName(p, v)+".sig":
		key := s.Key
		if f.ForeignSignature {
			key = s.foreign
		}
		var sig bytes.Buffer
		if err := openpgp.DetachSign(&sig, key, bytes.NewReader(s.sums(p, v)), nil); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Write(sig.Bytes())
	default:
		z, ok := s.archives[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		if f.CorruptArchive {
			z = append(slices.Clone(z), "tampered"...)
		}
		w.Write(z)
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

// selfSigned makes a certificate for 127.0.0.1, ::1 and localhost.
func selfSigned() (tls.Certificate, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "registrytest"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		DNSNames:              []string{"localhost"},
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1"), net.IPv6loopback},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	cert, err := tls.X509KeyPair(certPEM, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}))
	return cert, certPEM, err
}
