package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
	bin := providertest.Build(t, "local")
	ctx := context.Background()
	p, client := providertest.StartPluginClient(t, bin)

	schema, err := p.GetSchema(ctx, &sdk.GetSchemaRequest{})
	if err != nil || schema.ProviderName != "local" || schema.ProviderVersion != "0.1.0" || len(schema.ResourceTypes) != 6 {
		t.Fatalf("GetSchema: %+v %v", schema, err)
	}
	if rt, ok := schema.ResourceType("generic"); !ok {
		t.Fatal("no generic type")
	} else if a, ok := rt.Attribute("path"); !ok || !a.ForceNew {
		t.Fatalf("generic.path: %+v", a)
	}
	data := t.TempDir()
	resp, err := p.Configure(ctx, &sdk.ConfigureRequest{Config: sdk.Attributes{"bogus": 1}, DataDir: data})
	if err != nil || !resp.Diagnostics.HasError() || resp.Diagnostics[0].AttributePath[0] != "bogus" {
		t.Fatalf("Configure with an unknown key: %+v %v", resp, err)
	}
	root := filepath.Join(t.TempDir(), "root")
	configure(t, p, data, sdk.Attributes{"root": root})

	vr, err := p.ValidateResource(ctx, &sdk.ValidateResourceRequest{Type: "generic", Name: "g", Config: sdk.Attributes{"path": "../escape"}})
	if err != nil || !vr.Diagnostics.HasError() || len(vr.Diagnostics[0].AttributePath) != 1 || vr.Diagnostics[0].AttributePath[0] != "path" {
		t.Fatalf("ValidateResource of an escaping path: %+v %v", vr, err)
	}
	bad, err := p.Create(ctx, &sdk.CreateRequest{Type: "generic", Name: "g", Config: sdk.Attributes{"path": "/etc"}, IdempotencyKey: "k0"})
	if err != nil || !bad.Diagnostics.HasError() || bad.Diagnostics[0].AttributePath[0] != "path" {
		t.Fatalf("Create of an absolute path: %+v %v", bad, err)
	}

	req := &sdk.CreateRequest{Type: "s3_bucket", Name: "storage", Config: sdk.Attributes{"bucket": "b", "size": 1}, IdempotencyKey: "op_1:storage", Protection: sdk.ProtectionDurable}
	cr, err := p.Create(ctx, req)
	if err != nil || cr.Diagnostics.HasError() || !strings.HasPrefix(cr.ID, "local-s3_bucket-storage-") {
		t.Fatalf("Create: %+v %v", cr, err)
	}
	folder := filepath.Join(root, "s3_bucket", "storage")
	if _, err := os.Stat(filepath.Join(folder, "objects", "seed.txt")); err != nil {
		t.Fatalf("seed: %v", err)
	}
	if again, err := p.Create(ctx, req); err != nil || again.ID != cr.ID {
		t.Fatalf("second Create with the key: %+v %v", again, err)
	}
	for _, rreq := range []*sdk.ReadRequest{
		{Type: "s3_bucket", Name: "storage", ID: cr.ID},
		{Type: "s3_bucket", Name: "storage", IdempotencyKey: req.IdempotencyKey},
	} {
		rr, err := p.Read(ctx, rreq)
		if err != nil || !rr.Exists || rr.ID != cr.ID || rr.Attributes["bucket"] != "b" || rr.Attributes["folder"] != folder {
			t.Fatalf("Read %+v: %+v %v", rreq, rr, err)
		}
	}
	ur, err := p.Update(ctx, &sdk.UpdateRequest{Type: "s3_bucket", Name: "storage", ID: cr.ID, PriorAttributes: cr.Attributes, Config: sdk.Attributes{"bucket": "b", "size": 2}})
	if err != nil || ur.Diagnostics.HasError() || ur.Attributes["size"] != 2.0 {
		t.Fatalf("Update: %+v %v", ur, err)
	}
	dr, err := p.Delete(ctx, &sdk.DeleteRequest{Type: "s3_bucket", Name: "storage", ID: cr.ID, Protection: sdk.ProtectionProtected})
	if err != nil || !dr.Diagnostics.HasError() {
		t.Fatalf("protected Delete: %+v %v", dr, err)
	}
	dr, err = p.Delete(ctx, &sdk.DeleteRequest{Type: "s3_bucket", Name: "storage", ID: cr.ID, Protection: sdk.ProtectionDurable})
	if err != nil || dr.Diagnostics.HasError() {
		t.Fatalf("Delete: %+v %v", dr, err)
	}
	if _, err := os.Stat(folder); !os.IsNotExist(err) {
		t.Fatalf("folder still there: %v", err)
	}
	rr, err := p.Read(ctx, &sdk.ReadRequest{Type: "s3_bucket", Name: "storage", ID: cr.ID})
	if err != nil || rr.Exists || rr.Diagnostics.HasError() {
		t.Fatalf("Read after Delete: %+v %v", rr, err)
	}
	if dr, err := p.Delete(ctx, &sdk.DeleteRequest{Type: "s3_bucket", Name: "storage", ID: cr.ID}); err != nil || dr.Diagnostics.HasError() {
		t.Fatalf("Delete of the absent: %+v %v", dr, err)
	}
	if client.Exited() {
		t.Fatal("the plugin process exited")
	}
}
