package mockprovider_test

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/bulwark-iac/bulwark/plugins/mock/mockprovider"
	"github.com/bulwark-iac/bulwark/sdk"
	"github.com/bulwark-iac/bulwark/sdk/providertest"
)

// lookup finds a resource of the world by type and name (and zone), over
// the real transport, through Serve's check of the config; what is not
// there is an error that names it, and nothing changes.
func TestLookup(t *testing.T) {
	dir := t.TempDir()
	made := configured(t, dir, nil)
	b := create(t, made, "s3_bucket", "logs", "k1", sdk.Attributes{"size": 3.0, "tags": map[string]any{"team": "a"}, "secret": "hush"})
	create(t, made, "network", "net", "k2", sdk.Attributes{"zone": "z1"})
	create(t, made, "network", "net", "k3", sdk.Attributes{"zone": "z2"})
	closeProvider(t, made)
	before := snapshot(t, dir)

	// Another process reads the world read-only, as a plan does.
	p := mockprovider.New()
	if resp, err := p.Configure(context.Background(), &sdk.ConfigureRequest{DataDir: dir, ReadOnly: true}); err != nil || resp.Diagnostics.HasError() {
		t.Fatalf("Configure: %v %v", resp, err)
	}
	host := providertest.ServeGRPC(t, p)
	s, err := host.GetSchema(context.Background(), &sdk.GetSchemaRequest{})
	if err != nil {
		t.Fatal(err)
	}
	dt, ok := s.DataSource("lookup")
	if !ok || !s.Capabilities.ReadData {
		t.Fatalf("no lookup: %+v %+v", s.DataSources, s.Capabilities)
	}
	if a, _ := dt.Attribute("secret"); !a.Sensitive {
		t.Errorf("lookup's secret is not sensitive: %+v", a)
	}
	tests := []struct {
		name    string
		cfg     sdk.Attributes
		want    sdk.Attributes // some of what it reads
		wantErr string
	}{
		{"bucket", sdk.Attributes{"type": "s3_bucket", "name": "logs"},
			sdk.Attributes{"id": b.ID, "arn": "mock:s3_bucket:logs:" + b.ID, "size": 3.0, "tags": map[string]any{"team": "a"}, "secret": "hush", "zone": nil}, ""},
		{"by zone", sdk.Attributes{"type": "network", "name": "net", "zone": "z2"}, sdk.Attributes{"zone": "z2"}, ""},
		{"two zones", sdk.Attributes{"type": "network", "name": "net"}, nil, `in zones ["z1" "z2"]: set zone`},
		{"none", sdk.Attributes{"type": "s3_bucket", "name": "nope"}, nil, `data d: the mock holds no s3_bucket named "nope"`},
		{"none in zone", sdk.Attributes{"type": "network", "name": "net", "zone": "z3"}, nil, `no network named "net" in zone z3`},
		{"unknown type", sdk.Attributes{"type": "vm", "name": "logs"}, nil, `no resource type "vm"`},
		{"missing name", sdk.Attributes{"type": "s3_bucket"}, nil, `missing required attribute "name"`},
		{"result set", sdk.Attributes{"type": "s3_bucket", "name": "logs", "id": "x"}, nil, `attribute "id" is computed`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := host.(sdk.DataReader).ReadData(context.Background(), &sdk.ReadDataRequest{Type: "lookup", Name: "d", Config: tt.cfg})
			if err != nil {
				t.Fatal(err)
			}
			if tt.wantErr != "" {
				if !r.Diagnostics.HasError() || !strings.Contains(r.Diagnostics.Err().Error(), tt.wantErr) {
					t.Errorf("got %v %v, want an error with %q", r.Attributes, r.Diagnostics, tt.wantErr)
				}
				return
			}
			if r.Diagnostics.HasError() {
				t.Fatal(r.Diagnostics)
			}
			for k, v := range tt.want {
				if !reflect.DeepEqual(r.Attributes[k], v) {
					t.Errorf("%s = %#v, want %#v", k, r.Attributes[k], v)
				}
			}
		})
	}
	if after := snapshot(t, dir); !reflect.DeepEqual(after, before) {
		t.Errorf("the lookups changed the world folder:\n%v\n%v", before, after)
	}
}
