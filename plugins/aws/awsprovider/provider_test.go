package awsprovider

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/bulwark-iac/bulwark/sdk"
)

// hermetic points the SDK's credential chain at fixed test credentials and
// away from the machine's own files and instance metadata.
func hermetic(t *testing.T) {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDTEST")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test-secret")
	t.Setenv("AWS_SESSION_TOKEN", "")
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_DEFAULT_REGION", "")
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "credentials"))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	for _, k := range []string{"AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL_DYNAMODB"} {
		t.Setenv(k, "")
		os.Unsetenv(k) // set-but-empty would still count as set for the SDK
	}
}

// fakeS3 serves gofakes3 in-process for the test.
func fakeS3(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(gofakes3.New(s3mem.New(), gofakes3.WithAutoBucket(false)).Server())
	t.Cleanup(srv.Close)
	return srv.URL
}

func unique(t *testing.T, prefix string) string {
	t.Helper()
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return prefix + "-" + hex.EncodeToString(b)
}

func configured(t *testing.T, dir string, cfg sdk.Attributes) sdk.Provider {
	t.Helper()
	p := New()
	resp, err := p.Configure(context.Background(), &sdk.ConfigureRequest{Config: cfg, DataDir: dir})
	if err != nil || resp.Diagnostics.HasError() {
		t.Fatalf("Configure(%v): %v %v", cfg, err, resp)
	}
	return p
}

func configDiags(t *testing.T, cfg sdk.Attributes) sdk.Diagnostics {
	t.Helper()
	resp, err := New().Configure(context.Background(), &sdk.ConfigureRequest{Config: cfg, DataDir: t.TempDir()})
	if err != nil {
		return sdk.DiagnosticsFromError(err)
	}
	return resp.Diagnostics
}

func TestSchema(t *testing.T) {
	resp, err := New().GetSchema(context.Background(), &sdk.GetSchemaRequest{})
	if err != nil || resp.ProviderName != "aws" || resp.ProviderVersion != "0.1.0" {
		t.Fatalf("GetSchema: %+v %v", resp, err)
	}
	b, ok := resp.ResourceType("s3_bucket")
	if a, _ := b.Attribute("bucket"); !ok || !a.Required || !a.ForceNew {
		t.Fatalf("s3_bucket.bucket: %+v", a)
	}
	for _, n := range []string{"arn", "region"} {
		if a, ok := b.Attribute(n); !ok || !a.Computed {
			t.Fatalf("s3_bucket.%s should be computed: %+v", n, a)
		}
	}
	tt, ok := resp.ResourceType("dynamodb_table")
	if !ok {
		t.Fatal("no dynamodb_table")
	}
	for _, n := range []string{"table", "hash_key", "hash_key_type"} {
		if a, _ := tt.Attribute(n); !a.ForceNew {
			t.Fatalf("dynamodb_table.%s should be force_new", n)
		}
	}
	if a, _ := tt.Attribute("billing_mode"); a.ForceNew || a.Required {
		t.Fatalf("billing_mode should be optional and updatable: %+v", a)
	}
	for _, c := range []struct {
		name string
		typ  sdk.AttributeType
	}{{"arn", sdk.TypeString}, {"stream_enabled", sdk.TypeBool}, {"stream_view_type", sdk.TypeString}, {"stream_arn", sdk.TypeString}} {
		if a, ok := tt.Attribute(c.name); !ok || !a.Computed || a.Type != c.typ {
			t.Fatalf("dynamodb_table.%s should be a computed %v: %+v", c.name, c.typ, a)
		}
	}
}

