package main

import (
	"net/http/httptest"
	"testing"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/bulwark-iac/bulwark/plugins/aws/awsprovider"
	"github.com/bulwark-iac/bulwark/sdk"
	"github.com/bulwark-iac/bulwark/sdk/providertest"
)

func newAWS(*testing.T) sdk.Provider { return awsprovider.New() }

// bucketData is the s3_bucket data source's read of the bucket the suite
// made: by its name (the id), answering its ARN.
var bucketData = providertest.Data{Type: "s3_bucket",
	Config: func(id string, _ map[string]any) map[string]any { return map[string]any{"bucket": id} },
	Want: func(id string, attrs map[string]any) map[string]any {
		return map[string]any{"bucket": id, "arn": attrs["arn"], "region": "us-east-1"}
	}}

// TestConformanceS3 runs the SDK's conformance suite on s3_bucket, behind
// the SDK's gRPC server, against gofakes3 served in this process: it needs
// no emulator started, so it runs in every `make test`.
func TestConformanceS3(t *testing.T) {
	setEnv(t, testEnv(t, "test", "test"))
	srv := httptest.NewServer(gofakes3.New(s3mem.New(), gofakes3.WithAutoBucket(false)).Server())
	t.Cleanup(srv.Close)
	providertest.RunGRPC(t, newAWS, providertest.Config{
		ProviderConfig: map[string]any{"region": "us-east-1", "timeout_seconds": 30, "endpoint": srv.URL},
		Elsewhere:      true,
		Resources: []providertest.Resource{
			// A renamed bucket can exist beside its old self (the schema's
			// Coexistence): the suite checks that it really can.
			{Type: "s3_bucket", Name: "storage", Config: map[string]any{"bucket": "bw-conformance-" + randomHex(t, 4)},
				Replacement: map[string]any{"bucket": "bw-conformance-" + randomHex(t, 4)},
				Data:        []providertest.Data{bucketData}},
		},
	})
}

// TestConformance runs the suite on both types against the emulators
// .ci/emulators.sh starts.
func TestConformance(t *testing.T) {
	s3Endpoint, ddbEndpoint := emulators(t)
	setEnv(t, testEnv(t, "test", "test"))
	run := randomHex(t, 4)
	providertest.RunGRPC(t, newAWS, providertest.Config{
		ProviderConfig: map[string]any{
			"region": "us-east-1", "timeout_seconds": 30,
			"endpoints": map[string]any{"s3": s3Endpoint, "dynamodb": ddbEndpoint},
		},
		// What the provider makes lives on the endpoints, its keys on the
		// resources: another machine resumes with nothing from this one's
		// data folder.
		Elsewhere: true,
		Resources: []providertest.Resource{
			{Type: "s3_bucket", Name: "storage", Config: map[string]any{"bucket": "bw-conformance-" + run},
				Replacement: map[string]any{"bucket": "bw-conformance-" + run + "-renamed"},
				Data:        []providertest.Data{bucketData}},
			{Type: "dynamodb_table", Name: "database",
				Config:      map[string]any{"table": "bw-conformance-" + run, "hash_key": "id"},
				Replacement: map[string]any{"table": "bw-conformance-" + run + "-renamed", "hash_key": "id"},
				Update:      map[string]any{"table": "bw-conformance-" + run, "hash_key": "id", "billing_mode": "PROVISIONED", "read_capacity": 2, "write_capacity": 3}},
		},
	})
}
