// Command testplugin is a bulwark provider used only by the pluginhost tests.
// Its behaviour is chosen by the resource name:
//
//   - "crash": Create exits the process (status 3) in the middle of the call;
//   - "hang": Read and Create block until the call's context ends;
//   - "multiline": Create fails with a diagnostic spanning several lines;
//   - "throttled": the first two calls of each kind (ValidateResource,
//     Read, Create, Update, Delete) naming it are answered sdk.Throttled
//     with a wait of 1 ms and do nothing; Read reports how many were;
//   - anything else: an in-memory resource, keyed by idempotency key.
//
// Configure fails when the config has fail_configure: true. Every Read
// reports the process id and the config the process was configured with, and
// every Delete that reaches the provider is logged in the data folder
// (deletes.log), so a test can tell whether a refused Delete got through.
package main

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/hashicorp/go-plugin"

	"github.com/bulwark-iac/bulwark/sdk"
)

type provider struct {
	mu        sync.Mutex
	config    map[string]any
	dataDir   string
	readOnly  bool
	byKey     map[string]string // idempotency key -> id
	resources map[string]bool   // id -> exists
	batches   []any             // the size of each CreateMany, in call order
	reads     []any             // the size of each ReadMany, in call order
	checks    []any             // the size of each ValidateMany, in call order
	zones     map[string]any    // id -> the zone it was created with
	throttles map[string]int    // call kind -> the throttled answers given to "throttled"
}