// TestTableAttrsStreams pins how a table's stream settings, as
// DescribeTable reports them, become its computed attributes. (The
// emulator has no streams: this is where an enabled stream is covered.)
func TestTableAttrsStreams(t *testing.T) {
	const streamARN = "arn:aws:dynamodb:us-east-1:123456789012:table/t/stream/2026-12-01T00:00:00.000"
	cases := []struct {
		name string
		spec *ddbtypes.StreamSpecification
		arn  *string
		want sdk.Attributes
	}{
		{"never enabled", nil, nil,
			sdk.Attributes{"stream_enabled": false, "stream_view_type": "", "stream_arn": ""}},
		{"enabled", &ddbtypes.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: ddbtypes.StreamViewTypeNewAndOldImages}, aws.String(streamARN),
			sdk.Attributes{"stream_enabled": true, "stream_view_type": "NEW_AND_OLD_IMAGES", "stream_arn": streamARN}},
		{"keys only", &ddbtypes.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: ddbtypes.StreamViewTypeKeysOnly}, aws.String(streamARN),
			sdk.Attributes{"stream_enabled": true, "stream_view_type": "KEYS_ONLY", "stream_arn": streamARN}},
		// A disabled stream stays readable for a day, its ARN still in
		// LatestStreamArn: it is not the table's stream any more.
		{"disabled", &ddbtypes.StreamSpecification{StreamEnabled: aws.Bool(false)}, aws.String(streamARN),
			sdk.Attributes{"stream_enabled": false, "stream_view_type": "", "stream_arn": ""}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := tableAttrs(&ddbtypes.TableDescription{
				TableName: aws.String("t"), TableArn: aws.String("arn:aws:dynamodb:us-east-1:123456789012:table/t"),
				StreamSpecification: c.spec, LatestStreamArn: c.arn,
			}, "")
			for k, v := range c.want {
				if got[k] != v {
					t.Errorf("%s = %#v, want %#v (%v)", k, got[k], v, got)
				}
			}
		})
	}
}

func TestConfigure(t *testing.T) {
	hermetic(t)
	const secret = "wJalrXUtnFEMI-do-not-echo"
	cases := []struct {
		name string
		cfg  sdk.Attributes
		path string // the attribute path of the first diagnostic
	}{
		{"unknown key", sdk.Attributes{"secret_key": secret}, "secret_key"},
		{"region type", sdk.Attributes{"region": 5.0}, "region"},
		{"region shape", sdk.Attributes{"region": "US East"}, "region"},
		{"endpoint scheme", sdk.Attributes{"endpoint": "127.0.0.1:9000"}, "endpoint"},
		{"endpoint userinfo", sdk.Attributes{"endpoint": "http://key:" + secret + "@127.0.0.1:9000"}, "endpoint"},
		{"endpoints service", sdk.Attributes{"endpoints": map[string]any{"sqs": "http://127.0.0.1:1"}}, "endpoints.sqs"},
		{"endpoints type", sdk.Attributes{"endpoints": "http://127.0.0.1:1"}, "endpoints"},
		{"timeout zero", sdk.Attributes{"timeout_seconds": 0.0}, "timeout_seconds"},
		{"timeout fraction", sdk.Attributes{"timeout_seconds": 1.5}, "timeout_seconds"},
		{"missing profile", sdk.Attributes{"profile": "no-such-profile"}, "profile"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ds := configDiags(t, c.cfg)
			if !ds.HasError() {
				t.Fatalf("no error for %v", c.cfg)
			}
			if got := strings.Join(ds[0].AttributePath, "."); got != c.path {
				t.Fatalf("path %q, want %q: %v", got, c.path, ds)
			}
			if strings.Contains(ds.Error(), secret) {
				t.Fatalf("the diagnostic echoes a value: %v", ds)
			}
		})
	}

	t.Run("no region", func(t *testing.T) {
		t.Setenv("AWS_REGION", "")
		ds := configDiags(t, sdk.Attributes{})
		if !ds.HasError() || ds[0].AttributePath[0] != "region" {
			t.Fatalf("want a region diagnostic, got %v", ds)
		}
	})
	t.Run("valid", func(t *testing.T) {
		ds := configDiags(t, sdk.Attributes{
			"region": "eu-west-1", "endpoint": "http://127.0.0.1:1",
			"endpoints":       map[string]any{"s3": "http://127.0.0.1:2", "dynamodb": "https://localhost:3"},
			"timeout_seconds": 30.0,
		})
		if ds.HasError() {
			t.Fatal(ds)
		}
	})
	t.Run("calls before Configure", func(t *testing.T) {
		_, err := New().Read(context.Background(), &sdk.ReadRequest{Type: "s3_bucket", ID: "x"})
		if err == nil || !strings.Contains(err.Error(), "not configured") {
			t.Fatalf("Read before Configure: %v", err)
		}
	})
}

