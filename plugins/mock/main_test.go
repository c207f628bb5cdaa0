package main

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"

	"github.com/bulwark-iac/bulwark/sdk"
)

// lockedBuffer collects the plugin machinery's log; it is shown when a test
// fails.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// buildPlugin builds this module's executable into a temporary folder.
func buildPlugin(t *testing.T) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to build the plugin with")
	}
	bin := filepath.Join(t.TempDir(), "bulwark-provider-mock")
	if out, err := exec.Command(goBin, "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// startPlugin runs bin as a plugin process and returns its provider.
func startPlugin(t *testing.T, bin string) (sdk.Provider, *plugin.Client) {
	t.Helper()
	logs := &lockedBuffer{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("plugin log:\n%s", logs)
		}
	})
	client := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  sdk.Handshake,
		VersionedPlugins: sdk.VersionedPlugins(nil),
		Cmd:              exec.Command(bin),
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		Logger:           hclog.New(&hclog.LoggerOptions{Name: "host", Output: logs, Level: hclog.Debug}),
	})
	t.Cleanup(client.Kill)
	rpc, err := client.Client()
	if err != nil {
		t.Fatalf("start plugin: %v", err)
	}
	raw, err := rpc.Dispense(sdk.PluginName)
	if err != nil {
		t.Fatalf("dispense: %v", err)
	}
	p, ok := raw.(sdk.Provider)
	if !ok {
		t.Fatalf("dispensed %T, not an sdk.Provider", raw)
	}
	return p, client
}

func configure(t *testing.T, p sdk.Provider, dir string, cfg sdk.Attributes) {
	t.Helper()
	resp, err := p.Configure(context.Background(), &sdk.ConfigureRequest{Config: cfg, DataDir: dir})
	if err != nil || resp.Diagnostics.HasError() {
		t.Fatalf("Configure: %v %v", err, resp)
	}
}

func TestPluginProcess(t *testing.T) {
	bin := buildPlugin(t)
	ctx := context.Background()

	t.Run("lifecycle", func(t *testing.T) {
		p, _ := startPlugin(t, bin)
		schema, err := p.GetSchema(ctx, &sdk.GetSchemaRequest{})
		if err != nil || schema.ProviderName != "mock" || schema.ProviderVersion != "0.1.0" {
			t.Fatalf("GetSchema: %+v %v", schema, err)
		}
		if _, ok := schema.ResourceType("dynamodb_table"); !ok || len(schema.ResourceTypes) != 6 {
			t.Fatalf("schema types: %+v", schema.ResourceTypes)
		}
		dir := t.TempDir()
		resp, err := p.Configure(ctx, &sdk.ConfigureRequest{Config: sdk.Attributes{"bogus": true}, DataDir: dir})
		if err != nil || !resp.Diagnostics.HasError() || resp.Diagnostics[0].AttributePath[0] != "bogus" {
			t.Fatalf("Configure with an unknown key: %+v %v", resp, err)
		}
		configure(t, p, dir, sdk.Attributes{"latency_ms": 1})

		cr, err := p.Create(ctx, &sdk.CreateRequest{Type: "s3_bucket", Name: "storage", Config: sdk.Attributes{"bucket": "b", "size": 2}, IdempotencyKey: "op_1:storage", Protection: sdk.ProtectionDurable})
		if err != nil || cr.Diagnostics.HasError() || !strings.HasPrefix(cr.ID, "mock-s3_bucket-storage-") {
			t.Fatalf("Create: %+v %v", cr, err)
		}
		again, err := p.Create(ctx, &sdk.CreateRequest{Type: "s3_bucket", Name: "storage", Config: sdk.Attributes{"bucket": "b", "size": 2}, IdempotencyKey: "op_1:storage"})
		if err != nil || again.ID != cr.ID {
			t.Fatalf("second Create with the key: %+v %v", again, err)
		}
		rr, err := p.Read(ctx, &sdk.ReadRequest{Type: "s3_bucket", Name: "storage", ID: cr.ID})
		if err != nil || !rr.Exists || rr.ID != cr.ID || rr.Attributes["bucket"] != "b" || rr.Attributes["size"] != 2.0 {
			t.Fatalf("Read: %+v %v", rr, err)
		}
		// The schema check in sdk.Serve runs before the provider.
		bad, err := p.Create(ctx, &sdk.CreateRequest{Type: "network", Name: "n", Config: sdk.Attributes{"bucket": "b"}, IdempotencyKey: "k"})
		if err != nil || !bad.Diagnostics.HasError() {
			t.Fatalf("Create with an unknown attribute: %+v %v", bad, err)
		}
		// Serve refuses a protected Delete.
		dr, err := p.Delete(ctx, &sdk.DeleteRequest{Type: "s3_bucket", Name: "storage", ID: cr.ID, Protection: sdk.ProtectionProtected})
		if err != nil || !dr.Diagnostics.HasError() {
			t.Fatalf("protected Delete: %+v %v", dr, err)
		}
		dr, err = p.Delete(ctx, &sdk.DeleteRequest{Type: "s3_bucket", Name: "storage", ID: cr.ID, Protection: sdk.ProtectionDurable})
		if err != nil || dr.Diagnostics.HasError() {
			t.Fatalf("Delete: %+v %v", dr, err)
		}
		rr, err = p.Read(ctx, &sdk.ReadRequest{Type: "s3_bucket", Name: "storage", ID: cr.ID})
		if err != nil || rr.Exists || rr.Diagnostics.HasError() {
			t.Fatalf("Read after Delete: %+v %v", rr, err)
		}
		dr, err = p.Delete(ctx, &sdk.DeleteRequest{Type: "s3_bucket", Name: "storage", ID: cr.ID})
		if err != nil || dr.Diagnostics.HasError() {
			t.Fatalf("Delete of the absent: %+v %v", dr, err)
		}
	})

	t.Run("crash_create", func(t *testing.T) {
		dir := t.TempDir()
		cfg := sdk.Attributes{"crash_create": []any{"compute"}}
		req := &sdk.CreateRequest{Type: "compute", Name: "compute", Config: sdk.Attributes{"size": 4}, IdempotencyKey: "op_2:compute"}

		p, client := startPlugin(t, bin)
		configure(t, p, dir, cfg)
		if resp, err := p.Create(ctx, req); err == nil {
			t.Fatalf("Create returned %+v; the process should have died", resp)
		}
		deadline := time.Now().Add(10 * time.Second)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for !client.Exited() {
			if time.Now().After(deadline) {
				t.Fatal("the plugin process did not exit")
			}
			<-tick.C
		}

		p2, client2 := startPlugin(t, bin)
		configure(t, p2, dir, cfg)
		rr, err := p2.Read(ctx, &sdk.ReadRequest{Type: "compute", Name: "compute", IdempotencyKey: req.IdempotencyKey})
		if err != nil || !rr.Exists || !strings.HasPrefix(rr.ID, "mock-compute-compute-") || rr.Attributes["size"] != 4.0 {
			t.Fatalf("Read by key after the crash: %+v %v", rr, err)
		}
		cr, err := p2.Create(ctx, req)
		if err != nil || cr.Diagnostics.HasError() || cr.ID != rr.ID {
			t.Fatalf("retried Create: %+v %v, want %s", cr, err, rr.ID)
		}
		if client2.Exited() {
			t.Fatal("the retried Create crashed the process")
		}
	})
}
