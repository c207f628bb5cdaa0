package awsprovider

import (
	"context"
	"strings"
	"testing"

	"github.com/bulwark-iac/bulwark/sdk"
	"github.com/bulwark-iac/bulwark/sdk/providertest"
)

// The s3_bucket data source reads a bucket that exists (made by another
// stack: here, straight through the API) against gofakes3 in-process, over
// the real transport, in a read-only session; a bucket that is not there,
// or a name S3 refuses, is an error on ["bucket"].
func TestBucketData(t *testing.T) {
	hermetic(t)
	endpoint := fakeS3(t)
	ctx := context.Background()
	name := unique(t, "bw-data")
	maker := configured(t, t.TempDir(), sdk.Attributes{"endpoint": endpoint, "timeout_seconds": 30.0})
	mustCreate(t, maker, &sdk.CreateRequest{Type: "s3_bucket", Name: "theirs", Config: sdk.Attributes{"bucket": name}, IdempotencyKey: "op_other:theirs"})

	p := New()
	if resp, err := p.Configure(ctx, &sdk.ConfigureRequest{Config: sdk.Attributes{"endpoint": endpoint, "timeout_seconds": 30.0}, DataDir: t.TempDir(), ReadOnly: true}); err != nil || resp.Diagnostics.HasError() {
		t.Fatalf("Configure: %v %v", resp, err)
	}
	host := providertest.ServeGRPC(t, p)
	s, err := host.GetSchema(ctx, &sdk.GetSchemaRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s.DataSource("s3_bucket"); !ok || !s.Capabilities.ReadData {
		t.Fatalf("no s3_bucket data source: %+v %+v", s.DataSources, s.Capabilities)
	}
	tests := []struct {
		name    string
		cfg     sdk.Attributes
		want    sdk.Attributes
		wantErr string
	}{
		{"exists", sdk.Attributes{"bucket": name}, sdk.Attributes{"bucket": name, "arn": "arn:aws:s3:::" + name, "region": "us-east-1",
			"bucket_regional_domain_name": name + ".s3.us-east-1.amazonaws.com"}, ""},
		{"absent", sdk.Attributes{"bucket": name + "-none"}, nil, `no bucket "` + name + `-none"`},
		{"invalid name", sdk.Attributes{"bucket": "Not_A_Bucket"}, nil, `invalid bucket name "Not_A_Bucket"`},
		{"missing name", sdk.Attributes{}, nil, `missing required attribute "bucket"`},
		{"result set", sdk.Attributes{"bucket": name, "arn": "x"}, nil, `attribute "arn" is computed`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := host.(sdk.DataReader).ReadData(ctx, &sdk.ReadDataRequest{Type: "s3_bucket", Name: "b", Config: tt.cfg})
			if err != nil {
				t.Fatal(err)
			}
			if tt.wantErr != "" {
				if !r.Diagnostics.HasError() || !strings.Contains(r.Diagnostics.Err().Error(), tt.wantErr) || r.Attributes != nil {
					t.Errorf("got %v %v, want an error with %q", r.Attributes, r.Diagnostics, tt.wantErr)
				}
				return
			}
			if r.Diagnostics.HasError() {
				t.Fatal(r.Diagnostics)
			}
			for k, v := range tt.want {
				if r.Attributes[k] != v {
					t.Errorf("%s = %#v, want %#v", k, r.Attributes[k], v)
				}
			}
		})
	}
}

func TestDNSSuffix(t *testing.T) {
	for region, want := range map[string]string{
		"us-east-1": "amazonaws.com", "eu-west-3": "amazonaws.com", "us-gov-west-1": "amazonaws.com",
		"cn-north-1": "amazonaws.com.cn", "us-iso-east-1": "c2s.ic.gov", "us-isob-east-1": "sc2s.sgov.gov",
	} {
		if got := dnsSuffix(region); got != want {
			t.Errorf("dnsSuffix(%s) = %s, want %s", region, got, want)
		}
	}
}
