package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"

	"github.com/bulwark-iac/bulwark/sdk"
	"github.com/bulwark-iac/bulwark/sdk/providertest"
)

// emulators returns the endpoints .ci/emulators.sh started, or skips the
// test when they are not running.
func emulators(t *testing.T) (s3Endpoint, ddbEndpoint string) {
	t.Helper()
	s3Endpoint, ddbEndpoint = os.Getenv("BULWARK_TEST_S3_ENDPOINT"), os.Getenv("BULWARK_TEST_DYNAMODB_ENDPOINT")
	if s3Endpoint == "" || ddbEndpoint == "" {
		t.Skip("BULWARK_TEST_S3_ENDPOINT / BULWARK_TEST_DYNAMODB_ENDPOINT are unset: run `make test-aws`, " +
			"or `.ci/emulators.sh start && eval \"$(.ci/emulators.sh env)\"` first")
	}
	return s3Endpoint, ddbEndpoint
}

// repoRoot is the workspace root (where go.work is), two folders up.
func repoRoot(t *testing.T) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("runtime.Caller failed")
	}
	return filepath.Join(filepath.Dir(file), "..", "..")
}

func randomHex(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// testEnv is the environment the provider runs under in these tests: the
// given credentials, region us-east-1, and nothing from the machine's own
// AWS setup (files, profile, metadata service, endpoint variables).
func testEnv(t *testing.T, keyID, secret string) []string {
	t.Helper()
	dir := t.TempDir()
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AWS_") {
			env = append(env, kv)
		}
	}
	return append(env,
		"AWS_ACCESS_KEY_ID="+keyID,
		"AWS_SECRET_ACCESS_KEY="+secret,
		"AWS_REGION=us-east-1",
		"AWS_CONFIG_FILE="+filepath.Join(dir, "config"),
		"AWS_SHARED_CREDENTIALS_FILE="+filepath.Join(dir, "credentials"),
		"AWS_EC2_METADATA_DISABLED=true",
		// bulwark's secrets key file goes here, never into the user's own
		// config folder.
		"XDG_CONFIG_HOME="+filepath.Join(dir, "xdg-config"),
	)
}

// setEnv replaces the test process's environment with env for the test
// (go-plugin hands its own environment to the plugin process).
func setEnv(t *testing.T, env []string) {
	t.Helper()
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "AWS_") {
			t.Setenv(k, "")
			os.Unsetenv(k)
		}
	}
	for _, kv := range env {
		if k, v, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "AWS_") {
			t.Setenv(k, v)
		}
	}
}

// clients are the test's own, to look at the emulators behind bulwark's
// back.
func clients(s3Endpoint, ddbEndpoint string) (*s3.Client, *dynamodb.Client) {
	creds := credentials.NewStaticCredentialsProvider("test", "test", "")
	return s3.New(s3.Options{Region: "us-east-1", BaseEndpoint: aws.String(s3Endpoint), UsePathStyle: true, Credentials: creds}),
		dynamodb.New(dynamodb.Options{Region: "us-east-1", BaseEndpoint: aws.String(ddbEndpoint), Credentials: creds})
}

func errorCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

