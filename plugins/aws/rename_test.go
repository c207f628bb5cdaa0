package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// Replacing a durable resource needs consent, through the real binaries
// against the S3 emulator: renaming a durable bucket once deleted the old
// bucket with its object. Now the rename is refused without --replace (exit
// 3, nothing touched); with it and a failure after the replace, the rollback
// deletes the new bucket and the old one keeps its object (exit 11); with it
// and no failure, the new bucket is made first and the old one deleted in the
// cleanup phase (the user's consent).
func TestEndToEndDurableBucketRename(t *testing.T) {
	s3Endpoint, ddbEndpoint := emulators(t)
	ctx := context.Background()
	e := newE2E(t, true)
	tmp := e.dir
	e.env = testEnv(t, "test", "test")
	run := randomHex(t, 4)
	oldName, newName := "bw-rename-"+run+"-a", "bw-rename-"+run+"-b"
	spec := func(bucket string) string {
		p := filepath.Join(tmp, bucket+".yaml")
		text := fmt.Sprintf(`version: 1
stack: rename
providers:
  mock: {}
  cloud:
    source: aws
    config: {region: us-east-1, timeout_seconds: 60, endpoints: {s3: %q, dynamodb: %q}}
default_provider: mock
resources:
  - name: storage
    type: s3_bucket
    provider: cloud
    protection: durable
    config: {bucket: %s}
  - name: app
    type: compute
    depends_on: [storage]
    config: {tags: {bucket: "${storage.id}"}}
`, s3Endpoint, ddbEndpoint, bucket)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	s3c, _ := clients(s3Endpoint, ddbEndpoint)
	t.Cleanup(func() {
		for _, b := range []string{oldName, newName} {
			for _, k := range []string{"seed.txt", ".bulwark/idempotency-key", "customer-records.csv"} {
				s3c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(b), Key: aws.String(k)})
			}
			s3c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(b)})
		}
	})
	holds := func(bucket, key string) bool {
		t.Helper()
		obj, err := s3c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
		if err != nil {
			return false
		}
		obj.Body.Close()
		return true
	}
	exists := func(bucket string) bool {
		_, err := s3c.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(bucket)})
		return err == nil
	}

	v1, v2 := spec(oldName), spec(newName)
	e.run(0, "apply1.jsonl", "apply", v1, "--yes")
	if _, err := s3c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(oldName), Key: aws.String("customer-records.csv"), Body: strings.NewReader("id,name\n1,ada\n")}); err != nil {
		t.Fatal(err)
	}

	plan := e.run(3, "plan.jsonl", "plan", v2)
	if !strings.Contains(plan, "+/- replace    storage (s3_bucket, durable)") || !strings.Contains(plan, "its data will be deleted") {
		t.Errorf("plan of the rename:\n%s", plan)
	}
	e.run(3, "refused.jsonl", "apply", v2, "--yes")
	if !holds(oldName, "customer-records.csv") || exists(newName) {
		t.Fatalf("a refused rename touched the buckets")
	}

	e.run(11, "failed.jsonl", "apply", v2, "--yes", "--replace", "storage", "--simulate-failure", "app")
	if !holds(oldName, "customer-records.csv") {
		t.Fatalf("after the failed rename the old bucket lost customer-records.csv")
	}
	if exists(newName) {
		t.Fatalf("after the failed rename the new bucket %s is left", newName)
	}
	e.run(0, "plan1.jsonl", "plan", v1, "--detailed-exitcode")

	e.run(0, "renamed.jsonl", "apply", v2, "--yes", "--replace", "storage")
	if !exists(newName) || !holds(newName, "seed.txt") {
		t.Fatalf("the renamed bucket %s is not there, seeded", newName)
	}
	if exists(oldName) {
		t.Fatalf("the old bucket %s was not deleted in the cleanup phase", oldName)
	}
	e.run(0, "plan2.jsonl", "plan", v2, "--detailed-exitcode")
	e.run(0, "teardown.jsonl", "teardown", v2, "--yes")
	if exists(newName) {
		t.Errorf("teardown left %s", newName)
	}
}
