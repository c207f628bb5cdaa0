package main

import (
	"bytes"
	"context"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// TestEndToEndIDFromSecret: a bucket named after a
// sensitive variable (bucket: "bk-${var.tok}") has the secret in the id and
// the arn the aws provider computes from it. Through the real binary and
// plugins on the emulators, with the state on files and on S3 (its WAL
// objects included): what is stored holds none of it in clear, and state
// show (text and --json), status --json, plan (text and --json), output and
// the events show a mask; the id still reaches the provider (a second plan
// finds the bucket, the teardown deletes it).
func TestEndToEndIDFromSecret(t *testing.T) {
	s3Endpoint, ddbEndpoint := emulators(t)
	ctx := context.Background()
	tmp := t.TempDir()
	bin, plugins := filepath.Join(tmp, "bulwark"), filepath.Join(tmp, "plugins")
	goBuild(t, bin, "github.com/bulwark-iac/bulwark/cmd/bulwark")
	goBuild(t, filepath.Join(plugins, "bulwark-provider-aws"), "./plugins/aws")
	s3c, _ := clients(s3Endpoint, ddbEndpoint)

	stateBucket := "bw-sec-state-" + randomHex(t, 4)
	if _, err := s3c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(stateBucket)}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, state string }{
		{"file", ""},
		{"s3", "s3://" + stateBucket + "/sec?region=us-east-1&endpoint=" + url.QueryEscape(s3Endpoint)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(tmp, tc.name)
			if err := os.MkdirAll(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			tok := "tok" + randomHex(t, 6)
			bucket := "bk-" + tok
			e := &e2e{t: t, bin: bin, plugins: plugins, state: filepath.Join(dir, "state"), dir: dir}
			e.env = append(testEnv(t, "test", "test"), "BULWARK_VAR_tok="+tok)
			t.Cleanup(func() {
				for _, k := range []string{"seed.txt", ".bulwark/idempotency-key"} {
					s3c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(k)})
				}
				s3c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(bucket)})
			})
			spec := `version: 1
stack: secret-bucket
variables:
  tok: {type: string, sensitive: true}
providers:
  cloud:
    source: aws
    config:
      region: us-east-1
      timeout_seconds: 60
      endpoints: {s3: "` + s3Endpoint + `", dynamodb: "` + ddbEndpoint + `"}
resources:
  - name: storage
    type: s3_bucket
    config: {bucket: "bk-${var.tok}"}
outputs:
  arn: {value: "${storage.arn}"}
  id: {value: "${storage.id}"}
`
			specPath := filepath.Join(dir, "stack.yaml")
			if err := os.WriteFile(specPath, []byte(spec), 0o600); err != nil {
				t.Fatal(err)
			}
			stateArgs := func(args ...string) []string {
				if tc.state != "" {
					// Beside e2e's --state-dir, which then holds only the
					// providers' data folders.
					return append([]string{"--state", tc.state}, args...)
				}
				return args
			}
			e.run(0, "ev.jsonl", stateArgs("plan", specPath)...)
			e.run(0, "ev.jsonl", stateArgs("plan", specPath, "--json")...)
			e.run(0, "ev.jsonl", stateArgs("apply", specPath, "--yes")...)
			if _, err := s3c.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(bucket)}); err != nil {
				t.Fatalf("the bucket was not made: %v", err)
			}
			show := e.run(0, "ev.jsonl", stateArgs("state", "show", specPath, "storage")...)
			if !strings.Contains(show, "(sensitive)") {
				t.Errorf("state show masks nothing:\n%s", show)
			}
			showJSON := e.run(0, "ev.jsonl", stateArgs("state", "show", specPath, "storage", "--json")...)
			if !strings.Contains(showJSON, `"id": "(sensitive)"`) || !strings.Contains(showJSON, `"arn": "(sensitive)"`) {
				t.Errorf("state show --json does not mask the id and the arn whole:\n%s", showJSON)
			}
			if status := e.run(0, "ev.jsonl", stateArgs("status", specPath, "--json")...); !strings.Contains(status, `"id": "(sensitive)"`) {
				t.Errorf("status --json does not mask the id whole:\n%s", status)
			}
			e.run(0, "ev.jsonl", stateArgs("state", "list", specPath, "--json")...)
			e.run(0, "ev.jsonl", stateArgs("output", specPath, "--json")...)
			// The id reaches the provider clear: the bucket is found where
			// it is, so nothing changes.
			e.run(0, "ev.jsonl", stateArgs("plan", specPath, "--detailed-exitcode")...)
			e.run(0, "ev.jsonl", stateArgs("plan", specPath, "--json")...)
			e.run(0, "ev.jsonl", stateArgs("history", specPath, "--json")...)

			stored := storedBytes(t, ctx, s3c, e.state, stateBucket, tc.state != "")
			if len(stored) == 0 {
				t.Fatal("found nothing stored")
			}
			if i := bytes.Index(stored, []byte(tok)); i >= 0 {
				t.Errorf("what is stored holds the secret in clear: …%s…", stored[max(0, i-200):min(len(stored), i+100)])
			}
			ev, err := os.ReadFile(filepath.Join(dir, "ev.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			for i, out := range append(e.outputs, string(ev)) {
				if strings.Contains(out, tok) {
					t.Errorf("output %d holds the secret in clear:\n%s", i, out)
				}
			}

			e.run(0, "ev.jsonl", stateArgs("teardown", specPath, "--yes")...)
			if _, err := s3c.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(bucket)}); err == nil {
				t.Errorf("the bucket is still there after the teardown")
			}
		})
	}
}

// storedBytes is every byte the state backend holds: the files of the state
// folder, or the objects of the state bucket.
func storedBytes(t *testing.T, ctx context.Context, s3c *s3.Client, dir, bucket string, onS3 bool) []byte {
	t.Helper()
	var out bytes.Buffer
	if !onS3 {
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || !d.Type().IsRegular() {
				return err
			}
			if strings.Contains(p, string(filepath.Separator)+"providers"+string(filepath.Separator)) {
				return nil // the providers' data folders, not the state
			}
			b, err := os.ReadFile(p)
			out.Write(b)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return out.Bytes()
	}
	pages := s3.NewListObjectsV2Paginator(s3c, &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range page.Contents {
			out.WriteString(aws.ToString(o.Key) + "\n")
			got, err := s3c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: o.Key})
			if err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(got.Body)
			got.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			out.Write(b)
		}
	}
	return out.Bytes()
}