// TestPluginProcess drives the real plugin executable through go-plugin,
// so sdk.Serve's checks run in front of the provider.
func TestPluginProcess(t *testing.T) {
	s3Endpoint, ddbEndpoint := emulators(t)
	setEnv(t, testEnv(t, "test", "test"))
	bin := filepath.Join(t.TempDir(), "bulwark-provider-aws")
	goBuild(t, bin, "./plugins/aws")
	ctx := context.Background()
	p := providertest.StartPlugin(t, bin)

	schema, err := p.GetSchema(ctx, &sdk.GetSchemaRequest{})
	if err != nil || schema.ProviderName != "aws" || schema.ProviderVersion != "0.1.0" || len(schema.ResourceTypes) != 2 {
		t.Fatalf("GetSchema: %+v %v", schema, err)
	}
	if !schema.Capabilities.IdempotencyKeys || len(schema.ProviderConfig) == 0 || !schema.Capabilities.ReadData || len(schema.DataSources) != 1 {
		t.Fatalf("GetSchema over gRPC: capabilities %+v, provider config %+v", schema.Capabilities, schema.ProviderConfig)
	}
	dir := t.TempDir()
	resp, err := p.Configure(ctx, &sdk.ConfigureRequest{Config: sdk.Attributes{"bogus": true}, DataDir: dir})
	if err != nil || !resp.Diagnostics.HasError() || resp.Diagnostics[0].AttributePath[0] != "bogus" {
		t.Fatalf("Configure with an unknown key: %+v %v", resp, err)
	}
	resp, err = p.Configure(ctx, &sdk.ConfigureRequest{DataDir: dir, Config: sdk.Attributes{
		"region": "us-east-1", "timeout_seconds": 30,
		"endpoints": map[string]any{"s3": s3Endpoint, "dynamodb": ddbEndpoint},
	}})
	if err != nil || resp.Diagnostics.HasError() {
		t.Fatalf("Configure: %+v %v", resp, err)
	}

	run := randomHex(t, 4)
	for _, c := range []struct {
		typ, attr string
		cfg       sdk.Attributes
	}{
		{"s3_bucket", "bucket", sdk.Attributes{"bucket": "bw-plugin-" + run}},
		{"dynamodb_table", "table", sdk.Attributes{"table": "bw-plugin-" + run, "hash_key": "id"}},
	} {
		t.Run(c.typ, func(t *testing.T) {
			key := "op_" + run + ":" + c.typ
			cr, err := p.Create(ctx, &sdk.CreateRequest{Type: c.typ, Name: "r", Config: c.cfg, IdempotencyKey: key, Protection: sdk.ProtectionDurable})
			if err != nil || cr.Diagnostics.HasError() || cr.ID != c.cfg[c.attr] {
				t.Fatalf("Create: %+v %v", cr, err)
			}
			again, err := p.Create(ctx, &sdk.CreateRequest{Type: c.typ, Name: "r", Config: c.cfg, IdempotencyKey: key})
			if err != nil || again.Diagnostics.HasError() || again.ID != cr.ID {
				t.Fatalf("retried Create: %+v %v", again, err)
			}
			rr, err := p.Read(ctx, &sdk.ReadRequest{Type: c.typ, Name: "r", IdempotencyKey: key, Config: c.cfg})
			if err != nil || !rr.Exists || rr.ID != cr.ID || rr.Attributes["arn"] == "" || rr.IdempotencyKey != key {
				t.Fatalf("Read by key: %+v %v", rr, err)
			}
			if c.typ == "s3_bucket" {
				// The data source finds the bucket, in the plugin process.
				dr, err := p.(sdk.DataReader).ReadData(ctx, &sdk.ReadDataRequest{Type: "s3_bucket", Name: "d", Config: sdk.Attributes{"bucket": cr.ID}})
				if err != nil || dr.Diagnostics.HasError() || dr.Attributes["arn"] != rr.Attributes["arn"] || dr.Attributes["bucket_regional_domain_name"] != cr.ID+".s3.us-east-1.amazonaws.com" {
					t.Fatalf("ReadData s3_bucket: %+v %v", dr, err)
				}
			}
			// A Create under another key meets a conflict, over gRPC too.
			other, err := p.Create(ctx, &sdk.CreateRequest{Type: c.typ, Name: "r", Config: c.cfg, IdempotencyKey: key + "-other"})
			if err != nil || !sdk.IsConflict(other.Diagnostics.Err()) {
				t.Fatalf("Create under another key: %+v %v", other, err)
			}
			// sdk.Serve checks the config against the schema first.
			bad, err := p.Create(ctx, &sdk.CreateRequest{Type: c.typ, Name: "r", Config: sdk.Attributes{c.attr: 5}, IdempotencyKey: key})
			if err != nil || !bad.Diagnostics.HasError() {
				t.Fatalf("Create with a mistyped attribute: %+v %v", bad, err)
			}
			// ... and refuses a protected Delete.
			dr, err := p.Delete(ctx, &sdk.DeleteRequest{Type: c.typ, Name: "r", ID: cr.ID, Protection: sdk.ProtectionProtected})
			if err != nil || !dr.Diagnostics.HasError() {
				t.Fatalf("protected Delete: %+v %v", dr, err)
			}
			if rr, _ := p.Read(ctx, &sdk.ReadRequest{Type: c.typ, Name: "r", ID: cr.ID}); rr == nil || !rr.Exists {
				t.Fatalf("the refused Delete deleted: %+v", rr)
			}
			dr, err = p.Delete(ctx, &sdk.DeleteRequest{Type: c.typ, Name: "r", ID: cr.ID, Attributes: cr.Attributes, Protection: sdk.ProtectionDurable})
			if err != nil || dr.Diagnostics.HasError() {
				t.Fatalf("Delete: %+v %v", dr, err)
			}
			rr, err = p.Read(ctx, &sdk.ReadRequest{Type: c.typ, Name: "r", ID: cr.ID})
			if err != nil || rr.Exists || rr.Diagnostics.HasError() {
				t.Fatalf("Read after Delete: %+v %v", rr, err)
			}
			dr, err = p.Delete(ctx, &sdk.DeleteRequest{Type: c.typ, Name: "r", ID: cr.ID})
			if err != nil || dr.Diagnostics.HasError() {
				t.Fatalf("Delete of the absent: %+v %v", dr, err)
			}
		})
	}
}

