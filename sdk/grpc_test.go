package sdk

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/hashicorp/go-plugin"
)

// dispense connects a host-side Provider to impl over real gRPC (in-process,
// loopback) through go-plugin, the way the host talks to a plugin process.
func dispense(t *testing.T, impl Provider) Provider {
	t.Helper()
	client, _ := plugin.TestPluginGRPCConn(t, false, map[string]plugin.Plugin{PluginName: &GRPCProviderPlugin{Impl: impl}})
	t.Cleanup(func() { client.Close() })
	raw, err := client.Dispense(PluginName)
	if err != nil {
		t.Fatalf("dispense: %v", err)
	}
	p, ok := raw.(Provider)
	if !ok {
		t.Fatalf("dispensed %T, not a Provider", raw)
	}
	return p
}

// A host that asks to delete a protected resource, over the real transport,
// is refused and the provider's Delete never runs: the test that tries to
// break protection.
func TestGRPCDeleteProtectedNeverReachesProvider(t *testing.T) {
	tests := []struct {
		name       string
		protection Protection
		reaches    bool
	}{
		{"protected", ProtectionProtected, false},
		{"durable", ProtectionDurable, true},
		{"ephemeral", ProtectionEphemeral, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recorder{}
			host := dispense(t, rec)
			ctx := context.Background()
			// Every way a host could phrase it: with an id, with attributes, twice.
			for i := 0; i < 2; i++ {
				resp, err := host.Delete(ctx, &DeleteRequest{Type: "bucket", Name: "vault", ID: "id-vault", Attributes: Attributes{"arn": "a"}, Protection: tt.protection, ExpectedKey: "k-vault"})
				if err != nil {
					t.Fatalf("Delete: transport error %v", err)
				}
				if tt.reaches {
					if resp.Diagnostics.HasError() {
						t.Fatalf("Delete refused: %v", resp.Diagnostics)
					}
					continue
				}
				if !resp.Diagnostics.HasError() {
					t.Fatalf("protected Delete accepted: %+v", resp)
				}
				want := Diagnostics{ErrProtectedDelete("bucket", "vault")}
				if !reflect.DeepEqual(resp.Diagnostics, want) {
					t.Errorf("diagnostics %#v, want %#v", resp.Diagnostics, want)
				}
				var ds Diagnostics
				if err := resp.Diagnostics.Err(); !errors.As(err, &ds) || !strings.Contains(err.Error(), "refused to delete protected resource vault") {
					t.Errorf("as an error: %v", err)
				}
			}
			wantCalls := 0
			if tt.reaches {
				wantCalls = 2
			}
			if got := rec.count("Delete"); got != wantCalls {
				t.Errorf("provider Delete called %d times, want %d (calls %v)", got, wantCalls, rec.Calls())
			}
			if tt.reaches {
				got := rec.last("Delete").(*DeleteRequest)
				if got.Protection != tt.protection || got.ID != "id-vault" || !reflect.DeepEqual(got.Attributes, Attributes{"arn": "a"}) || got.ExpectedKey != "k-vault" {
					t.Errorf("provider received %+v", got)
				}
			}
		})
	}
}