func TestValidateResource(t *testing.T) {
	p := New()
	cases := []struct {
		typ  string
		cfg  sdk.Attributes
		path string // "" when valid
	}{
		{"s3_bucket", sdk.Attributes{"bucket": "my-bucket.data"}, ""},
		{"s3_bucket", sdk.Attributes{"bucket": "My_Bucket"}, "bucket"},
		{"s3_bucket", sdk.Attributes{"bucket": "ab"}, "bucket"},
		{"s3_bucket", sdk.Attributes{"bucket": "192.168.1.1"}, "bucket"},
		{"s3_bucket", sdk.Attributes{"bucket": "a..b"}, "bucket"},
		{"dynamodb_table", sdk.Attributes{"table": "t-1", "hash_key": "id"}, ""},
		{"dynamodb_table", sdk.Attributes{"table": "t-1", "hash_key": "id", "hash_key_type": "N", "billing_mode": "PROVISIONED", "read_capacity": 2.0}, ""},
		{"dynamodb_table", sdk.Attributes{"table": "t/1", "hash_key": "id"}, "table"},
		{"dynamodb_table", sdk.Attributes{"table": "t-1", "hash_key": "id", "hash_key_type": "X"}, "hash_key_type"},
		{"dynamodb_table", sdk.Attributes{"table": "t-1", "hash_key": "id", "billing_mode": "FREE"}, "billing_mode"},
		{"dynamodb_table", sdk.Attributes{"table": "t-1", "hash_key": "id", "read_capacity": 5.0}, "read_capacity"},
		{"dynamodb_table", sdk.Attributes{"table": "t-1", "hash_key": "id", "billing_mode": "PROVISIONED", "write_capacity": 0.5}, "write_capacity"},
	}
	for _, c := range cases {
		resp, err := p.ValidateResource(context.Background(), &sdk.ValidateResourceRequest{Type: c.typ, Name: "r", Config: c.cfg})
		if err != nil {
			t.Fatalf("%s %v: %v", c.typ, c.cfg, err)
		}
		switch {
		case c.path == "" && resp.Diagnostics.HasError():
			t.Errorf("%s %v: unexpected %v", c.typ, c.cfg, resp.Diagnostics)
		case c.path != "" && (!resp.Diagnostics.HasError() || resp.Diagnostics[0].AttributePath[0] != c.path):
			t.Errorf("%s %v: want a diagnostic on %s, got %v", c.typ, c.cfg, c.path, resp.Diagnostics)
		}
	}
	if _, err := p.ValidateResource(context.Background(), &sdk.ValidateResourceRequest{Type: "compute"}); err == nil {
		t.Error("an unknown type validated")
	}
}

func TestTagValue(t *testing.T) {
	if got := tagValue("01JXYZ"); got != "01JXYZ" {
		t.Errorf("tagValue kept %q as %q", "01JXYZ", got)
	}
	if got := tagValue("a*b"); !strings.HasPrefix(got, "sha256:") || len(got) != 71 {
		t.Errorf("tagValue(a*b) = %q", got)
	}
}

// s3Client is a client of the test's own, to look behind the provider's
// back.
func s3Client(endpoint string) *s3.Client {
	return s3.New(s3.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(endpoint), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider("AKIDTEST", "test-secret", ""),
	})
}

func ddbClient(endpoint string) *dynamodb.Client {
	return dynamodb.New(dynamodb.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(endpoint),
		Credentials: credentials.NewStaticCredentialsProvider("AKIDTEST", "test-secret", ""),
	})
}

func mustCreate(t *testing.T, p sdk.Provider, req *sdk.CreateRequest) *sdk.CreateResponse {
	t.Helper()
	resp, err := p.Create(context.Background(), req)
	if err != nil || resp.Diagnostics.HasError() {
		t.Fatalf("Create %s: %v %v", req.Name, err, resp)
	}
	return resp
}

// createDiags is everything a Create reported as diagnostics.
func createDiags(resp *sdk.CreateResponse, err error) sdk.Diagnostics {
	ds := sdk.DiagnosticsFromError(err)
	if resp != nil {
		ds = append(ds, resp.Diagnostics...)
	}
	return ds
}

func mustRead(t *testing.T, p sdk.Provider, req *sdk.ReadRequest) *sdk.ReadResponse {
	t.Helper()
	resp, err := p.Read(context.Background(), req)
	if err != nil || resp.Diagnostics.HasError() {
		t.Fatalf("Read %+v: %v %v", req, err, resp)
	}
	return resp
}