// e2e runs the real bulwark binary with the real mock and aws plugins.
type e2e struct {
	t       *testing.T
	bin     string
	plugins string
	state   string
	env     []string
	dir     string
	outputs []string // everything every command printed
}

// newE2E builds bulwark and the aws provider (and the mock, withMock) into a
// folder of the test's own, the state under it, for the end-to-end tests.
func newE2E(t *testing.T, withMock bool) *e2e {
	t.Helper()
	tmp := t.TempDir()
	e := &e2e{t: t, bin: filepath.Join(tmp, "bulwark"), plugins: filepath.Join(tmp, "plugins"), state: filepath.Join(tmp, "state"), dir: tmp}
	goBuild(t, e.bin, "github.com/bulwark-iac/bulwark/cmd/bulwark")
	if withMock {
		goBuild(t, filepath.Join(e.plugins, "bulwark-provider-mock"), "./plugins/mock")
	}
	goBuild(t, filepath.Join(e.plugins, "bulwark-provider-aws"), "./plugins/aws")
	return e
}

// run runs bulwark with args and wants exit code want; it returns stdout.
func (e *e2e) run(want int, events string, args ...string) string {
	e.t.Helper()
	full := append([]string{"--plugin-dir", e.plugins, "--state-dir", e.state, "--events", filepath.Join(e.dir, events)}, args...)
	cmd := exec.Command(e.bin, full...)
	cmd.Env = e.env
	cmd.Dir = e.dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		e.t.Fatalf("bulwark %s: %v", strings.Join(args, " "), err)
	}
	e.outputs = append(e.outputs, stdout.String(), stderr.String())
	if code != want {
		e.t.Fatalf("bulwark %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, want, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// event is one lifecycle event line.
type event struct {
	Resource string `json:"resource"`
	Action   string `json:"action"`
	Status   string `json:"status"`
	Error    string `json:"error"`
}

// events reads an events file: the last event of each resource.
func (e *e2e) events(name string) map[string]event {
	e.t.Helper()
	b, err := os.ReadFile(filepath.Join(e.dir, name))
	if err != nil {
		e.t.Fatal(err)
	}
	last := map[string]event{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var ev event
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			e.t.Fatalf("events %s: %v: %q", name, err, line)
		}
		last[ev.Resource] = ev
	}
	return last
}

// TestEndToEnd plays the demo's three acts with examples/aws-stack.yaml on
// the emulators, through the real bulwark binary and plugin processes, and
// checks the bucket and the table through the SDK after each act.
func TestEndToEnd(t *testing.T) {
	s3Endpoint, ddbEndpoint := emulators(t)
	ctx := context.Background()
	root := repoRoot(t)
	e := newE2E(t, true)
	tmp := e.dir

	// Credentials of this run only: the emulators accept any, and the
	// secret must appear nowhere bulwark writes.
	run := randomHex(t, 4)
	keyID, secret := "AKIDE2E"+strings.ToUpper(randomHex(t, 6)), "bulwark-e2e-secret-"+randomHex(t, 12)
	e.env = testEnv(t, keyID, secret)

	// The example, with names of this run and the emulators' endpoints.
	b, err := os.ReadFile(filepath.Join(root, "examples", "aws-stack.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	spec := string(b)
	bucket, table := "bw-e2e-"+run+"-storage", "bw-e2e-"+run+"-database"
	replace := func(s *string, old, new string) {
		t.Helper()
		if n := strings.Count(*s, old); n != 1 {
			t.Fatalf("examples/aws-stack.yaml: %q occurs %d times, want once", old, n)
		}
		*s = strings.Replace(*s, old, new, 1)
	}
	replace(&spec, "bucket: bulwark-demo-storage-change-me", "bucket: "+bucket)
	replace(&spec, "table: bulwark-demo-database", "table: "+table)
	replace(&spec, "      region: us-east-1\n", "      region: us-east-1\n      timeout_seconds: 60\n      endpoints:\n"+
		"        s3: "+s3Endpoint+"\n        dynamodb: "+ddbEndpoint+"\n")
	lowered := spec
	replace(&lowered, "protection: protected", "protection: ephemeral")
	bogus := spec
	replace(&bogus, "      timeout_seconds: 60\n", "      timeout_seconds: 60\n      secret_key: "+secret+"\n")
	specPath, loweredPath, bogusPath := filepath.Join(tmp, "aws-stack.yaml"), filepath.Join(tmp, "aws-stack-lowered.yaml"), filepath.Join(tmp, "aws-stack-bogus.yaml")
	for p, s := range map[string]string{specPath: spec, loweredPath: lowered, bogusPath: bogus} {
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}

	s3c, ddb := clients(s3Endpoint, ddbEndpoint)
	seeded := func(when string) {
		t.Helper()
		obj, err := s3c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String("seed.txt")})
		if err != nil {
			t.Fatalf("%s: bucket %s has no seed object: %v", when, bucket, err)
		}
		obj.Body.Close()
		item, err := ddb.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: map[string]ddbtypes.AttributeValue{"id": &ddbtypes.AttributeValueMemberS{Value: "seed"}}})
		if err != nil || len(item.Item) == 0 {
			t.Fatalf("%s: table %s has no seed row: %v", when, table, err)
		}
	}
	t.Cleanup(func() {
		// Leave nothing behind on the emulators, whatever happened.
		s3c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String("seed.txt")})
		s3c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(".bulwark/idempotency-key")})
		s3c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(bucket)})
		ddb.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(table)})
	})

	// The spec validates against the real schemas; an unknown provider
	// config key is rejected, and its value (here the secret) not echoed.
	e.run(0, "validate.jsonl", "validate", specPath)
	out := e.run(1, "validate-bogus.jsonl", "validate", bogusPath)
	if all := strings.Join(e.outputs[len(e.outputs)-2:], ""); !strings.Contains(all, "secret_key") {
		t.Fatalf("validate of an unknown config key does not name it:\n%s", all)
	}
	_ = out

	// Act 1: compute fails; the rollback preserves the durable bucket and
	// the protected table, both holding their seeds.
	e.run(11, "act1.jsonl", "apply", "--yes", specPath, "--simulate-failure", "compute")
	seeded("after act 1")
	st := e.run(0, "status.jsonl", "status", specPath, "--json")
	var status struct {
		Resources []struct{ Name, Provider, ID string } `json:"resources"`
	}
	if err := json.Unmarshal([]byte(st), &status); err != nil {
		t.Fatalf("status --json: %v\n%s", err, st)
	}
	ids := map[string]string{}
	for _, r := range status.Resources {
		ids[r.Name] = r.ID
	}
	if len(ids) != 2 || ids["storage"] != bucket || ids["database"] != table {
		t.Fatalf("after act 1 the state records %+v, want storage=%s and database=%s", status.Resources, bucket, table)
	}

	// The provider's private data (what it made, under which key) is in
	// the stack's state, sealed; its data folder holds nothing (no
	// create-intents.json a crash would leave on this machine, so any machine
	// can resume).
	privates := 0
	if err := filepath.WalkDir(e.state, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		if strings.Contains(filepath.ToSlash(path), "/providers/aws/") {
			t.Errorf("the aws provider left %s in its data folder", path)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		privates += bytes.Count(b, []byte(`"private":"sealed:v1:`)) + bytes.Count(b, []byte(`"private": "sealed:v1:`))
		if bytes.Contains(b, []byte(`"private":"ey`)) || bytes.Contains(b, []byte(`"private": "ey`)) {
			t.Errorf("%s holds private data in clear", path)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if privates == 0 {
		t.Fatalf("no sealed private data in the state under %s", e.state)
	}

	// Act 2: the re-apply converges, skipping storage and database.
	out = e.run(0, "act2.jsonl", "apply", "--yes", specPath)
	if !strings.Contains(out, "3 changed, 2 already in place") {
		t.Fatalf("act 2 output:\n%s", out)
	}
	ev := e.events("act2.jsonl")
	for _, name := range []string{"storage", "database"} {
		if ev[name].Status != "skipped" {
			t.Fatalf("act 2: %s was not skipped: %+v", name, ev[name])
		}
	}
	for _, name := range []string{"network", "compute", "load_balancer"} {
		if ev[name].Status != "ok" {
			t.Fatalf("act 2: %s: %+v", name, ev[name])
		}
	}
	e.run(0, "act2-again.jsonl", "apply", "--yes", specPath)
	seeded("after act 2")

	// Act 3: the teardown is refused whole; the data is still there.
	e.run(3, "act3.jsonl", "teardown", specPath, "--yes")
	seeded("after act 3")

	// Lower database's protection, apply it, and the teardown goes through:
	// both the bucket and the table are gone.
	e.run(0, "lower.jsonl", "apply", "--yes", loweredPath)
	e.run(0, "teardown.jsonl", "teardown", loweredPath, "--yes")
	if _, err := s3c.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(bucket)}); errorCode(err) != "NotFound" {
		t.Fatalf("bucket %s after the teardown: %v", bucket, err)
	}
	if _, err := ddb.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)}); errorCode(err) != "ResourceNotFoundException" {
		t.Fatalf("table %s after the teardown: %v", table, err)
	}

	// The credentials appear in nothing bulwark printed or wrote: state,
	// journal, the providers' data folders, events, output.
	for i, o := range e.outputs {
		if strings.Contains(o, secret) || strings.Contains(o, keyID) {
			t.Fatalf("output %d of bulwark carries the credentials:\n%s", i, o)
		}
	}
	seen := 0
	err = filepath.WalkDir(tmp, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || path == bogusPath || filepath.Dir(path) == e.plugins || path == e.bin {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		switch filepath.Base(path) {
		case "state.json", "journal.jsonl":
			seen++
		}
		if bytes.Contains(b, []byte(secret)) || bytes.Contains(b, []byte(keyID)) {
			t.Errorf("%s carries the credentials", path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen < 2 {
		t.Fatalf("found %d of state.json and journal.jsonl under %s", seen, e.state)
	}
}

// TestEndToEndOutOfBand: a bucket and a table made out of band, each holding
// someone's data, that a new stack names. `plan` shows both as conflicts,
// `apply` refuses before its first step (exit 1) and says how to import
// them, and `teardown --yes` leaves both, and their data, as they were.
func TestEndToEndOutOfBand(t *testing.T) {
	s3Endpoint, ddbEndpoint := emulators(t)
	ctx := context.Background()
	e := newE2E(t, false)
	tmp := e.dir
	e.env = testEnv(t, "test", "test")

	run := randomHex(t, 4)
	bucket, table := "bw-oob-"+run+"-storage", "bw-oob-"+run+"-database"
	s3c, ddb := clients(s3Endpoint, ddbEndpoint)
	t.Cleanup(func() {
		for _, k := range []string{"theirs.txt", "seed.txt", ".bulwark/idempotency-key"} {
			s3c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(k)})
		}
		s3c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(bucket)})
		ddb.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(table)})
	})

	// Someone's bucket and table, made through the SDK directly.
	if _, err := s3c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	if _, err := s3c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("theirs.txt"), Body: strings.NewReader("someone's data")}); err != nil {
		t.Fatal(err)
	}
	if _, err := ddb.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String(table),
		AttributeDefinitions: []ddbtypes.AttributeDefinition{{AttributeName: aws.String("id"), AttributeType: ddbtypes.ScalarAttributeTypeS}},
		KeySchema:            []ddbtypes.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: ddbtypes.KeyTypeHash}},
		BillingMode:          ddbtypes.BillingModePayPerRequest,
	}); err != nil {
		t.Fatal(err)
	}
	// dynalite answers CreateTable before the table takes writes.
	w := dynamodb.NewTableExistsWaiter(ddb, func(o *dynamodb.TableExistsWaiterOptions) { o.MinDelay, o.MaxDelay = 100*time.Millisecond, time.Second })
	if err := w.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)}, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := ddb.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: map[string]ddbtypes.AttributeValue{"id": &ddbtypes.AttributeValueMemberS{Value: "theirs"}}}); err != nil {
		t.Fatal(err)
	}
	intact := func(when string) {
		t.Helper()
		out, err := s3c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
		if err != nil {
			t.Fatalf("%s: bucket %s: %v", when, bucket, err)
		}
		if len(out.Contents) != 1 || aws.ToString(out.Contents[0].Key) != "theirs.txt" {
			var ks []string
			for _, o := range out.Contents {
				ks = append(ks, aws.ToString(o.Key))
			}
			t.Fatalf("%s: bucket %s holds %v, want only theirs.txt", when, bucket, ks)
		}
		scan, err := ddb.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(table)})
		if err != nil || len(scan.Items) != 1 {
			t.Fatalf("%s: table %s: %v %+v, want only their item", when, table, err, scan)
		}
		d, err := ddb.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
		if err != nil {
			t.Fatal(err)
		}
		if tags, err := ddb.ListTagsOfResource(ctx, &dynamodb.ListTagsOfResourceInput{ResourceArn: d.Table.TableArn}); err != nil || len(tags.Tags) != 0 {
			t.Fatalf("%s: table %s was tagged: %+v %v", when, table, tags, err)
		}
	}

	spec := `version: 1
stack: aws-oob-` + run + `
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
  - name: storage
    type: s3_bucket
    protection: ephemeral
    config:
      bucket: ` + bucket + `
  - name: database
    type: dynamodb_table
    protection: ephemeral
    config:
      table: ` + table + `
      hash_key: id
`
	specPath := filepath.Join(tmp, "oob.yaml")
	if err := os.WriteFile(specPath, []byte(spec), 0o600); err != nil {
		t.Fatal(err)
	}

	// plan predicts the refusal: both are conflicts, not made by bulwark.
	out := e.run(1, "plan.jsonl", "plan", specPath)
	for _, want := range []string{"!   conflict   storage", "!   conflict   database", "(id " + bucket + ")", "(id " + table + ")", "not made by bulwark"} {
		if !strings.Contains(out, want) {
			t.Fatalf("plan does not show %q:\n%s", want, out)
		}
	}
	intact("after plan")

	// apply refuses before its first step, and says how to import them.
	e.run(1, "apply.jsonl", "apply", "--yes", specPath)
	all := strings.Join(e.outputs[len(e.outputs)-2:], "")
	for _, want := range []string{"not this stack's", "bulwark import " + specPath + " storage " + bucket, "bulwark import " + specPath + " database " + table} {
		if !strings.Contains(all, want) {
			t.Fatalf("apply's refusal does not say %q:\n%s", want, all)
		}
	}
	intact("after apply")

	// teardown has nothing of this stack's to delete.
	e.run(0, "teardown.jsonl", "teardown", specPath, "--yes")
	intact("after teardown")

	// Taken over explicitly, then let go: import records the bucket (the
	// aws provider reads it by id) and stamps the stack's claim on it (its
	// marker object), state forget stops managing it and releases the
	// claim; neither touches anything else.
	out = e.run(0, "import.jsonl", "import", specPath, "storage", bucket)
	if !strings.Contains(out, "imported "+bucket+" as storage") {
		t.Fatalf("import:\n%s", out)
	}
	e.run(0, "forget.jsonl", "state", "forget", specPath, "storage")
	if got := marker(ctx, t, s3c, bucket); !strings.HasPrefix(got, sdk.ReleasedKey("bulwark:aws-oob-"+run+":")) {
		t.Fatalf("after import and forget the bucket's claim is %q, want released", got)
	}
	if _, err := s3c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(".bulwark/idempotency-key")}); err != nil {
		t.Fatal(err)
	}
	intact("after import and forget")
}

