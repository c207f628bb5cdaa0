package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// awsSpec is a spec of stack name with one bucket, resource precious, at
// the given protection, on the emulator.
func awsSpec(t *testing.T, dir, name, bucket, protection, s3Endpoint, ddbEndpoint string) string {
	t.Helper()
	spec := `version: 1
stack: ` + name + `
providers:
  cloud:
    source: aws
    config:
      region: us-east-1
      timeout_seconds: 60
      endpoints:
        s3: ` + s3Endpoint + `
        dynamodb: ` + ddbEndpoint + `
default_provider: cloud
resources:
  - name: precious
    type: s3_bucket
    protection: ` + protection + `
    config:
      bucket: ` + bucket + `
`
	path := filepath.Join(dir, name+".yaml")
	if err := os.WriteFile(path, []byte(spec), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestEndToEndClaims: one resource never has two owners, on the real
// plugin and S3 emulator: a bucket made by hand (user-precious, holding
// family.jpg) imported into stack impa as protected, then into stack impb
// as ephemeral. impa's import stamps its claim on the bucket; impb's is
// refused (exit 1) and records nothing; impb's teardown deletes nothing;
// family.jpg is still there.
func TestEndToEndClaims(t *testing.T) {
	s3Endpoint, ddbEndpoint := emulators(t)
	ctx := context.Background()
	e := newE2E(t, false)
	tmp := e.dir
	e.env = testEnv(t, "test", "test")
	run := randomHex(t, 4)
	bucket := "user-precious-" + run
	s3c, _ := clients(s3Endpoint, ddbEndpoint)
	t.Cleanup(func() {
		for _, k := range []string{"family.jpg", ".bulwark/idempotency-key", "seed.txt"} {
			s3c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(k)})
		}
		s3c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(bucket)})
	})
	if _, err := s3c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	if _, err := s3c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("family.jpg"), Body: strings.NewReader("a photo")}); err != nil {
		t.Fatal(err)
	}
	photo := func(when string) {
		t.Helper()
		if _, err := s3c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String("family.jpg")}); err != nil {
			t.Fatalf("%s: family.jpg: %v", when, err)
		}
	}
	impa := awsSpec(t, tmp, "impa-"+run, bucket, "protected", s3Endpoint, ddbEndpoint)
	impb := awsSpec(t, tmp, "impb-"+run, bucket, "ephemeral", s3Endpoint, ddbEndpoint)

	e.run(0, "impa-import.jsonl", "import", impa, "precious", bucket)
	if got := marker(ctx, t, s3c, bucket); !strings.HasPrefix(got, "bulwark:impa-"+run+":") {
		t.Fatalf("after impa's import the bucket carries %q, want impa's claim", got)
	}
	e.run(1, "impb-import.jsonl", "import", impb, "precious", bucket)
	if all := strings.Join(e.outputs[len(e.outputs)-2:], ""); !strings.Contains(all, "belongs to stack impa-"+run) || !strings.Contains(all, "nothing was recorded") {
		t.Fatalf("impb's import:\n%s", all)
	}
	if out := e.run(0, "impb-list.jsonl", "state", "list", impb); strings.TrimSpace(out) != "" {
		t.Fatalf("impb records:\n%s", out)
	}
	e.run(0, "impb-teardown.jsonl", "teardown", impb, "--yes")
	photo("after impb's teardown")
	out := e.run(0, "impa-plan.jsonl", "plan", impa, "--detailed-exitcode", "--show-unchanged")
	if !strings.Contains(out, "=   no change  precious") {
		t.Fatalf("impa's plan:\n%s", out)
	}
	// impa's teardown is refused (protected); its forget releases it.
	e.run(0, "impa-forget.jsonl", "state", "forget", impa, "precious")
	photo("after impa's forget")
	e.run(0, "impb-import2.jsonl", "import", "--from", "impa-"+run, impb, "precious", bucket)
	if got := marker(ctx, t, s3c, bucket); !strings.HasPrefix(got, "bulwark:impb-"+run+":") {
		t.Fatalf("after impb's import --from the bucket carries %q, want impb's claim", got)
	}
	photo("after impb's import")
}

// TestEndToEndMadeAgainAtTheRecordedID: a bucket
// deleted and made again out of band under the recorded name carries no
// key. plan shows the conflict the teardown meets (never "no change"), and
// the teardown deletes nothing.
func TestEndToEndMadeAgainAtTheRecordedID(t *testing.T) {
	s3Endpoint, ddbEndpoint := emulators(t)
	ctx := context.Background()
	e := newE2E(t, false)
	tmp := e.dir
	e.env = testEnv(t, "test", "test")
	run := randomHex(t, 4)
	bucket := "bw-again-" + run
	s3c, _ := clients(s3Endpoint, ddbEndpoint)
	t.Cleanup(func() {
		for _, k := range []string{"theirs.txt", ".bulwark/idempotency-key", "seed.txt"} {
			s3c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(k)})
		}
		s3c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(bucket)})
	})
	spec := awsSpec(t, tmp, "again-"+run, bucket, "ephemeral", s3Endpoint, ddbEndpoint)
	e.run(0, "apply.jsonl", "apply", spec, "--yes")

	// Deleted and made again behind bulwark's back, with someone's object.
	for _, k := range []string{".bulwark/idempotency-key", "seed.txt"} {
		if _, err := s3c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(k)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s3c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	if _, err := s3c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	if _, err := s3c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("theirs.txt"), Body: strings.NewReader("someone's")}); err != nil {
		t.Fatal(err)
	}

	out := e.run(1, "plan.jsonl", "plan", spec)
	if !strings.Contains(out, "!   conflict   precious") || !strings.Contains(out, "carries no key") || strings.Contains(out, "no change") {
		t.Fatalf("plan of a bucket made again at the recorded id:\n%s", out)
	}
	e.run(1, "teardown.jsonl", "teardown", spec, "--yes")
	if _, err := s3c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String("theirs.txt")}); err != nil {
		t.Fatalf("after the refused teardown: theirs.txt: %v", err)
	}
}
