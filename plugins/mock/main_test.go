package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/bulwark-iac/bulwark/plugins/mock/mockprovider"
	"github.com/bulwark-iac/bulwark/sdk"
	"github.com/bulwark-iac/bulwark/sdk/providertest"
)

func configure(t *testing.T, p sdk.Provider, dir string, cfg sdk.Attributes) {
	t.Helper()
	resp, err := p.Configure(context.Background(), &sdk.ConfigureRequest{Config: cfg, DataDir: dir})
	if err != nil || resp.Diagnostics.HasError() {
		t.Fatalf("Configure: %v %v", err, resp)
	}
}

func TestPluginProcess(t *testing.T) {
	bin := providertest.Build(t, "mock")
	ctx := context.Background()

	t.Run("lifecycle", func(t *testing.T) {
		p, _ := providertest.StartPluginClient(t, bin)
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

		p, client := providertest.StartPluginClient(t, bin)
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

		p2, client2 := providertest.StartPluginClient(t, bin)
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

// The executable reads BULWARK_MOCK_BATCH at start (the host passes its
// environment to the plugin, as this test's helper does): off hides the
// batch calls from what GetSchema declares.
func TestBatchEnv(t *testing.T) {
	bin := providertest.Build(t, "mock")
	tests := []struct {
		value   string
		batches bool
	}{
		{"", true},
		{"on", true},
		{"off", false},
	}
	for _, tt := range tests {
		t.Run("BULWARK_MOCK_BATCH="+tt.value, func(t *testing.T) {
			t.Setenv(mockprovider.EnvBatch, tt.value)
			p := providertest.StartPlugin(t, bin)
			resp, err := p.GetSchema(context.Background(), &sdk.GetSchemaRequest{})
			if err != nil || resp.Diagnostics.HasError() {
				t.Fatalf("GetSchema: %v %v", err, resp)
			}
			c := resp.Capabilities
			if c.ReadMany != tt.batches || c.ValidateMany != tt.batches || c.CreateMany != tt.batches {
				t.Errorf("ReadMany %v ValidateMany %v CreateMany %v, want all %v", c.ReadMany, c.ValidateMany, c.CreateMany, tt.batches)
			}
			if !c.Import {
				t.Error("Import is no longer declared")
			}
		})
	}
}

// The executable reads BULWARK_MOCK_VALIDATE at start: schema makes a mock
// with no validation of its own, which declares SchemaValidation (the
// host then never asks it to validate), with its batch calls or without;
// own or unset, the mock with its tags check, declaring nothing. A
// ValidateResource a host makes anyway answers the schema alone: a tag
// that is no string passes.
func TestValidateEnv(t *testing.T) {
	bin := providertest.Build(t, "mock")
	tests := []struct {
		value, batch string
		schemaOnly   bool
	}{
		{"", "", false},
		{"own", "off", false},
		{"schema", "", true},
		{"schema", "off", true},
	}
	for _, tt := range tests {
		t.Run("BULWARK_MOCK_VALIDATE="+tt.value+",BULWARK_MOCK_BATCH="+tt.batch, func(t *testing.T) {
			t.Setenv(mockprovider.EnvValidate, tt.value)
			t.Setenv(mockprovider.EnvBatch, tt.batch)
			p := providertest.StartPlugin(t, bin)
			resp, err := p.GetSchema(context.Background(), &sdk.GetSchemaRequest{})
			if err != nil || resp.Diagnostics.HasError() {
				t.Fatalf("GetSchema: %v %v", err, resp)
			}
			if got := resp.Capabilities.SchemaValidation; got != tt.schemaOnly {
				t.Errorf("SchemaValidation %v, want %v", got, tt.schemaOnly)
			}
			configure(t, p, t.TempDir(), sdk.Attributes{})
			vr, err := p.ValidateResource(context.Background(), &sdk.ValidateResourceRequest{Type: "compute", Name: "c", Config: sdk.Attributes{"tags": map[string]any{"n": 1.0}}})
			if err != nil {
				t.Fatal(err)
			}
			if vr.Diagnostics.HasError() == tt.schemaOnly {
				t.Errorf("a tag that is no string: %+v (schema only %v)", vr.Diagnostics, tt.schemaOnly)
			}
		})
	}
	if _, err := mockprovider.ValidationFromEnv(func(string) string { return "Schema" }); err == nil {
		t.Error("BULWARK_MOCK_VALIDATE=Schema was taken; want an error, not the mock with its own validation")
	}
}