// marker is the bucket's claim object's content ("" when it has none).
func marker(ctx context.Context, t *testing.T, s3c *s3.Client, bucket string) string {
	t.Helper()
	out, err := s3c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(".bulwark/idempotency-key")})
	if errorCode(err) == "NoSuchKey" {
		return ""
	}
	if err != nil {
		t.Fatalf("marker of %s: %v", bucket, err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// TestEndToEndWrongCredentials: against a server that answers as a real S3
// does to a wrong secret (HeadBucket: 403 with no body; every other call:
// 403 with SignatureDoesNotMatch in its XML body), `plan` and `apply` say
// the credentials were rejected and where they came from, never that the
// bucket exists or whose it is, and never echo the credentials. It needs no
// emulator, but builds bulwark and the plugin as the other end-to-end tests
// do, so it runs with them (make test-aws).
func TestEndToEndWrongCredentials(t *testing.T) {
	emulators(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodHead {
			w.WriteHeader(http.StatusForbidden)
			return
		}
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusForbidden)
		io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?>
<Error><Code>SignatureDoesNotMatch</Code><Message>The request signature we calculated does not match the signature you provided. Check your key and signing method.</Message><RequestId>4442587FB7D0A2F9</RequestId></Error>`)
	}))
	t.Cleanup(srv.Close)
	e := newE2E(t, false)
	tmp := e.dir
	keyID, secret := "AKIDWRONG"+strings.ToUpper(randomHex(t, 4)), "wrong-secret-"+randomHex(t, 8)
	e.env = testEnv(t, keyID, secret)

	spec := `version: 1
stack: aws-wrong-credentials
providers:
  cloud:
    source: aws
    config:
      region: us-east-1
      timeout_seconds: 20
      endpoint: ` + srv.URL + `
default_provider: cloud
resources:
  - name: storage
    type: s3_bucket
    config:
      bucket: bw-nobodys-bucket
`
	specPath := filepath.Join(tmp, "wrong.yaml")
	if err := os.WriteFile(specPath, []byte(spec), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"plan", specPath}, {"apply", "--yes", specPath}} {
		e.run(1, args[0]+".jsonl", args...)
		all := strings.Join(e.outputs[len(e.outputs)-2:], "")
		if !strings.Contains(all, "credentials rejected by S3 (SignatureDoesNotMatch): the credentials from the environment") {
			t.Fatalf("%s does not say the credentials were rejected:\n%s", args[0], all)
		}
		for _, bad := range []string{"exists", "conflict", "another account", secret, keyID} {
			if strings.Contains(all, bad) {
				t.Fatalf("%s says %q, though only the credentials were refused:\n%s", args[0], bad, all)
			}
		}
	}
}
