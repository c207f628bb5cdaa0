package pluginhost

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/bulwark-iac/bulwark/core/providers"
)

// A real plugin process that implements sdk.DataReader announces its data
// sources and reads them over gRPC; one whose config its schema refuses,
// or that finds nothing, is an error that names it.
func TestHostReadData(t *testing.T) {
	p, ctx := startTestPlugin(t, "data")
	s := p.Schema()
	if !s.Capabilities.ReadData {
		t.Fatalf("capabilities %+v: no ReadData", s.Capabilities)
	}
	dt, ok := s.DataSource("thing")
	if !ok {
		t.Fatalf("no data source thing in %+v", s.DataSources)
	}
	if a, _ := dt.Attribute("token"); !a.Sensitive || !a.Computed {
		t.Errorf("token is %+v, want computed and sensitive", a)
	}
	c, err := p.Create(ctx, &providers.CreateRequest{Type: "thing", Name: "x", IdempotencyKey: "k1", Config: providers.Attributes{"zone": "z1"}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := p.ReadData(ctx, &providers.ReadDataRequest{Type: "thing", Name: "that", Config: providers.Attributes{"id": c.ID}})
	if err != nil {
		t.Fatal(err)
	}
	if r.Attributes["id"] != c.ID || r.Attributes["zone"] != "z1" || r.Attributes["token"] != "tok-"+c.ID {
		t.Errorf("read %+v", r.Attributes)
	}
	tests := []struct {
		name string
		req  *providers.ReadDataRequest
		want string
	}{
		{"nothing there", &providers.ReadDataRequest{Type: "thing", Name: "gone", Config: providers.Attributes{"id": "nope"}}, `no thing with id "nope"`},
		{"missing argument", &providers.ReadDataRequest{Type: "thing", Name: "bad", Config: providers.Attributes{}}, `missing required attribute "id"`},
		{"result set", &providers.ReadDataRequest{Type: "thing", Name: "bad", Config: providers.Attributes{"id": c.ID, "zone": "z"}}, `attribute "zone" is computed`},
		{"unknown type", &providers.ReadDataRequest{Type: "other", Name: "bad", Config: providers.Attributes{"id": c.ID}}, `unknown data source type "other"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := p.ReadData(ctx, tt.req)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %+v, %v; want an error with %q", r, err, tt.want)
			}
		})
	}
}

// A plugin that reads no data (the test plugin's default, as any plugin
// that predates ReadData) offers none, and a ReadData of it is
// ErrUnsupported.
func TestHostReadDataUnsupported(t *testing.T) {
	p, ctx := startTestPlugin(t, "")
	if s := p.Schema(); s.Capabilities.ReadData || len(s.DataSources) != 0 {
		t.Errorf("a plugin without data sources offers %+v, %+v", s.Capabilities, s.DataSources)
	}
	_, err := p.ReadData(ctx, &providers.ReadDataRequest{Type: "thing", Name: "x", Config: providers.Attributes{"id": "a"}})
	if !errors.Is(err, providers.ErrUnsupported) {
		t.Errorf("ReadData: %v, want ErrUnsupported", err)
	}
}

// A read-only session (a plan) reads data: it is a read.
func TestHostReadDataReadOnly(t *testing.T) {
	dir := testPlugin(t)
	t.Setenv("TESTPLUGIN_MODE", "data")
	h := New(Options{Dirs: []string{dir}})
	t.Cleanup(h.Close)
	ctx := context.Background()
	p, err := h.Start(ctx, Config{Name: "t", Source: "test", DataDir: t.TempDir(), ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.ReadData(ctx, &providers.ReadDataRequest{Type: "thing", Name: "x", Config: providers.Attributes{"id": "none"}})
	if err == nil || !strings.Contains(err.Error(), `no thing with id "none"`) {
		t.Errorf("a read-only session's ReadData: %v, want the provider's answer", err)
	}
}
