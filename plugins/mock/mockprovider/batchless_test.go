package mockprovider_test

import (
	"context"
	"testing"

	"github.com/bulwark-iac/bulwark/plugins/mock/mockprovider"
	"github.com/bulwark-iac/bulwark/sdk"
	"github.com/bulwark-iac/bulwark/sdk/providertest"
)

// interfaces reports which optional sdk interfaces p implements.
func interfaces(p sdk.Provider) map[string]bool {
	_, reads := p.(sdk.BatchReader)
	_, validates := p.(sdk.BatchValidator)
	_, creates := p.(sdk.BatchCreator)
	_, imports := p.(sdk.Importer)
	_, releases := p.(sdk.Releaser)
	_, closes := p.(sdk.Closer)
	_, data := p.(sdk.DataReader)
	return map[string]bool{"BatchReader": reads, "BatchValidator": validates, "BatchCreator": creates,
		"Importer": imports, "Releaser": releases, "Closer": closes, "DataReader": data}
}

func TestWithoutBatches(t *testing.T) {
	tests := []struct {
		name    string
		p       sdk.Provider
		batches bool
	}{
		{"New", mockprovider.New(), true},
		{"WithoutBatches", mockprovider.WithoutBatches(mockprovider.New()), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := map[string]bool{"BatchReader": tt.batches, "BatchValidator": tt.batches, "BatchCreator": tt.batches,
				"Importer": true, "Releaser": true, "Closer": true, "DataReader": true}
			for name, has := range interfaces(tt.p) {
				if has != want[name] {
					t.Errorf("implements %s: %v, want %v", name, has, want[name])
				}
			}
			// What the host sees: Serve declares a batch call only when
			// the provider has it.
			resp, err := providertest.ServeGRPC(t, tt.p).GetSchema(context.Background(), &sdk.GetSchemaRequest{})
			if err != nil || resp.Diagnostics.HasError() {
				t.Fatalf("GetSchema: %v %v", err, resp)
			}
			c := resp.Capabilities
			if c.ReadMany != tt.batches || c.ValidateMany != tt.batches || c.CreateMany != tt.batches {
				t.Errorf("capabilities ReadMany %v ValidateMany %v CreateMany %v, want all %v", c.ReadMany, c.ValidateMany, c.CreateMany, tt.batches)
			}
			if !c.Import || !c.IdempotencyKeys {
				t.Errorf("capabilities %+v: Import and IdempotencyKeys must stay", c)
			}
		})
	}
}

// The same world behind the wrapper: what one makes, the other reads.
func TestWithoutBatchesSameProvider(t *testing.T) {
	dir := t.TempDir()
	p := mockprovider.WithoutBatches(configured(t, dir, sdk.Attributes{}))
	cr := create(t, p, "network", "network", "op_1:network", sdk.Attributes{})
	rr := read(t, p, &sdk.ReadRequest{Type: "network", Name: "network", ID: cr.ID})
	if !rr.Exists || rr.IdempotencyKey != "op_1:network" {
		t.Fatalf("Read through the wrapper: %+v", rr)
	}
	closeProvider(t, p)
	if n := worldResources(t, dir); n != 1 {
		t.Errorf("world.json holds %d resources after Close, want 1", n)
	}
}

func TestWithoutBatchesRefusesAnotherProvider(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("WithoutBatches of a provider that is not the mock did not panic")
		}
	}()
	mockprovider.WithoutBatches(struct{ sdk.Provider }{mockprovider.New()})
}

func TestFromEnv(t *testing.T) {
	tests := []struct {
		value   string
		batches bool
		wantErr bool
	}{
		{"", true, false},
		{"on", true, false},
		{"off", false, false},
		{"no", false, true},
		{"OFF", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.value, func(t *testing.T) {
			getenv := func(k string) string {
				if k != mockprovider.EnvBatch {
					t.Errorf("read %s, want %s", k, mockprovider.EnvBatch)
				}
				return tt.value
			}
			p, err := mockprovider.FromEnv(mockprovider.New(), getenv)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want an error: %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if _, ok := p.(sdk.BatchCreator); ok != tt.batches {
				t.Errorf("batch calls: %v, want %v", ok, tt.batches)
			}
		})
	}
}
