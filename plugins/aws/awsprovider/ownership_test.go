package awsprovider

import (
	"bytes"
	"context"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/bulwark-iac/bulwark/sdk"
)

// quirkyS3 serves gofakes3 with two behaviours of real S3 that gofakes3
// lacks, each switched on by a test:
//   - usEast1: a CreateBucket of a bucket that exists answers 200, as AWS
//     does in us-east-1 for a bucket the account already owns;
//   - hide: the next HeadBucket of that bucket answers 404, as if the bucket
//     were made by someone else between the provider's look and its
//     CreateBucket;
//   - keepTags: a CreateBucket keeps the tags its configuration gives, and
//     GetBucketTagging returns them (NoSuchTagSet without), as AWS does.
type quirkyS3 struct {
	next http.Handler

	mu       sync.Mutex
	usEast1  bool
	hide     string
	keepTags bool
	tags     map[string][]s3types.Tag
}

// createBucketTags is the part of a CreateBucketConfiguration that holds
// tags.
type createBucketTags struct {
	Tags []struct {
		Key   string `xml:"Key"`
		Value string `xml:"Value"`
	} `xml:"Tags>Tag"`
}

// serveTags is keepTags: it answers a bucket's GetBucketTagging, and keeps
// the tags of its CreateBucket before gofakes3 makes it. It reports whether
// it answered.
func (q *quirkyS3) serveTags(w http.ResponseWriter, r *http.Request, bucket string) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.keepTags {
		return false
	}
	_, tagging := r.URL.Query()["tagging"]
	switch {
	case r.Method == http.MethodGet && tagging:
		ts := q.tags[bucket]
		if len(ts) == 0 {
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>NoSuchTagSet</Code><Message>The TagSet does not exist</Message></Error>`)
			return true
		}
		var b strings.Builder
		b.WriteString(`<?xml version="1.0" encoding="UTF-8"?><Tagging><TagSet>`)
		for _, t := range ts {
			fmt.Fprintf(&b, "<Tag><Key>%s</Key><Value>%s</Value></Tag>", aws.ToString(t.Key), aws.ToString(t.Value))
		}
		b.WriteString(`</TagSet></Tagging>`)
		io.WriteString(w, b.String())
		return true
	case r.Method == http.MethodPut && len(r.URL.Query()) == 0:
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var conf createBucketTags
		if xml.Unmarshal(body, &conf) == nil && len(conf.Tags) > 0 {
			if q.tags == nil {
				q.tags = map[string][]s3types.Tag{}
			}
			q.tags[bucket] = nil
			for _, t := range conf.Tags {
				q.tags[bucket] = append(q.tags[bucket], s3types.Tag{Key: aws.String(t.Key), Value: aws.String(t.Value)})
			}
		}
	}
	return false
}

func newQuirkyS3(t *testing.T) (*quirkyS3, string) {
	t.Helper()
	q := &quirkyS3{next: gofakes3.New(s3mem.New(), gofakes3.WithAutoBucket(false)).Server()}
	srv := httptest.NewServer(q)
	t.Cleanup(srv.Close)
	return q, srv.URL
}

func (q *quirkyS3) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	bucket := strings.Trim(r.URL.Path, "/")
	q.mu.Lock()
	usEast1, hide := q.usEast1, q.hide
	if r.Method == http.MethodHead && bucket == hide && hide != "" {
		q.hide = ""
	}
	q.mu.Unlock()
	isBucket := bucket != "" && !strings.Contains(bucket, "/")
	if isBucket && q.serveTags(w, r, bucket) {
		return
	}
	switch {
	case r.Method == http.MethodHead && isBucket && bucket == hide:
		w.WriteHeader(http.StatusNotFound)
		return
	case r.Method == http.MethodPut && isBucket && usEast1 && len(r.URL.Query()) == 0:
		probe := httptest.NewRecorder()
		q.next.ServeHTTP(probe, httptest.NewRequest(http.MethodHead, r.URL.String(), nil))
		if probe.Code == http.StatusOK {
			io.Copy(io.Discard, r.Body)
			w.WriteHeader(http.StatusOK)
			return
		}
	}
	q.next.ServeHTTP(w, r)
}

func (q *quirkyS3) set(f func(q *quirkyS3)) {
	q.mu.Lock()
	defer q.mu.Unlock()
	f(q)
}

// theirs makes a bucket out of band, holding someone's object.
func theirs(t *testing.T, raw *s3.Client, name string) {
	t.Helper()
	ctx := context.Background()
	if _, err := raw.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
		t.Fatal(err)
	}
	if _, err := raw.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(name), Key: aws.String("theirs.txt"), Body: strings.NewReader("someone's data")}); err != nil {
		t.Fatal(err)
	}
}

// keys lists the objects in a bucket.
func keys(t *testing.T, raw *s3.Client, name string) []string {
	t.Helper()
	out, err := raw.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String(name)})
	if err != nil {
		t.Fatalf("list %s: %v", name, err)
	}
	var ks []string
	for _, o := range out.Contents {
		ks = append(ks, aws.ToString(o.Key))
	}
	return ks
}

// untouched fails unless the bucket holds exactly someone's object.
func untouched(t *testing.T, raw *s3.Client, name string) {
	t.Helper()
	if ks := keys(t, raw, name); len(ks) != 1 || ks[0] != "theirs.txt" {
		t.Fatalf("bucket %s holds %v, want only theirs.txt: the provider touched a bucket it did not create", name, ks)
	}
}

// wantConflict fails unless a Create answered a conflict naming owner.
func wantConflict(t *testing.T, resp *sdk.CreateResponse, err error, owner string) {
	t.Helper()
	ds := createDiags(resp, err)
	if !ds.HasError() || !sdk.IsConflict(ds.Err()) {
		t.Fatalf("Create: %v, want a conflict", ds)
	}
	if owner != "" && !strings.Contains(ds.Error(), owner) {
		t.Fatalf("the conflict does not name the owner key %s: %v", owner, ds)
	}
	if resp != nil && resp.ID != "" {
		t.Fatalf("a conflicting Create returned an id: %+v", resp)
	}
}

// TestBucketOwnership: a bucket is this stack's only when it carries the
// key it was created under. One made out of band, or under another key, is
// never claimed, marked, seeded, emptied or deleted.
func TestBucketOwnership(t *testing.T) {
	hermetic(t)
	ctx := context.Background()

	t.Run("schema", func(t *testing.T) {
		resp, err := New().GetSchema(ctx, &sdk.GetSchemaRequest{})
		if err != nil || !resp.Capabilities.IdempotencyKeys {
			t.Fatalf("GetSchema: %+v %v, want the idempotency_keys capability", resp, err)
		}
		got := map[string]sdk.Attribute{}
		for _, a := range resp.ProviderConfig {
			got[a.Name] = a
		}
		want := map[string]sdk.AttributeType{"region": sdk.TypeString, "profile": sdk.TypeString, "endpoint": sdk.TypeString, "endpoints": sdk.TypeMap, "timeout_seconds": sdk.TypeNumber}
		if len(got) != len(want) {
			t.Fatalf("ProviderConfig: %+v, want %v", resp.ProviderConfig, want)
		}
		for k, typ := range want {
			if a, ok := got[k]; !ok || a.Type != typ || a.Required {
				t.Errorf("ProviderConfig %s: %+v, want an optional %s", k, a, typ)
			}
		}
		// Every key the schema names is one Configure accepts.
		samples := map[string]any{"region": "eu-west-1", "profile": "p", "endpoint": "http://127.0.0.1:1",
			"endpoints": map[string]any{"s3": "http://127.0.0.1:2"}, "timeout_seconds": 30.0}
		for _, a := range resp.ProviderConfig {
			if _, ds := parseSettings(sdk.Attributes{a.Name: samples[a.Name]}); ds.HasError() || samples[a.Name] == nil {
				t.Errorf("Configure rejects %s, which the schema names: %v", a.Name, ds)
			}
		}
	})

	for _, usEast1 := range []bool{false, true} {
		name := "gofakes3"
		if usEast1 {
			name = "us-east-1 answers 200"
		}
		t.Run(name, func(t *testing.T) {
			q, endpoint := newQuirkyS3(t)
			q.set(func(q *quirkyS3) { q.usEast1 = usEast1 })
			raw := s3Client(endpoint)
			p := configured(t, t.TempDir(), sdk.Attributes{"endpoint": endpoint, "timeout_seconds": 30.0})

			t.Run("out of band", func(t *testing.T) {
				name := unique(t, "bw-oob")
				theirs(t, raw, name)
				cfg := sdk.Attributes{"bucket": name}
				rr := mustRead(t, p, &sdk.ReadRequest{Type: typeBucket, Name: "storage", Config: cfg})
				if !rr.Exists || rr.IdempotencyKey != "" || rr.Attributes[attrKey] != nil {
					t.Fatalf("Read of a bucket bulwark did not create: %+v", rr)
				}
				resp, err := p.Create(ctx, &sdk.CreateRequest{Type: typeBucket, Name: "storage", Config: cfg, IdempotencyKey: "bulwark:beta:L1:K1"})
				wantConflict(t, resp, err, "")
				untouched(t, raw, name)
				// Nor does a retry under the same key claim it.
				resp, err = p.Create(ctx, &sdk.CreateRequest{Type: typeBucket, Name: "storage", Config: cfg, IdempotencyKey: "bulwark:beta:L1:K1"})
				wantConflict(t, resp, err, "")
				untouched(t, raw, name)
				// A Delete of a resource that carries a key (a core that
				// blundered) leaves it alone.
				_, err = p.Delete(ctx, &sdk.DeleteRequest{Type: typeBucket, Name: "storage", ID: name,
					Attributes: sdk.Attributes{"bucket": name, attrKey: "bulwark:beta:L1:K1"}, Protection: sdk.ProtectionEphemeral})
				if err == nil || !sdk.IsConflict(err) {
					t.Fatalf("Delete of a bucket made out of band: %v, want a refusal", err)
				}
				untouched(t, raw, name)
			})

			t.Run("another key", func(t *testing.T) {
				name := unique(t, "bw-keyed")
				cfg := sdk.Attributes{"bucket": name}
				const alpha, beta = "bulwark:alpha:L1:K1", "bulwark:beta:L2:K2"
				cr := mustCreate(t, p, &sdk.CreateRequest{Type: typeBucket, Name: "storage", Config: cfg, IdempotencyKey: alpha})
				if cr.Attributes[attrKey] != alpha {
					t.Fatalf("Create: %+v, want %s = %s", cr, attrKey, alpha)
				}
				for _, req := range []*sdk.ReadRequest{
					{Type: typeBucket, Name: "storage", ID: name},
					{Type: typeBucket, Name: "storage", Config: cfg},
					{Type: typeBucket, Name: "storage", IdempotencyKey: alpha, Config: cfg},
				} {
					if rr := mustRead(t, p, req); !rr.Exists || rr.IdempotencyKey != alpha || rr.Attributes[attrKey] != alpha {
						t.Fatalf("Read %+v: %+v, want the key %s", req, rr, alpha)
					}
				}
				resp, err := p.Create(ctx, &sdk.CreateRequest{Type: typeBucket, Name: "storage", Config: cfg, IdempotencyKey: beta})
				wantConflict(t, resp, err, alpha)
				// The retried Create under alpha still finds what alpha made.
				if again := mustCreate(t, p, &sdk.CreateRequest{Type: typeBucket, Name: "storage", Config: cfg, IdempotencyKey: alpha}); again.ID != name {
					t.Fatalf("retried Create: %+v", again)
				}
				// A Delete carrying beta (not what the bucket was created
				// under) leaves it; one carrying alpha deletes it.
				_, err = p.Delete(ctx, &sdk.DeleteRequest{Type: typeBucket, Name: "storage", ID: name, Attributes: sdk.Attributes{"bucket": name, attrKey: beta}})
				if err == nil || !sdk.IsConflict(err) || !strings.Contains(err.Error(), alpha) {
					t.Fatalf("Delete under another key: %v", err)
				}
				if ks := keys(t, raw, name); len(ks) != 2 {
					t.Fatalf("the refused Delete emptied the bucket: %v", ks)
				}
				mustDelete(t, p, &sdk.DeleteRequest{Type: typeBucket, Name: "storage", ID: name, Attributes: cr.Attributes})
				if _, err := raw.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(name)}); apiCode(err) != "NotFound" {
					t.Fatalf("HeadBucket after Delete: %v", err)
				}
			})

			t.Run("made again by someone else", func(t *testing.T) {
				name := unique(t, "bw-remade")
				cfg := sdk.Attributes{"bucket": name}
				cr := mustCreate(t, p, &sdk.CreateRequest{Type: typeBucket, Name: "storage", Config: cfg, IdempotencyKey: "bulwark:alpha:L1:K3"})
				// Ours goes out of band; someone makes a bucket of that name.
				for _, k := range keys(t, raw, name) {
					if _, err := raw.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(name), Key: aws.String(k)}); err != nil {
						t.Fatal(err)
					}
				}
				if _, err := raw.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(name)}); err != nil {
					t.Fatal(err)
				}
				theirs(t, raw, name)
				_, err := p.Delete(ctx, &sdk.DeleteRequest{Type: typeBucket, Name: "storage", ID: name, Attributes: cr.Attributes, Protection: sdk.ProtectionDurable})
				if err == nil || !sdk.IsConflict(err) {
					t.Fatalf("Delete of a bucket someone made again: %v", err)
				}
				untouched(t, raw, name)
			})
		})
	}

	t.Run("made between the look and the create", func(t *testing.T) {
		// Someone makes the bucket after the provider's HeadBucket: the
		// CreateBucket that meets it is not this Create's, so not even a
		// retry under the same key claims it.
		q, endpoint := newQuirkyS3(t)
		raw := s3Client(endpoint)
		dir := t.TempDir()
		p := configured(t, dir, sdk.Attributes{"endpoint": endpoint, "timeout_seconds": 30.0})
		name := unique(t, "bw-raced")
		theirs(t, raw, name)
		q.set(func(q *quirkyS3) { q.hide = name })
		req := &sdk.CreateRequest{Type: typeBucket, Name: "storage", Config: sdk.Attributes{"bucket": name}, IdempotencyKey: "bulwark:beta:L1:K4"}
		resp, err := p.Create(ctx, req)
		wantConflict(t, resp, err, "")
		resp, err = p.Create(ctx, req)
		wantConflict(t, resp, err, "")
		untouched(t, raw, name)
	})

	t.Run("killed before marking, on an endpoint that keeps tags", func(t *testing.T) {
		// A Create killed between its CreateBucket and its marker, on an
		// endpoint that keeps the tags given at creation (AWS): another
		// machine, with its own empty data folder and no private data (the
		// Create never answered), finds the bucket by the key the host
		// journaled, and a retried Create claims, marks and seeds it. What
		// carries the key is the bucket, not the machine that made it.
		q, endpoint := newQuirkyS3(t)
		q.set(func(q *quirkyS3) { q.keepTags = true })
		raw := s3Client(endpoint)
		name := unique(t, "bw-killed")
		key := "bulwark:beta:L1:K9"
		if _, err := raw.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name), CreateBucketConfiguration: &s3types.CreateBucketConfiguration{
			Tags: []s3types.Tag{{Key: aws.String(tagKey), Value: aws.String(tagValue(key))}},
		}}); err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		p := configured(t, dir, sdk.Attributes{"endpoint": endpoint, "timeout_seconds": 30.0})
		cfg := sdk.Attributes{"bucket": name}
		rr := mustRead(t, p, &sdk.ReadRequest{Type: typeBucket, Name: "storage", IdempotencyKey: key, Config: cfg})
		if !rr.Exists || rr.ID != name || rr.IdempotencyKey != key || len(rr.Private) == 0 {
			t.Fatalf("Read by key of a bucket killed before its marker: %+v", rr)
		}
		// Under another key it is not found, nor claimed.
		if rr := mustRead(t, p, &sdk.ReadRequest{Type: typeBucket, Name: "storage", IdempotencyKey: "bulwark:beta:L1:K8", Config: cfg}); rr.Exists {
			t.Fatalf("Read by another key found it: %+v", rr)
		}
		resp, err := p.Create(ctx, &sdk.CreateRequest{Type: typeBucket, Name: "storage", Config: cfg, IdempotencyKey: "bulwark:beta:L1:K8"})
		wantConflict(t, resp, err, tagValue(key))
		cr := mustCreate(t, p, &sdk.CreateRequest{Type: typeBucket, Name: "storage", Config: cfg, IdempotencyKey: key})
		if cr.ID != name || len(cr.Private) == 0 {
			t.Fatalf("retried Create: %+v", cr)
		}
		if ks := keys(t, raw, name); !slices.Contains(ks, markerKey) || !slices.Contains(ks, seedKey) {
			t.Fatalf("the claimed bucket holds %v: want its marker and seed", ks)
		}
		// A provider's own Create tags the bucket at its CreateBucket.
		own := unique(t, "bw-tagged")
		mustCreate(t, p, &sdk.CreateRequest{Type: typeBucket, Name: "own", Config: sdk.Attributes{"bucket": own}, IdempotencyKey: "bulwark:beta:L1:K7"})
		tags, err := raw.GetBucketTagging(ctx, &s3.GetBucketTaggingInput{Bucket: aws.String(own)})
		if err != nil || len(tags.TagSet) != 1 || aws.ToString(tags.TagSet[0].Value) != "bulwark:beta:L1:K7" {
			t.Fatalf("tags of a bucket the provider made: %+v %v", tags, err)
		}
		if ents, err := os.ReadDir(dir); err != nil || len(ents) != 0 {
			t.Fatalf("the data folder holds %v (%v): the provider keeps nothing there", ents, err)
		}
	})

	t.Run("private data carries the key to another machine's Delete", func(t *testing.T) {
		// The record a Create returns as private data is what the host hands
		// back, from the state, on any machine: a Delete whose attributes
		// say nothing of a key still refuses a bucket made again by someone
		// else, and deletes its own.
		_, endpoint := newQuirkyS3(t)
		raw := s3Client(endpoint)
		a := configured(t, t.TempDir(), sdk.Attributes{"endpoint": endpoint, "timeout_seconds": 30.0})
		b := configured(t, t.TempDir(), sdk.Attributes{"endpoint": endpoint, "timeout_seconds": 30.0})
		name := unique(t, "bw-private")
		cfg := sdk.Attributes{"bucket": name}
		cr := mustCreate(t, a, &sdk.CreateRequest{Type: typeBucket, Name: "storage", Config: cfg, IdempotencyKey: "bulwark:beta:L1:K6"})
		if r, ok := parseRecord(cr.Private, typeBucket); !ok || r.Name != name || r.Key != "bulwark:beta:L1:K6" {
			t.Fatalf("Create's private data %q: want its record", cr.Private)
		}
		for _, k := range keys(t, raw, name) {
			if _, err := raw.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(name), Key: aws.String(k)}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := raw.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(name)}); err != nil {
			t.Fatal(err)
		}
		theirs(t, raw, name)
		_, err := b.Delete(ctx, &sdk.DeleteRequest{Type: typeBucket, Name: "storage", ID: name, Attributes: cfg, Private: cr.Private, Protection: sdk.ProtectionEphemeral})
		if !sdk.IsConflict(err) {
			t.Fatalf("Delete of a bucket made again by someone else: %v, want a refusal", err)
		}
		untouched(t, raw, name)

		mine := unique(t, "bw-private")
		cr = mustCreate(t, a, &sdk.CreateRequest{Type: typeBucket, Name: "mine", Config: sdk.Attributes{"bucket": mine}, IdempotencyKey: "bulwark:beta:L1:K5"})
		rr := mustRead(t, b, &sdk.ReadRequest{Type: typeBucket, Name: "mine", IdempotencyKey: "bulwark:beta:L1:K5", Private: cr.Private})
		if !rr.Exists || rr.ID != mine {
			t.Fatalf("Read by key with only the private data: %+v", rr)
		}
		mustDelete(t, b, &sdk.DeleteRequest{Type: typeBucket, Name: "mine", ID: mine, Attributes: sdk.Attributes{"bucket": mine}, Private: cr.Private})
		if _, err := raw.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(mine)}); apiCode(err) != "NotFound" {
			t.Fatalf("HeadBucket after Delete: %v", err)
		}
	})

	t.Run("read only", func(t *testing.T) {
		_, endpoint := newQuirkyS3(t)
		raw := s3Client(endpoint)
		dir := t.TempDir()
		p := New()
		cresp, err := p.Configure(ctx, &sdk.ConfigureRequest{Config: sdk.Attributes{"endpoint": endpoint}, DataDir: dir, ReadOnly: true})
		if err != nil || cresp.Diagnostics.HasError() {
			t.Fatalf("Configure: %v %v", err, cresp)
		}
		name := unique(t, "bw-ro")
		theirs(t, raw, name)
		if rr := mustRead(t, p, &sdk.ReadRequest{Type: typeBucket, Name: "s", ID: name}); !rr.Exists {
			t.Fatalf("Read in a read-only session: %+v", rr)
		}
		if _, err := p.Create(ctx, &sdk.CreateRequest{Type: typeBucket, Name: "s", Config: sdk.Attributes{"bucket": unique(t, "bw-ro")}, IdempotencyKey: "k"}); err == nil {
			t.Fatal("a Create went through in a read-only session")
		}
		if _, err := p.Delete(ctx, &sdk.DeleteRequest{Type: typeBucket, Name: "s", ID: name}); err == nil {
			t.Fatal("a Delete went through in a read-only session")
		}
		untouched(t, raw, name)
		if ents, _ := os.ReadDir(dir); len(ents) != 0 {
			t.Fatalf("a read-only session wrote into its data folder: %v", ents)
		}
	})
}

// TestTableOwnership is TestBucketOwnership's twin for tables, on dynalite.
func TestTableOwnership(t *testing.T) {
	endpoint := os.Getenv("BULWARK_TEST_DYNAMODB_ENDPOINT")
	if endpoint == "" {
		t.Skip("BULWARK_TEST_DYNAMODB_ENDPOINT is unset: start the emulators with `.ci/emulators.sh start` and `eval \"$(.ci/emulators.sh env)\"`, or run `make test-aws`")
	}
	hermetic(t)
	ctx := context.Background()
	raw := ddbClient(endpoint)
	p := configured(t, t.TempDir(), sdk.Attributes{"endpoints": map[string]any{"dynamodb": endpoint}, "timeout_seconds": 30.0})

	makeTable := func(t *testing.T, name string) {
		t.Helper()
		if _, err := raw.CreateTable(ctx, &dynamodb.CreateTableInput{
			TableName:            aws.String(name),
			AttributeDefinitions: []ddbtypes.AttributeDefinition{{AttributeName: aws.String("id"), AttributeType: ddbtypes.ScalarAttributeTypeS}},
			KeySchema:            []ddbtypes.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: ddbtypes.KeyTypeHash}},
			BillingMode:          ddbtypes.BillingModePayPerRequest,
		}); err != nil {
			t.Fatal(err)
		}
		// dynalite answers CreateTable before the table takes writes.
		w := dynamodb.NewTableExistsWaiter(raw, func(o *dynamodb.TableExistsWaiterOptions) { o.MinDelay, o.MaxDelay = waitMinDelay, waitMaxDelay })
		if err := w.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)}, 30*time.Second); err != nil {
			t.Fatal(err)
		}
		if _, err := raw.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(name), Item: map[string]ddbtypes.AttributeValue{"id": &ddbtypes.AttributeValueMemberS{Value: "theirs"}}}); err != nil {
			t.Fatal(err)
		}
	}
	untouchedTable := func(t *testing.T, name string) {
		t.Helper()
		d, err := raw.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
		if err != nil {
			t.Fatalf("table %s: %v", name, err)
		}
		tags, err := raw.ListTagsOfResource(ctx, &dynamodb.ListTagsOfResourceInput{ResourceArn: d.Table.TableArn})
		if err != nil || len(tags.Tags) != 0 {
			t.Fatalf("table %s was tagged: %+v %v", name, tags, err)
		}
		scan, err := raw.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(name)})
		if err != nil || len(scan.Items) != 1 {
			t.Fatalf("table %s holds %d items, want only theirs: %v", name, len(scan.Items), err)
		}
	}

	t.Run("out of band", func(t *testing.T) {
		name := unique(t, "bw-oob")
		makeTable(t, name)
		t.Cleanup(func() { raw.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(name)}) })
		cfg := sdk.Attributes{"table": name, "hash_key": "id"}
		if rr := mustRead(t, p, &sdk.ReadRequest{Type: typeTable, Name: "database", Config: cfg}); !rr.Exists || rr.IdempotencyKey != "" {
			t.Fatalf("Read of a table bulwark did not create: %+v", rr)
		}
		for range 2 {
			resp, err := p.Create(ctx, &sdk.CreateRequest{Type: typeTable, Name: "database", Config: cfg, IdempotencyKey: "bulwark:beta:L1:K1"})
			wantConflict(t, resp, err, "")
			untouchedTable(t, name)
		}
		_, err := p.Delete(ctx, &sdk.DeleteRequest{Type: typeTable, Name: "database", ID: name, Attributes: sdk.Attributes{"table": name, attrKey: "bulwark:beta:L1:K1"}})
		if err == nil || !sdk.IsConflict(err) {
			t.Fatalf("Delete of a table made out of band: %v", err)
		}
		untouchedTable(t, name)
	})

	t.Run("another key", func(t *testing.T) {
		name := unique(t, "bw-keyed")
		cfg := sdk.Attributes{"table": name, "hash_key": "id"}
		const alpha, beta = "bulwark:alpha:L1:K1", "bulwark:beta:L2:K2"
		cr := mustCreate(t, p, &sdk.CreateRequest{Type: typeTable, Name: "database", Config: cfg, IdempotencyKey: alpha})
		if rr := mustRead(t, p, &sdk.ReadRequest{Type: typeTable, Name: "database", ID: name}); rr.IdempotencyKey != alpha || rr.Attributes[attrKey] != alpha {
			t.Fatalf("Read: %+v, want the key %s", rr, alpha)
		}
		resp, err := p.Create(ctx, &sdk.CreateRequest{Type: typeTable, Name: "database", Config: cfg, IdempotencyKey: beta})
		wantConflict(t, resp, err, alpha)
		if again := mustCreate(t, p, &sdk.CreateRequest{Type: typeTable, Name: "database", Config: cfg, IdempotencyKey: alpha}); again.ID != name {
			t.Fatalf("retried Create: %+v", again)
		}
		if _, err := p.Delete(ctx, &sdk.DeleteRequest{Type: typeTable, Name: "database", ID: name, Attributes: sdk.Attributes{"table": name, attrKey: beta}}); err == nil || !sdk.IsConflict(err) {
			t.Fatalf("Delete under another key: %v", err)
		}
		mustDelete(t, p, &sdk.DeleteRequest{Type: typeTable, Name: "database", ID: name, Attributes: cr.Attributes})
		if _, err := raw.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)}); apiCode(err) != "ResourceNotFoundException" {
			t.Fatalf("DescribeTable after Delete: %v", err)
		}
	})
}
