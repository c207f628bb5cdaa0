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

// TestEndToEndResumeOnAnotherMachine: any machine can resume. The stack's
// state on S3 (the emulator), a bucket and a table on aws (the emulators).
// An apply killed on machine a right after the provider made its first
// resource, before the state recorded it (BULWARK_FAILPOINT=provider:1), is
// resumed on machine b: another folder, another config folder, other
// providers' data folders; machine a's folder is gone. The resource the
// crash left is found by the key the journal holds (it carries it as its
// marker or tag), not made twice, and recorded; the run converges.
func TestEndToEndResumeOnAnotherMachine(t *testing.T) {
	s3Endpoint, ddbEndpoint := emulators(t)
	ctx := context.Background()
	tmp := t.TempDir()
	bin, plugins := filepath.Join(tmp, "bulwark"), filepath.Join(tmp, "plugins")
	goBuild(t, bin, "github.com/bulwark-iac/bulwark/cmd/bulwark")
	goBuild(t, filepath.Join(plugins, "bulwark-provider-aws"), "./plugins/aws")

	run := randomHex(t, 4)
	stateBucket, bucket, table := "bw-e2e-"+run+"-state", "bw-e2e-"+run+"-moved", "bw-e2e-"+run+"-moved-table"
	s3c, ddb := clients(s3Endpoint, ddbEndpoint)
	if _, err := s3c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(stateBucket)}); err != nil {
		t.Fatal(err)
	}
	stateURL := "s3://" + stateBucket + "/stacks?region=us-east-1&endpoint=" + s3Endpoint
	spec := filepath.Join(tmp, "stack.yaml")
	if err := os.WriteFile(spec, []byte(`version: 1
stack: moved
providers:
  aws:
    config:
      region: us-east-1
      timeout_seconds: 60
      endpoints:
        s3: `+s3Endpoint+`
        dynamodb: `+ddbEndpoint+`
resources:
  - name: storage
    type: s3_bucket
    config: {bucket: `+bucket+`}
  - name: database
    type: dynamodb_table
    depends_on: [storage]
    config: {table: `+table+`, hash_key: id}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	machine := func(name string) *e2e {
		dir := filepath.Join(tmp, name)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		env := append(testEnv(t, "AKIDRESUME", "resume-secret"), "BULWARK_SECRETS_KEY=zub5eUOVMYwrpGXCD8hakPTtVxeVeeIDOj2BZLb9pqg=")
		return &e2e{t: t, bin: bin, plugins: plugins, state: filepath.Join(dir, ".bulwark"), env: env, dir: dir}
	}
	t.Cleanup(func() {
		for _, k := range []string{"seed.txt", ".bulwark/idempotency-key"} {
			s3c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(k)})
		}
		s3c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(bucket)})
		ddb.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(table)})
	})

	a := machine("a")
	a.env = append(a.env, "BULWARK_FAILPOINT=provider:1")
	a.run(-1, "a.jsonl", "--state", stateURL, "apply", "--yes", spec, "--parallelism", "1")
	if _, err := s3c.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatalf("the killed apply made no bucket: %v", err)
	}
	if err := os.RemoveAll(a.dir); err != nil {
		t.Fatal(err)
	}

	b := machine("b")
	out := b.run(0, "b.jsonl", "--state", stateURL, "resume", spec)
	if !strings.Contains(out, "complete") {
		t.Fatalf("resume on machine b:\n%s", out)
	}
	if ev := b.events("b.jsonl"); ev["storage"].Action == "create" && ev["storage"].Status == "ok" {
		t.Fatalf("machine b created the bucket again: %+v", ev["storage"])
	}
	b.run(0, "plan.jsonl", "--state", stateURL, "plan", spec, "--detailed-exitcode")
	st := b.run(0, "status.jsonl", "--state", stateURL, "status", spec, "--json")
	var status struct {
		Resources []struct{ Name, ID string } `json:"resources"`
	}
	if err := json.Unmarshal([]byte(st), &status); err != nil {
		t.Fatalf("status --json: %v\n%s", err, st)
	}
	ids := map[string]string{}
	for _, r := range status.Resources {
		ids[r.Name] = r.ID
	}
	if ids["storage"] != bucket || ids["database"] != table {
		t.Fatalf("machine b's state records %+v", status.Resources)
	}
	b.run(0, "teardown.jsonl", "--state", stateURL, "teardown", spec, "--yes")
}