// throttle answers the first two calls of kind naming "throttled" with a
// throttled diagnostic (nil otherwise).
func (p *provider) throttle(kind, name string) error {
	if name != "throttled" {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.throttles[kind] >= 2 {
		return nil
	}
	p.throttles[kind]++
	return sdk.Throttled(time.Millisecond, "%s %s: rate exceeded", kind, name)
}

func (p *provider) GetSchema(context.Context, *sdk.GetSchemaRequest) (*sdk.GetSchemaResponse, error) {
	return &sdk.GetSchemaResponse{
		ProviderName:    "test",
		ProviderVersion: "0.0.1",
		ResourceTypes: []sdk.ResourceType{{
			Name: "thing",
			Attributes: []sdk.Attribute{
				{Name: "size", Type: sdk.TypeNumber},
				{Name: "zone", Type: sdk.TypeString, ForceNew: true},
			},
		}},
	}, nil
}

func (p *provider) Configure(_ context.Context, req *sdk.ConfigureRequest) (*sdk.ConfigureResponse, error) {
	if req.Config["fail_configure"] == true {
		return &sdk.ConfigureResponse{Diagnostics: sdk.Diagnostics{sdk.AttributeErrorf([]string{"fail_configure"}, "configure refused as asked")}}, nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.config, p.dataDir, p.readOnly = req.Config, req.DataDir, req.ReadOnly
	return &sdk.ConfigureResponse{}, nil
}

func (p *provider) ValidateResource(_ context.Context, req *sdk.ValidateResourceRequest) (*sdk.ValidateResourceResponse, error) {
	if err := p.throttle("validate", req.Name); err != nil {
		return &sdk.ValidateResourceResponse{Diagnostics: sdk.DiagnosticsFromError(err)}, nil
	}
	if s, ok := req.Config["size"].(float64); ok && s < 0 {
		return &sdk.ValidateResourceResponse{Diagnostics: sdk.Diagnostics{sdk.AttributeErrorf([]string{"size"}, "size must not be negative")}}, nil
	}
	return &sdk.ValidateResourceResponse{}, nil
}

func (p *provider) Read(ctx context.Context, req *sdk.ReadRequest) (*sdk.ReadResponse, error) {
	if req.Name == "hang" {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	if err := p.throttle("read", req.Name); err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	id := req.ID
	if id == "" && req.IdempotencyKey != "" {
		id = p.byKey[req.IdempotencyKey]
	}
	return &sdk.ReadResponse{
		Exists: id != "" && p.resources[id],
		ID:     id,
		Attributes: sdk.Attributes{
			"pid":        float64(os.Getpid()),
			"configured": p.config,
			"data_dir":   p.dataDir,
			"read_only":  p.readOnly,
			"batches":    p.batches,
			"reads":      p.reads,
			"checks":     p.checks,
			"zone":       p.zones[id],
			"throttles":  throttles(p.throttles),
		},
	}, nil
}

func (p *provider) Create(ctx context.Context, req *sdk.CreateRequest) (*sdk.CreateResponse, error) {
	if req.Name == "hang" {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	if req.Name == "crash" {
		os.Exit(3)
	}
	if err := p.throttle("create", req.Name); err != nil {
		return nil, err
	}
	if req.Name == "multiline" {
		return &sdk.CreateResponse{Diagnostics: sdk.Diagnostics{sdk.Errorf("create failed: boom\ngoroutine 7 [running]:\nmain.(*provider).Create(...)\n\t/src/main.go:99")}}, nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	id, ok := p.byKey[req.IdempotencyKey]
	if !ok {
		id = fmt.Sprintf("%s-%d", req.Name, len(p.byKey)+1)
		p.byKey[req.IdempotencyKey] = id
	}
	p.resources[id] = true
	if z, ok := req.Config["zone"]; ok {
		p.zones[id] = z
	}
	return &sdk.CreateResponse{ID: id, Attributes: req.Config}, nil
}

func (p *provider) Update(_ context.Context, req *sdk.UpdateRequest) (*sdk.UpdateResponse, error) {
	if err := p.throttle("update", req.Name); err != nil {
		return nil, err
	}
	return &sdk.UpdateResponse{Attributes: req.Config}, nil
}

func (p *provider) Delete(_ context.Context, req *sdk.DeleteRequest) (*sdk.DeleteResponse, error) {
	if err := p.throttle("delete", req.Name); err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.dataDir != "" {
		f, err := os.OpenFile(filepath.Join(p.dataDir, "deletes.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(f, "%s %s %s\n", req.Name, req.ID, req.Protection)
		if err := f.Close(); err != nil {
			return nil, err
		}
	}
	delete(p.resources, req.ID)
	return &sdk.DeleteResponse{}, nil
}

// batching is the provider with CreateMany, ReadMany and ValidateMany
// (sdk.BatchCreator, sdk.BatchReader, sdk.BatchValidator): each request as
// the single call answers it, the call's size recorded (Read reports them
// as "batches", "reads" and "checks").
type batching struct{ *provider }

func (b batching) ReadMany(ctx context.Context, req *sdk.ReadManyRequest) (*sdk.ReadManyResponse, error) {
	return &sdk.ReadManyResponse{Results: each(ctx, b, &b.reads, req.Reads, b.Read,
		func(ds sdk.Diagnostics) *sdk.ReadResponse { return &sdk.ReadResponse{Diagnostics: ds} })}, nil
}

func (b batching) ValidateMany(ctx context.Context, req *sdk.ValidateManyRequest) (*sdk.ValidateManyResponse, error) {
	return &sdk.ValidateManyResponse{Results: each(ctx, b, &b.checks, req.Resources, b.ValidateResource,
		func(ds sdk.Diagnostics) *sdk.ValidateResourceResponse {
			return &sdk.ValidateResourceResponse{Diagnostics: ds}
		})}, nil
}

func (b batching) CreateMany(ctx context.Context, req *sdk.CreateManyRequest) (*sdk.CreateManyResponse, error) {
	return &sdk.CreateManyResponse{Results: each(ctx, b, &b.batches, req.Creates, b.Create,
		func(ds sdk.Diagnostics) *sdk.CreateResponse { return &sdk.CreateResponse{Diagnostics: ds} })}, nil
}

// each answers a batch call: its size appended to sizes, then each request
// as the single call one answers it, an error as its diagnostics.
func each[Q, R any](ctx context.Context, b batching, sizes *[]any, reqs []Q, one func(context.Context, Q) (R, error), failed func(sdk.Diagnostics) R) []R {
	b.mu.Lock()
	*sizes = append(*sizes, float64(len(reqs)))
	b.mu.Unlock()
	out := make([]R, len(reqs))
	for i, r := range reqs {
		resp, err := one(ctx, r)
		if err != nil {
			resp = failed(sdk.DiagnosticsFromError(err))
		}
		out[i] = resp
	}
	return out
}

// reading is the provider with a data source (sdk.DataReader): "thing"
// reads a thing by id (its zone, whether the session is read-only, and a
// sensitive "token"), an error naming the id when there is none.
type reading struct{ *provider }

func (r reading) GetSchema(ctx context.Context, req *sdk.GetSchemaRequest) (*sdk.GetSchemaResponse, error) {
	s, err := r.provider.GetSchema(ctx, req)
	if err != nil {
		return nil, err
	}
	s.DataSources = []sdk.DataSourceType{{Name: "thing", Attributes: []sdk.Attribute{
		{Name: "id", Type: sdk.TypeString, Required: true},
		{Name: "zone", Type: sdk.TypeString, Computed: true},
		{Name: "read_only", Type: sdk.TypeBool, Computed: true},
		{Name: "token", Type: sdk.TypeString, Computed: true, Sensitive: true},
	}}}
	return s, nil
}

func (r reading) ReadData(_ context.Context, req *sdk.ReadDataRequest) (*sdk.ReadDataResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	id, _ := req.Config["id"].(string)
	if !r.resources[id] {
		return nil, fmt.Errorf("data %s: no thing with id %q", req.Name, id)
	}
	return &sdk.ReadDataResponse{Attributes: sdk.Attributes{"id": id, "zone": r.zones[id], "read_only": r.readOnly, "token": "tok-" + id}}, nil
}

// TESTPLUGIN_MODE changes how the process serves:
//
//	v2           speak only protocol version 2 (no version the host offers by default)
//	silent       never complete the handshake
//	automtls     serve as a plugin built on an older sdk did: go-plugin's
//	             Serve and its AutoMTLS (a P-521 certificate of its own, announced)
//	unannounced  serve over TLS with a certificate it never announces (and
//	             that trusts the host's): a server the host cannot authenticate
//	batch        offer CreateMany, ReadMany and ValidateMany
//	data         offer a data source
func main() {
	p := &provider{byKey: map[string]string{}, resources: map[string]bool{}, zones: map[string]any{}, throttles: map[string]int{}}
	switch os.Getenv("TESTPLUGIN_MODE") {
	case "automtls":
		plugin.Serve(&plugin.ServeConfig{
			HandshakeConfig:  sdk.Handshake,
			VersionedPlugins: sdk.VersionedPlugins(p),
			GRPCServer:       plugin.DefaultGRPCServer,
		})
	case "unannounced":
		plugin.Serve(&plugin.ServeConfig{
			HandshakeConfig:  sdk.Handshake,
			VersionedPlugins: sdk.VersionedPlugins(p),
			GRPCServer:       plugin.DefaultGRPCServer,
			TLSProvider:      unannouncedTLS,
		})
	case "v2":
		plugin.Serve(&plugin.ServeConfig{
			HandshakeConfig:  sdk.Handshake,
			VersionedPlugins: map[int]plugin.PluginSet{2: {sdk.PluginName: &sdk.GRPCProviderPlugin{Impl: p}}},
			GRPCServer:       plugin.DefaultGRPCServer,
		})
	case "silent":
		select {}
	case "batch":
		sdk.Serve(batching{p})
	case "data":
		sdk.Serve(reading{p})
	default:
		sdk.Serve(p)
	}
}

// unannouncedTLS is a server TLS config with a fresh self-signed Ed25519
// certificate that go-plugin does not announce (a TLSProvider's never is),
// trusting the host's certificate from PLUGIN_CLIENT_CERT.
func unannouncedTLS() (*tls.Config, error) {
	pub, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "localhost"}, DNSNames: []string{"localhost"},
		NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IsCA:        true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, pub, key)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM([]byte(os.Getenv("PLUGIN_CLIENT_CERT"))) {
		return nil, fmt.Errorf("no PLUGIN_CLIENT_CERT")
	}
	return &tls.Config{
		Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}},
		ClientAuth:   tls.RequireAndVerifyClientCert, ClientCAs: pool, MinVersion: tls.VersionTLS13,
	}, nil
}

// throttles is the throttled answers given, as attributes.
func throttles(m map[string]int) map[string]any {
	out := map[string]any{}
	for k, n := range m {
		out[k] = float64(n)
	}
	return out
}
