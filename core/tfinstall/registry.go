package tfinstall

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"golang.org/x/net/idna"
)

// Limits on what a registry may send.
const (
	maxDocument = 4 << 20 // a JSON document, SHA256SUMS, a signature
	maxArchive  = 2 << 30 // a provider's .zip
)

// Registry is a client of Terraform's provider registry protocol
// (https://developer.hashicorp.com/terraform/internals/provider-registry-protocol):
// service discovery, then the versions and download endpoints of
// providers.v1. Only https is spoken; which certificates are trusted is
// the client's (Go reads SSL_CERT_FILE and SSL_CERT_DIR for the system's
// pool).
type Registry struct {
	// Client does the requests; nil uses a client of its own.
	Client *http.Client
	// Timeout bounds each metadata request (discovery, versions,
	// download document, SHA256SUMS, signature); 0 means 30 s. A download
	// is bounded by its context and DownloadTimeout.
	Timeout time.Duration
	// DownloadTimeout bounds one archive's download; 0 means 10 min.
	DownloadTimeout time.Duration
}

// RegistryError is a registry's answer that was not the document asked
// for (an HTTP status, or a body that does not parse).
type RegistryError struct {
	URL    string
	Status int // 0 when the request got no answer or the body was bad
	Err    error
}

func (e *RegistryError) Error() string {
	if e.Status != 0 {
		return fmt.Sprintf("registry: GET %s: %d %s", e.URL, e.Status, http.StatusText(e.Status))
	}
	return fmt.Sprintf("registry: GET %s: %v", e.URL, e.Err)
}

func (e *RegistryError) Unwrap() error { return e.Err }

// RegistryVersion is one entry of a registry's versions list.
type RegistryVersion struct {
	Version   string   `json:"version"`
	Protocols []string `json:"protocols"`
	Platforms []struct {
		OS   string `json:"os"`
		Arch string `json:"arch"`
	} `json:"platforms"`
}

// hasPlatform says whether v lists p (a list that says nothing allows all).
func (v RegistryVersion) hasPlatform(p Platform) bool {
	if len(v.Platforms) == 0 {
		return true
	}
	for _, q := range v.Platforms {
		if q.OS == p.OS && q.Arch == p.Arch {
			return true
		}
	}
	return false
}

// speaksProtocol says whether v offers plugin protocol 5 or 6, the ones
// bulwark speaks (a list that says nothing is taken to).
func (v RegistryVersion) speaksProtocol() bool {
	if len(v.Protocols) == 0 {
		return true
	}
	for _, p := range v.Protocols {
		major, _, _ := strings.Cut(p, ".")
		if major == "5" || major == "6" {
			return true
		}
	}
	return false
}

// Download is a registry's download document for one package.
type Download struct {
	Protocols           []string `json:"protocols"`
	OS                  string   `json:"os"`
	Arch                string   `json:"arch"`
	Filename            string   `json:"filename"`
	DownloadURL         string   `json:"download_url"`
	SHASumsURL          string   `json:"shasums_url"`
	SHASumsSignatureURL string   `json:"shasums_signature_url"`
	SHASum              string   `json:"shasum"`
	SigningKeys         struct {
		GPGPublicKeys []struct {
			KeyID      string `json:"key_id"`
			ASCIIArmor string `json:"ascii_armor"`
		} `json:"gpg_public_keys"`
	} `json:"signing_keys"`

	base *url.URL // the document's own URL, which relative URLs are resolved against
}

// resolve makes a URL of the document absolute; only https is accepted.
func (d *Download) resolve(ref string) (string, error) {
	u, err := d.base.Parse(ref)
	if err != nil {
		return "", fmt.Errorf("bad URL %q: %w", ref, err)
	}
	if u.Scheme != "https" {
		return "", fmt.Errorf("URL %q: only https is accepted", u)
	}
	return u.String(), nil
}

