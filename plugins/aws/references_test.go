package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// TestEndToEndReferences: the aws provider's computed
// attributes (a bucket's arn and region, a table's arn and stream settings)
// can be referenced, through the real binary and plugins on the emulators. A
// mock resource's tags reference them: plan shows (known after apply) before
// the first apply; apply resolves them from what the aws plugin returned,
// and the outputs carry them, the bool keeping its type.
func TestEndToEndReferences(t *testing.T) {
	s3Endpoint, ddbEndpoint := emulators(t)
	ctx := context.Background()
	e := newE2E(t, true)
	tmp := e.dir
	e.env = testEnv(t, "test", "test")

	run := randomHex(t, 4)
	bucket, table := "bw-refs-"+run, "bw-refs-"+run
	spec := `version: 1
stack: aws-refs
providers:
  mock: {}
  cloud:
    source: aws
    config:
      region: us-east-1
      timeout_seconds: 60
      endpoints: {s3: "` + s3Endpoint + `", dynamodb: "` + ddbEndpoint + `"}
default_provider: mock
resources:
  - name: storage
    type: s3_bucket
    provider: cloud
    config: {bucket: ` + bucket + `}
  - name: database
    type: dynamodb_table
    provider: cloud
    config: {table: ` + table + `, hash_key: id}
  - name: app
    type: compute
    config:
      tags:
        bucket_arn: "${storage.arn}"
        region: "${storage.region}"
        table_arn: "${database.arn}"
        stream: "arn=${database.stream_arn} view=${database.stream_view_type}"
outputs:
  bucket_arn: {value: "${storage.arn}"}
  table_arn: {value: "${database.arn}"}
  stream_enabled: {value: "${database.stream_enabled}"}
  stream_arn: {value: "${database.stream_arn}"}
`
	specPath := filepath.Join(tmp, "refs.yaml")
	if err := os.WriteFile(specPath, []byte(spec), 0o600); err != nil {
		t.Fatal(err)
	}
	s3c, ddb := clients(s3Endpoint, ddbEndpoint)
	t.Cleanup(func() {
		s3c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String("seed.txt")})
		s3c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(".bulwark/idempotency-key")})
		s3c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(bucket)})
		ddb.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(table)})
	})

	// Before the first apply none of them is known.
	plan := e.run(0, "plan.jsonl", "plan", specPath)
	for _, want := range []string{`"bucket_arn":"(known after apply)"`, `"table_arn":"(known after apply)"`, `"region":"(known after apply)"`, `"stream":"(known after apply)"`} {
		if !strings.Contains(plan, want) {
			t.Fatalf("plan before the first apply does not show %s:\n%s", want, plan)
		}
	}

	e.run(0, "apply.jsonl", "apply", "--yes", specPath)
	got := e.run(0, "output.jsonl", "output", specPath, "--json")
	var doc struct {
		Outputs map[string]struct {
			Value any `json:"value"`
		} `json:"outputs"`
	}
	if err := json.Unmarshal([]byte(got), &doc); err != nil {
		t.Fatalf("output --json: %v\n%s", err, got)
	}
	described, err := ddb.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		t.Fatal(err)
	}
	tableARN := aws.ToString(described.Table.TableArn)
	want := map[string]any{
		"bucket_arn":     "arn:aws:s3:::" + bucket,
		"table_arn":      tableARN,
		"stream_enabled": false, // a bool, not "false": one whole reference keeps its type
		"stream_arn":     "",    // the emulator has no streams
	}
	for k, v := range want {
		if o, ok := doc.Outputs[k]; !ok || o.Value != v {
			t.Errorf("output %s = %#v, want %#v (%s)", k, o.Value, v, got)
		}
	}
	show := e.run(0, "show.jsonl", "state", "show", specPath, "app", "--json")
	var app struct {
		Resource struct {
			Config struct {
				Tags map[string]string `json:"tags"`
			} `json:"config"`
		} `json:"resource"`
	}
	if err := json.Unmarshal([]byte(show), &app); err != nil {
		t.Fatalf("state show --json: %v\n%s", err, show)
	}
	wantTags := map[string]string{"bucket_arn": "arn:aws:s3:::" + bucket, "region": "us-east-1", "table_arn": tableARN, "stream": "arn= view="}
	for k, v := range wantTags {
		if app.Resource.Config.Tags[k] != v {
			t.Errorf("app's tag %s = %q, want %q (%s)", k, app.Resource.Config.Tags[k], v, show)
		}
	}
	// Nothing changes on a second plan: what was resolved is what is there.
	e.run(0, "plan2.jsonl", "plan", specPath, "--detailed-exitcode")
	e.run(0, "teardown.jsonl", "teardown", specPath, "--yes")
	if _, err := ddb.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)}); errorCode(err) != "ResourceNotFoundException" {
		t.Fatalf("table %s after the teardown: %v", table, err)
	}
}