// The whole contract over gRPC: every method carries its request and
// response across intact.
func TestGRPCRoundTrip(t *testing.T) {
	rec := &recorder{}
	host := dispense(t, rec)
	ctx := context.Background()

	s, err := host.GetSchema(ctx, &GetSchemaRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if s.ProviderName != "fake" || !reflect.DeepEqual(s.ResourceTypes, []ResourceType{bucketType}) {
		t.Errorf("schema %+v", s)
	}

	if c, err := host.Configure(ctx, &ConfigureRequest{Config: Attributes{"region": "eu"}, DataDir: "/data"}); err != nil || c.Diagnostics != nil {
		t.Fatalf("configure %v %v", c, err)
	}
	if got := rec.last("Configure"); !reflect.DeepEqual(got, &ConfigureRequest{Config: Attributes{"region": "eu"}, DataDir: "/data"}) {
		t.Errorf("configure got %+v", got)
	}

	r, err := host.Read(ctx, &ReadRequest{Type: "bucket", Name: "b", ID: "i", IdempotencyKey: "k", Config: goodConfig})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Exists || r.ID != "id-b" || !reflect.DeepEqual(r.Attributes, Attributes{"name": "b"}) {
		t.Errorf("read %+v", r)
	}
	if got := rec.last("Read"); !reflect.DeepEqual(got, &ReadRequest{Type: "bucket", Name: "b", ID: "i", IdempotencyKey: "k", Config: goodConfig}) {
		t.Errorf("read got %+v", got)
	}

	cr, err := host.Create(ctx, &CreateRequest{Type: "bucket", Name: "b", Config: goodConfig, IdempotencyKey: "k", Protection: ProtectionProtected})
	if err != nil || cr.Diagnostics.HasError() {
		t.Fatalf("create %v %v", cr, err)
	}
	if cr.ID != "id-b" || !reflect.DeepEqual(cr.Attributes, Attributes{"arn": "arn:b"}) {
		t.Errorf("create %+v", cr)
	}
	if got := rec.last("Create").(*CreateRequest); got.Protection != ProtectionProtected || got.IdempotencyKey != "k" {
		t.Errorf("create got %+v", got)
	}

	u, err := host.Update(ctx, &UpdateRequest{Type: "bucket", Name: "b", ID: "i", PriorAttributes: Attributes{"size": 1.0}, Config: goodConfig, Protection: ProtectionDurable})
	if err != nil || u.Diagnostics.HasError() {
		t.Fatalf("update %v %v", u, err)
	}
	wantU := &UpdateRequest{Type: "bucket", Name: "b", ID: "i", PriorAttributes: Attributes{"size": 1.0}, Config: goodConfig, Protection: ProtectionDurable}
	if got := rec.last("Update"); !reflect.DeepEqual(got, wantU) {
		t.Errorf("update got %+v, want %+v", got, wantU)
	}

	// The server's own checks hold over the wire too.
	cr, err = host.Create(ctx, &CreateRequest{Type: "bucket", Name: "c", Config: Attributes{"name": "c", "id_hint": "h", "bogus": 1}, IdempotencyKey: "k2"})
	if err != nil {
		t.Fatal(err)
	}
	if len(cr.Diagnostics) != 1 || !reflect.DeepEqual(cr.Diagnostics[0].AttributePath, []string{"bogus"}) {
		t.Errorf("create with unknown attribute: %v", cr.Diagnostics)
	}
	cr, err = host.Create(ctx, &CreateRequest{Type: "bucket", Name: "d", Config: goodConfig})
	if err != nil || !cr.Diagnostics.HasError() {
		t.Errorf("create without idempotency key: %v %v", cr, err)
	}
	if n := rec.count("Create"); n != 1 {
		t.Errorf("provider Create called %d times, want only the valid one", n)
	}
}

// A provider that panics answers with a diagnostic and goes on serving.
func TestGRPCPanicDoesNotKillServer(t *testing.T) {
	rec := &recorder{panicWith: "boom"}
	host := dispense(t, rec)
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		r, err := host.Read(ctx, &ReadRequest{Type: "bucket", Name: "b"})
		if err != nil {
			t.Fatalf("call %d: transport error %v", i, err)
		}
		if !r.Diagnostics.HasError() || !strings.Contains(r.Diagnostics[0].Summary, "provider panicked: boom") {
			t.Fatalf("call %d: diagnostics %v", i, r.Diagnostics)
		}
	}
	if rec.count("Read") != 3 {
		t.Errorf("provider Read called %d times, want 3", rec.count("Read"))
	}
}

func TestGRPCClientEncodeErrorIsLocal(t *testing.T) {
	rec := &recorder{}
	host := dispense(t, rec)
	_, err := host.Create(context.Background(), &CreateRequest{Type: "bucket", Name: "b", Config: Attributes{"f": func() {}}, IdempotencyKey: "k"})
	if err == nil || !strings.Contains(err.Error(), "encode attributes") {
		t.Errorf("err = %v, want an encode error", err)
	}
	if len(rec.Calls()) != 0 {
		t.Errorf("provider called: %v", rec.Calls())
	}
}
