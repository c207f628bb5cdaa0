package main

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// TestEndToEndEstate applies examples/estate/stack-aws.yaml (the estate of
// network, app and data modules with the data tier on AWS) for dev and
// prod on the emulators, through the real bulwark binary and the mock and
// aws plugin processes: each environment makes its own table and bucket
// (checked through the SDK), a re-run is a no-op, teardown of prod is
// refused because its table is protected and leaves it in place, and the
// database password shows nowhere.
func TestEndToEndEstate(t *testing.T) {
	s3Endpoint, ddbEndpoint := emulators(t)
	ctx := context.Background()
	root := repoRoot(t)
	e := newE2E(t, true)
	password := "estate-pw-" + randomHex(t, 8)
	e.env = append(testEnv(t, "test", "test"), "BULWARK_VAR_db_password="+password)

	// The example folder, copied, with the emulators' endpoints in the
	// aws provider's config; the modules and var files as they are.
	src := filepath.Join(root, "examples", "estate")
	dst := filepath.Join(e.dir, "estate")
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	specPath := filepath.Join(dst, "stack-aws.yaml")
	b, err := os.ReadFile(specPath)
	if err != nil {
		t.Fatal(err)
	}
	const region = "    config:\n      region: us-east-1\n"
	if n := strings.Count(string(b), region); n != 1 {
		t.Fatalf("examples/estate/stack-aws.yaml: the aws provider's config (%q) occurs %d times, want once", region, n)
	}
	spec := strings.Replace(string(b), region, region+"      timeout_seconds: 60\n      endpoints:\n        s3: "+s3Endpoint+"\n        dynamodb: "+ddbEndpoint+"\n", 1)
	if err := os.WriteFile(specPath, []byte(spec), 0o600); err != nil {
		t.Fatal(err)
	}

	prefix := "bw-estate-" + randomHex(t, 4)
	s3c, ddb := clients(s3Endpoint, ddbEndpoint)
	t.Cleanup(func() {
		// Leave nothing behind on the emulators, whatever happened.
		for _, env := range []string{"dev", "prod"} {
			bucket := prefix + "-" + env + "-backups"
			for _, key := range []string{"seed.txt", ".bulwark/idempotency-key"} {
				s3c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
			}
			s3c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(bucket)})
			ddb.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(prefix + "-" + env + "-db")})
		}
	})
	exists := func(env string) {
		t.Helper()
		if _, err := s3c.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(prefix + "-" + env + "-backups")}); err != nil {
			t.Errorf("%s: bucket %s-%s-backups: %v", env, prefix, env, err)
		}
		if _, err := ddb.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(prefix + "-" + env + "-db")}); err != nil {
			t.Errorf("%s: table %s-%s-db: %v", env, prefix, env, err)
		}
	}

	args := func(env string, more ...string) []string {
		return append([]string{specPath, "--var-file", filepath.Join(dst, "envs", env+".yaml"), "--var", "name_prefix=" + prefix}, more...)
	}
	e.run(0, "validate.jsonl", append([]string{"validate"}, args("prod")...)...)
	out := e.run(0, "dev.jsonl", append([]string{"apply"}, args("dev", "--yes")...)...)
	if !strings.Contains(out, "Apply complete: 10 changed") || !strings.Contains(out, "database_url = (sensitive)") {
		t.Fatalf("apply dev:\n%s", out)
	}
	exists("dev")
	out = e.run(0, "prod.jsonl", append([]string{"apply"}, args("prod", "--yes")...)...)
	if !strings.Contains(out, "Apply complete: 21 changed") {
		t.Fatalf("apply prod:\n%s", out)
	}
	exists("prod")
	if ev := e.events("prod.jsonl")["db.table"]; ev.Status != "ok" {
		t.Errorf("prod's db.table: last event %+v", ev)
	}

	// Separate stacks: prod's state holds prod's table, on the aws provider.
	list := e.run(0, "list.jsonl", append([]string{"state", "list"}, args("prod")...)...)
	if !strings.Contains(list, "db.table") || !strings.Contains(list, prefix+"-prod-db") || strings.Contains(list, prefix+"-dev-db") {
		t.Errorf("state list of prod:\n%s", list)
	}

	// A re-run is a no-op.
	plan := e.run(0, "noop.jsonl", append([]string{"plan"}, args("prod", "--detailed-exitcode")...)...)
	if !strings.Contains(plan, "Plan: 0 to create, 0 to update, 0 to replace, 0 to delete") {
		t.Errorf("plan after apply:\n%s", plan)
	}

	// Teardown of prod is refused: its table is protected. Nothing is
	// deleted, on AWS or in the state.
	e.run(3, "teardown.jsonl", append([]string{"teardown"}, args("prod", "--yes")...)...)
	exists("prod")
	if list2 := e.run(0, "list2.jsonl", append([]string{"state", "list"}, args("prod")...)...); list2 != list {
		t.Errorf("the refused teardown changed the state:\nbefore:\n%s\nafter:\n%s", list, list2)
	}

	for i, o := range e.outputs {
		if strings.Contains(o, password) {
			t.Errorf("output %d shows the database password:\n%s", i, o)
		}
	}
	// Nor anything bulwark wrote: state, journal, revisions, events.
	seen := 0
	err = filepath.WalkDir(e.dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Dir(path) == e.plugins || path == e.bin {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if filepath.Base(path) == "state.json" {
			seen++
		}
		if bytes.Contains(b, []byte(password)) {
			t.Errorf("%s carries the database password", path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen < 2 {
		t.Errorf("found %d state.json under %s, want dev's and prod's", seen, e.dir)
	}
}