func mustDelete(t *testing.T, p sdk.Provider, req *sdk.DeleteRequest) {
	t.Helper()
	resp, err := p.Delete(context.Background(), req)
	if err != nil || resp.Diagnostics.HasError() {
		t.Fatalf("Delete %s: %v %v", req.Name, err, resp)
	}
}

// TestBucket drives s3_bucket against gofakes3 served in-process: it needs
// no emulator to be started, so it runs in every `make test`.
func TestBucket(t *testing.T) {
	hermetic(t)
	endpoint := fakeS3(t)
	ctx := context.Background()
	raw := s3Client(endpoint)
	dir := t.TempDir()
	p := configured(t, dir, sdk.Attributes{"endpoint": endpoint, "timeout_seconds": 30.0})

	t.Run("lifecycle", func(t *testing.T) {
		name := unique(t, "bw-bucket")
		cfg := sdk.Attributes{"bucket": name}
		if rr := mustRead(t, p, &sdk.ReadRequest{Type: "s3_bucket", Name: "storage", Config: cfg}); rr.Exists {
			t.Fatalf("Read before Create: %+v", rr)
		}
		cr := mustCreate(t, p, &sdk.CreateRequest{Type: "s3_bucket", Name: "storage", Config: cfg, IdempotencyKey: "op_1:storage", Protection: sdk.ProtectionDurable})
		if cr.ID != name || cr.Attributes["arn"] != "arn:aws:s3:::"+name || cr.Attributes["region"] != "us-east-1" || cr.Attributes["bucket"] != name {
			t.Fatalf("Create: %+v", cr)
		}
		seed, err := raw.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(name), Key: aws.String(seedKey)})
		if err != nil {
			t.Fatalf("the bucket holds no seed: %v", err)
		}
		seed.Body.Close()

		// The same key again (the emulator answers BucketAlreadyExists):
		// what the first made.
		again := mustCreate(t, p, &sdk.CreateRequest{Type: "s3_bucket", Name: "storage", Config: cfg, IdempotencyKey: "op_1:storage"})
		if again.ID != cr.ID {
			t.Fatalf("retried Create: %+v, want id %s", again, cr.ID)
		}
		// Another key: not this create's bucket.
		other, err := p.Create(ctx, &sdk.CreateRequest{Type: "s3_bucket", Name: "storage", Config: cfg, IdempotencyKey: "op_2:storage"})
		if err == nil && !other.Diagnostics.HasError() {
			t.Fatalf("a Create under another key claimed the bucket: %+v", other)
		}

		for _, req := range []*sdk.ReadRequest{
			{Type: "s3_bucket", Name: "storage", ID: name},
			{Type: "s3_bucket", Name: "storage", IdempotencyKey: "op_1:storage", Config: cfg},
			{Type: "s3_bucket", Name: "storage", IdempotencyKey: "op_1:storage", Private: cr.Private}, // the name from the private data
			{Type: "s3_bucket", Name: "storage", Config: cfg},
		} {
			rr := mustRead(t, p, req)
			if !rr.Exists || rr.ID != name || rr.Attributes["bucket"] != name {
				t.Fatalf("Read %+v: %+v", req, rr)
			}
		}
		if rr := mustRead(t, p, &sdk.ReadRequest{Type: "s3_bucket", Name: "storage", IdempotencyKey: "op_9:storage", Config: cfg}); rr.Exists {
			t.Fatalf("Read by a key that made nothing found %+v", rr)
		}

		// Update has nothing to change; a new name is a replace, never an
		// update.
		ur, err := p.Update(ctx, &sdk.UpdateRequest{Type: "s3_bucket", Name: "storage", ID: name, PriorAttributes: cr.Attributes, Config: cfg})
		if err != nil || ur.Diagnostics.HasError() || ur.Attributes["bucket"] != name {
			t.Fatalf("Update: %+v %v", ur, err)
		}
		ur, err = p.Update(ctx, &sdk.UpdateRequest{Type: "s3_bucket", Name: "storage", ID: name, PriorAttributes: cr.Attributes, Config: sdk.Attributes{"bucket": name + "-2"}})
		if err != nil || !ur.Diagnostics.HasError() || ur.Diagnostics[0].AttributePath[0] != "bucket" {
			t.Fatalf("Update of a force_new attribute: %+v %v", ur, err)
		}

		// More objects than one listing page holds are emptied too.
		for i := range 1005 {
			if _, err := raw.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(name), Key: aws.String("data/" + strings.Repeat("x", i%7) + hex.EncodeToString([]byte{byte(i >> 8), byte(i)})), Body: strings.NewReader("x")}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := p.Delete(ctx, &sdk.DeleteRequest{Type: "s3_bucket", Name: "storage", ID: name, Protection: sdk.ProtectionProtected}); err == nil {
			t.Fatal("an in-process protected Delete went through")
		}
		mustDelete(t, p, &sdk.DeleteRequest{Type: "s3_bucket", Name: "storage", ID: name, Attributes: cr.Attributes, Protection: sdk.ProtectionDurable})
		if rr := mustRead(t, p, &sdk.ReadRequest{Type: "s3_bucket", Name: "storage", ID: name}); rr.Exists {
			t.Fatalf("Read after Delete: %+v", rr)
		}
		mustDelete(t, p, &sdk.DeleteRequest{Type: "s3_bucket", Name: "storage", ID: name})
		if ents, err := os.ReadDir(dir); err != nil || len(ents) != 0 {
			t.Fatalf("the data folder holds %v (%v): the provider keeps nothing there", ents, err)
		}
	})

	t.Run("versioned", func(t *testing.T) {
		name := unique(t, "bw-versioned")
		mustCreate(t, p, &sdk.CreateRequest{Type: "s3_bucket", Name: "v", Config: sdk.Attributes{"bucket": name}, IdempotencyKey: "op_3:v"})
		if _, err := raw.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: aws.String(name), VersioningConfiguration: &s3types.VersioningConfiguration{Status: s3types.BucketVersioningStatusEnabled}}); err != nil {
			t.Fatal(err)
		}
		for _, body := range []string{"one", "two"} {
			if _, err := raw.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(name), Key: aws.String("doc"), Body: strings.NewReader(body)}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := raw.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(name), Key: aws.String("doc")}); err != nil {
			t.Fatal(err)
		}
		mustDelete(t, p, &sdk.DeleteRequest{Type: "s3_bucket", Name: "v", ID: name})
		if _, err := raw.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(name)}); apiCode(err) != "NotFound" {
			t.Fatalf("HeadBucket after Delete: %v", err)
		}
	})

	t.Run("died before marking, tags dropped", func(t *testing.T) {
		// A Create that made the bucket and was killed before writing its
		// key, on an endpoint that keeps no tags given at creation (the
		// emulator): nothing on the bucket says whose it is, so no retry, on
		// this machine or another, claims it.
		name := unique(t, "bw-crashed")
		if _, err := raw.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
			t.Fatal(err)
		}
		cfg := sdk.Attributes{"bucket": name}
		if rr := mustRead(t, p, &sdk.ReadRequest{Type: "s3_bucket", Name: "s", IdempotencyKey: "op_4:s", Config: cfg}); rr.Exists {
			t.Fatalf("Read by key found an unmarked bucket: %+v", rr)
		}
		resp, err := p.Create(ctx, &sdk.CreateRequest{Type: "s3_bucket", Name: "s", Config: cfg, IdempotencyKey: "op_4:s"})
		ds := createDiags(resp, err)
		if !sdk.IsConflict(ds.Err()) || !strings.Contains(ds.Error(), "bulwark import") {
			t.Fatalf("retried Create of an unmarked bucket: %v, want a conflict pointing at import", ds)
		}
		if _, err := raw.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(name), Key: aws.String(markerKey)}); err == nil {
			t.Fatal("the provider marked a bucket nothing says it made")
		}
		if _, err := raw.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(name)}); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("existing bucket is not claimed", func(t *testing.T) {
		name := unique(t, "bw-theirs")
		if _, err := raw.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
			t.Fatal(err)
		}
		resp, err := p.Create(ctx, &sdk.CreateRequest{Type: "s3_bucket", Name: "s", Config: sdk.Attributes{"bucket": name}, IdempotencyKey: "op_5:s"})
		ds := createDiags(resp, err)
		if !ds.HasError() || !sdk.IsConflict(ds.Err()) || !strings.Contains(ds.Error(), "did not create it") {
			t.Fatalf("Create of a bucket made by someone else: %v", ds)
		}
		if _, err := raw.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(name), Key: aws.String(markerKey)}); err == nil {
			t.Fatal("the provider marked a bucket it did not make")
		}
	})

	t.Run("AWS_ENDPOINT_URL_S3", func(t *testing.T) {
		t.Setenv("AWS_ENDPOINT_URL_S3", endpoint)
		p := configured(t, t.TempDir(), sdk.Attributes{"region": "us-east-1"})
		name := unique(t, "bw-env")
		mustCreate(t, p, &sdk.CreateRequest{Type: "s3_bucket", Name: "e", Config: sdk.Attributes{"bucket": name}, IdempotencyKey: "op_6:e"})
		if _, err := raw.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(name)}); err != nil {
			t.Fatalf("the bucket is not on the endpoint the environment names: %v", err)
		}
		mustDelete(t, p, &sdk.DeleteRequest{Type: "s3_bucket", Name: "e", ID: name})
	})

	t.Run("timeout", func(t *testing.T) {
		// An endpoint that accepts connections and never answers: the call
		// ends at the deadline, and says so.
		block := make(chan struct{})
		hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-block:
			case <-r.Context().Done():
			}
		}))
		t.Cleanup(func() { close(block); hang.Close() })
		p := configured(t, t.TempDir(), sdk.Attributes{"endpoint": hang.URL, "timeout_seconds": 1.0})
		start := time.Now()
		_, err := p.Read(ctx, &sdk.ReadRequest{Type: "s3_bucket", Name: "t", ID: "some-bucket"})
		if err == nil || !strings.Contains(err.Error(), "timed out after 1s") {
			t.Fatalf("Read against a hung endpoint: %v", err)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Fatalf("the deadline did not hold: %s", d)
		}
	})
}