// ProvidersURL discovers the providers.v1 service of host:
// https://HOST/.well-known/terraform.json.
func (r *Registry) ProvidersURL(ctx context.Context, host string) (*url.URL, error) {
	h, port, hasPort := strings.Cut(host, ":")
	ascii, err := idna.Lookup.ToASCII(h)
	if err != nil {
		return nil, fmt.Errorf("registry host %q: %w", host, err)
	}
	if hasPort {
		ascii += ":" + port
	}
	disco := &url.URL{Scheme: "https", Host: ascii, Path: "/.well-known/terraform.json"}
	var doc map[string]any
	if err := r.getJSON(ctx, disco.String(), &doc); err != nil {
		return nil, err
	}
	raw, ok := doc["providers.v1"].(string)
	if !ok {
		return nil, &RegistryError{URL: disco.String(), Err: errors.New("host offers no provider registry (no providers.v1 in its service discovery document)")}
	}
	u, err := disco.Parse(raw)
	if err != nil || u.Scheme != "https" {
		return nil, &RegistryError{URL: disco.String(), Err: fmt.Errorf("providers.v1 %q is no https URL", raw)}
	}
	if !strings.HasSuffix(u.Path, "/") {
		u.Path += "/"
	}
	return u, nil
}

// Versions lists the versions the registry offers of src.
func (r *Registry) Versions(ctx context.Context, base *url.URL, src Source) ([]RegistryVersion, error) {
	u := base.JoinPath(src.Namespace, src.Type, "versions")
	var doc struct {
		Versions []RegistryVersion `json:"versions"`
	}
	if err := r.getJSON(ctx, u.String(), &doc); err != nil {
		var re *RegistryError
		if errors.As(err, &re) && re.Status == http.StatusNotFound {
			return nil, &NoVersionError{Source: src, Reason: "the registry at " + src.Host + " does not know this provider"}
		}
		return nil, err
	}
	return doc.Versions, nil
}

// Download fetches the download document of one version for a platform.
func (r *Registry) Download(ctx context.Context, base *url.URL, src Source, version string, p Platform) (*Download, error) {
	u := base.JoinPath(src.Namespace, src.Type, version, "download", p.OS, p.Arch)
	d := &Download{base: u}
	if err := r.getJSON(ctx, u.String(), d); err != nil {
		var re *RegistryError
		if errors.As(err, &re) && re.Status == http.StatusNotFound {
			return nil, &NoVersionError{Source: src, Platform: p, Reason: fmt.Sprintf("the registry has no package of version %s for %s", version, p)}
		}
		return nil, err
	}
	return d, nil
}

func (r *Registry) client() *http.Client {
	if r.Client != nil {
		return r.Client
	}
	return &http.Client{CheckRedirect: httpsOnly}
}

// httpsOnly refuses a redirect away from https.
func httpsOnly(req *http.Request, via []*http.Request) error {
	if req.URL.Scheme != "https" {
		return fmt.Errorf("redirected to %s: only https is accepted", req.URL.Redacted())
	}
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	return nil
}

func (r *Registry) timeout() time.Duration {
	if r.Timeout > 0 {
		return r.Timeout
	}
	return 30 * time.Second
}

func (r *Registry) downloadTimeout() time.Duration {
	if r.DownloadTimeout > 0 {
		return r.DownloadTimeout
	}
	return 10 * time.Minute
}

func (r *Registry) getJSON(ctx context.Context, u string, v any) error {
	b, err := r.getSmall(ctx, u)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return &RegistryError{URL: u, Err: fmt.Errorf("bad JSON: %w", err)}
	}
	return nil
}

// getSmall reads a document of at most maxDocument bytes.
func (r *Registry) getSmall(ctx context.Context, u string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, r.timeout())
	defer cancel()
	var out []byte
	err := r.get(ctx, u, func(body io.Reader) error {
		b, err := io.ReadAll(io.LimitReader(body, maxDocument+1))
		if err != nil {
			return err
		}
		if len(b) > maxDocument {
			return fmt.Errorf("larger than %d bytes", maxDocument)
		}
		out = b
		return nil
	})
	return out, err
}

// get does one GET and hands a 200's body to read.
func (r *Registry) get(ctx context.Context, u string, read func(io.Reader) error) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return &RegistryError{URL: u, Err: err}
	}
	req.Header.Set("User-Agent", "bulwark")
	resp, err := r.client().Do(req)
	if err != nil {
		return &RegistryError{URL: u, Err: err}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return &RegistryError{URL: u, Status: resp.StatusCode}
	}
	if err := read(resp.Body); err != nil {
		return &RegistryError{URL: u, Err: err}
	}
	return nil
}