// TestTable drives dynamodb_table against dynalite, which .ci/emulators.sh
// starts; it skips without it.
func TestTable(t *testing.T) {
	endpoint := os.Getenv("BULWARK_TEST_DYNAMODB_ENDPOINT")
	if endpoint == "" {
		t.Skip("BULWARK_TEST_DYNAMODB_ENDPOINT is unset: start the emulators with `.ci/emulators.sh start` and `eval \"$(.ci/emulators.sh env)\"`, or run `make test-aws`")
	}
	hermetic(t)
	ctx := context.Background()
	raw := ddbClient(endpoint)
	dir := t.TempDir()
	p := configured(t, dir, sdk.Attributes{"endpoints": map[string]any{"dynamodb": endpoint}, "timeout_seconds": 30.0})

	t.Run("lifecycle", func(t *testing.T) {
		name := unique(t, "bw-table")
		cfg := sdk.Attributes{"table": name, "hash_key": "id"}
		if rr := mustRead(t, p, &sdk.ReadRequest{Type: "dynamodb_table", Name: "database", Config: cfg}); rr.Exists {
			t.Fatalf("Read before Create: %+v", rr)
		}
		cr := mustCreate(t, p, &sdk.CreateRequest{Type: "dynamodb_table", Name: "database", Config: cfg, IdempotencyKey: "op_1:database"})
		want := sdk.Attributes{"table": name, "hash_key": "id", "hash_key_type": "S", "billing_mode": "PAY_PER_REQUEST"}
		for k, v := range want {
			if cr.Attributes[k] != v {
				t.Fatalf("Create: %s = %v, want %v (%+v)", k, cr.Attributes[k], v, cr)
			}
		}
		if cr.ID != name || !strings.HasSuffix(cr.Attributes["arn"].(string), ":table/"+name) {
			t.Fatalf("Create: %+v", cr)
		}
		// The stream settings are returned, off (the emulator has none),
		// so they can be referenced.
		noStream := sdk.Attributes{"stream_enabled": false, "stream_view_type": "", "stream_arn": ""}
		for k, v := range noStream {
			if got, ok := cr.Attributes[k]; !ok || got != v {
				t.Fatalf("Create: %s = %#v, want %#v (%+v)", k, got, v, cr.Attributes)
			}
		}
		item, err := raw.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(name), Key: map[string]ddbtypes.AttributeValue{"id": &ddbtypes.AttributeValueMemberS{Value: "seed"}}})
		if err != nil || len(item.Item) == 0 {
			t.Fatalf("the table holds no seed row: %v %+v", err, item)
		}
		again := mustCreate(t, p, &sdk.CreateRequest{Type: "dynamodb_table", Name: "database", Config: cfg, IdempotencyKey: "op_1:database"})
		if again.ID != cr.ID {
			t.Fatalf("retried Create: %+v", again)
		}
		other, err := p.Create(ctx, &sdk.CreateRequest{Type: "dynamodb_table", Name: "database", Config: cfg, IdempotencyKey: "op_2:database"})
		if err == nil && !other.Diagnostics.HasError() {
			t.Fatalf("a Create under another key claimed the table: %+v", other)
		}
		for _, req := range []*sdk.ReadRequest{
			{Type: "dynamodb_table", Name: "database", ID: name},
			{Type: "dynamodb_table", Name: "database", IdempotencyKey: "op_1:database", Config: cfg},
			{Type: "dynamodb_table", Name: "database", IdempotencyKey: "op_1:database", Private: cr.Private}, // the name from the private data
			{Type: "dynamodb_table", Name: "database", Config: cfg},
		} {
			rr := mustRead(t, p, req)
			if !rr.Exists || rr.ID != name || rr.Attributes["hash_key"] != "id" {
				t.Fatalf("Read %+v: %+v", req, rr)
			}
			for _, k := range []string{"arn", "stream_enabled", "stream_view_type", "stream_arn"} {
				if got, ok := rr.Attributes[k]; !ok || got != cr.Attributes[k] {
					t.Fatalf("Read %+v: %s = %#v, Create returned %#v", req, k, got, cr.Attributes[k])
				}
			}
		}
		if rr := mustRead(t, p, &sdk.ReadRequest{Type: "dynamodb_table", Name: "database", IdempotencyKey: "op_9:database", Config: cfg}); rr.Exists {
			t.Fatalf("Read by a key that made nothing found %+v", rr)
		}

		// billing_mode is updated in place, capacity with it.
		prov := sdk.Attributes{"table": name, "hash_key": "id", "billing_mode": "PROVISIONED", "read_capacity": 3.0}
		ur, err := p.Update(ctx, &sdk.UpdateRequest{Type: "dynamodb_table", Name: "database", ID: name, PriorAttributes: cr.Attributes, Config: prov})
		if err != nil || ur.Diagnostics.HasError() || ur.Attributes["billing_mode"] != "PROVISIONED" || ur.Attributes["read_capacity"] != 3.0 || ur.Attributes["write_capacity"] != 5.0 {
			t.Fatalf("Update to PROVISIONED: %+v %v", ur, err)
		}
		if ur.Attributes["stream_enabled"] != false || ur.Attributes["stream_arn"] != "" || ur.Attributes["arn"] != cr.Attributes["arn"] {
			t.Fatalf("Update to PROVISIONED: computed attributes %+v", ur.Attributes)
		}
		ur, err = p.Update(ctx, &sdk.UpdateRequest{Type: "dynamodb_table", Name: "database", ID: name, PriorAttributes: ur.Attributes, Config: cfg})
		if err != nil || ur.Diagnostics.HasError() || ur.Attributes["billing_mode"] != "PAY_PER_REQUEST" {
			t.Fatalf("Update back to PAY_PER_REQUEST: %+v %v", ur, err)
		}
		ur, err = p.Update(ctx, &sdk.UpdateRequest{Type: "dynamodb_table", Name: "database", ID: name, PriorAttributes: ur.Attributes, Config: sdk.Attributes{"table": name, "hash_key": "pk"}})
		if err != nil || !ur.Diagnostics.HasError() || ur.Diagnostics[0].AttributePath[0] != "hash_key" {
			t.Fatalf("Update of a force_new attribute: %+v %v", ur, err)
		}

		mustDelete(t, p, &sdk.DeleteRequest{Type: "dynamodb_table", Name: "database", ID: name, Protection: sdk.ProtectionEphemeral})
		if rr := mustRead(t, p, &sdk.ReadRequest{Type: "dynamodb_table", Name: "database", ID: name}); rr.Exists {
			t.Fatalf("Read after Delete: %+v", rr)
		}
		mustDelete(t, p, &sdk.DeleteRequest{Type: "dynamodb_table", Name: "database", ID: name})
	})

	t.Run("number key", func(t *testing.T) {
		name := unique(t, "bw-numbers")
		cfg := sdk.Attributes{"table": name, "hash_key": "n", "hash_key_type": "N", "billing_mode": "PROVISIONED"}
		cr := mustCreate(t, p, &sdk.CreateRequest{Type: "dynamodb_table", Name: "numbers", Config: cfg, IdempotencyKey: "op_3:numbers"})
		if cr.Attributes["hash_key_type"] != "N" || cr.Attributes["read_capacity"] != 5.0 {
			t.Fatalf("Create: %+v", cr)
		}
		item, err := raw.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(name), Key: map[string]ddbtypes.AttributeValue{"n": &ddbtypes.AttributeValueMemberN{Value: "0"}}})
		if err != nil || len(item.Item) == 0 {
			t.Fatalf("no seed row: %v", err)
		}
		mustDelete(t, p, &sdk.DeleteRequest{Type: "dynamodb_table", Name: "numbers", ID: name})
	})

	t.Run("died before seeding", func(t *testing.T) {
		// A Create killed after CreateTable, on another machine: on AWS the
		// table carries the key from its CreateTable (here the tag is put
		// the way dynalite keeps it, by TagResource). This provider, with
		// its own empty data folder and no private data, finds it by key and
		// a retried Create claims and seeds it.
		name := unique(t, "bw-crashed")
		made, err := raw.CreateTable(ctx, &dynamodb.CreateTableInput{
			TableName:            aws.String(name),
			AttributeDefinitions: []ddbtypes.AttributeDefinition{{AttributeName: aws.String("id"), AttributeType: ddbtypes.ScalarAttributeTypeS}},
			KeySchema:            []ddbtypes.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: ddbtypes.KeyTypeHash}},
			BillingMode:          ddbtypes.BillingModePayPerRequest,
		})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := raw.TagResource(ctx, &dynamodb.TagResourceInput{ResourceArn: made.TableDescription.TableArn,
			Tags: []ddbtypes.Tag{{Key: aws.String(tagKey), Value: aws.String("op_4:t")}}}); err != nil {
			t.Fatal(err)
		}
		elsewhere := configured(t, t.TempDir(), sdk.Attributes{"endpoints": map[string]any{"dynamodb": endpoint}, "timeout_seconds": 30.0})
		cfg := sdk.Attributes{"table": name, "hash_key": "id"}
		if rr := mustRead(t, elsewhere, &sdk.ReadRequest{Type: "dynamodb_table", Name: "t", IdempotencyKey: "op_4:t", Config: cfg}); !rr.Exists || len(rr.Private) == 0 {
			t.Fatalf("Read by key from another machine: %+v", rr)
		}
		cr := mustCreate(t, elsewhere, &sdk.CreateRequest{Type: "dynamodb_table", Name: "t", Config: cfg, IdempotencyKey: "op_4:t"})
		if cr.ID != name || len(cr.Private) == 0 {
			t.Fatalf("retried Create: %+v", cr)
		}
		if rr := mustRead(t, p, &sdk.ReadRequest{Type: "dynamodb_table", Name: "t", IdempotencyKey: "op_4:t", Private: cr.Private}); !rr.Exists {
			t.Fatal("Read by key does not find the claimed table")
		}
		// A table someone else made is not claimed.
		other := unique(t, "bw-theirs")
		if _, err := raw.CreateTable(ctx, &dynamodb.CreateTableInput{
			TableName:            aws.String(other),
			AttributeDefinitions: []ddbtypes.AttributeDefinition{{AttributeName: aws.String("id"), AttributeType: ddbtypes.ScalarAttributeTypeS}},
			KeySchema:            []ddbtypes.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: ddbtypes.KeyTypeHash}},
			BillingMode:          ddbtypes.BillingModePayPerRequest,
		}); err != nil {
			t.Fatal(err)
		}
		resp, err := p.Create(ctx, &sdk.CreateRequest{Type: "dynamodb_table", Name: "t2", Config: sdk.Attributes{"table": other, "hash_key": "id"}, IdempotencyKey: "op_5:t2"})
		ds := createDiags(resp, err)
		if !ds.HasError() || !sdk.IsConflict(ds.Err()) || !strings.Contains(ds.Error(), "did not create it") {
			t.Fatalf("Create of a table made by someone else: %v", ds)
		}
		mustDelete(t, p, &sdk.DeleteRequest{Type: "dynamodb_table", Name: "t", ID: name})
		mustDelete(t, p, &sdk.DeleteRequest{Type: "dynamodb_table", Name: "t2", ID: other})
	})
}
