package backends

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"github.com/bulwark-iac/bulwark/core/protection"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/bulwark-iac/bulwark/core/journal"
	"github.com/bulwark-iac/bulwark/core/secrets"
	"github.com/bulwark-iac/bulwark/core/state"
	"github.com/bulwark-iac/bulwark/core/storage"
)

// s3URL serves gofakes3 on loopback and returns a fresh prefix's URL in a
// bucket it made.
func s3URL(t *testing.T) string {
	t.Helper()
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	srv := httptest.NewServer(gofakes3.New(s3mem.New(), gofakes3.WithAutoBucket(false)).Server())
	t.Cleanup(srv.Close)
	c := s3.New(s3.Options{Region: "us-east-1", BaseEndpoint: aws.String(srv.URL), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", "")})
	if _, err := c.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String("team-state")}); err != nil {
		t.Fatal(err)
	}
	var b [4]byte
	rand.Read(b[:])
	return "s3://team-state/stacks-" + hex.EncodeToString(b[:]) + "?region=us-east-1&endpoint=" + url.QueryEscape(srv.URL)
}

// A stack kept in files moves to S3 with its journal, revisions and
// lineage (the folder then refuses, naming the bucket), and from S3 to a new
// folder (the prefix then refuses, naming the folder).
func TestMigrateFileToS3AndBack(t *testing.T) {
	ctx := context.Background()
	key, _ := secrets.NewKey("test")
	o := storage.Options{Stack: "web", Sealing: state.Sealing{Sealer: key.Box(secrets.StackContext("web"))}}
	dir := "file://" + t.TempDir()
	src := open(t, dir, o)
	w, err := src.Lock(ctx, storage.Holder{Op: "op_1"})
	if err != nil {
		t.Fatal(err)
	}
	r := &state.Resource{Name: "db", Type: "generic", Provider: "mock", Source: "mock", ID: "x", Protection: protection.Durable,
		Attributes: map[string]any{"pw": "hunter2"}, Sensitive: []string{"pw"}}
	for _, c := range []storage.Commit{
		{Records: []journal.Record{{Op: "op_1", Kind: journal.KindOp, Type: "apply", Status: journal.OpRunning}}},
		{Records: []journal.Record{{Op: "op_1", Kind: journal.KindStep, Resource: "db", Status: journal.StepOK}}, Change: storage.Change{Put: []*state.Resource{r}}},
		{Records: []journal.Record{{Op: "op_1", Kind: journal.KindOp, Type: "apply", Status: journal.OpSucceeded}},
			Change: storage.Change{Meta: &storage.Meta{Current: 1, Revisions: []state.Revision{{N: 1, Op: "op_1", Status: state.RevisionApplied}}}}},
	} {
		if _, err := w.Commit(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.PutRevision(ctx, 1, storage.RevisionBody{Spec: "stack: web\n"}); err != nil {
		t.Fatal(err)
	}
	w.Release(ctx)
	before, err := src.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	to := s3URL(t)
	moved, err := migrate(ctx, dir, to, o, "op_m")
	if err != nil {
		t.Fatal(err)
	}
	if moved.Resources != 1 || moved.Records != 4 || moved.Revisions != 1 {
		t.Fatalf("moved %+v", moved)
	}
	if _, err := open(t, dir, o).Load(ctx); !errors.Is(err, storage.ErrMoved) || !strings.Contains(err.Error(), "s3://team-state/") {
		t.Fatalf("the moved folder: %v", err)
	}
	st, err := open(t, to, o).Load(ctx)
	if err != nil || st.Lineage != before.Lineage || st.Resources["db"].Attributes["pw"] != "hunter2" || st.Current != 1 {
		t.Fatalf("at s3: %+v %v", st, err)
	}
	recs, _, err := open(t, to, o).Journal(ctx)
	if err != nil || len(recs) != 5 || recs[0].Op != "op_1" || recs[4].Op != "op_m" || recs[4].Status != journal.OpSucceeded {
		t.Fatalf("journal at s3: %+v %v", recs, err)
	}

	back := "file://" + t.TempDir()
	if _, err := migrate(ctx, to, back, o, "op_m2"); err != nil {
		t.Fatal(err)
	}
	for _, op := range []func(b storage.Backend) error{
		func(b storage.Backend) error { _, err := b.Load(ctx); return err },
		func(b storage.Backend) error { _, err := b.Lock(ctx, storage.Holder{Op: "op_late"}); return err },
	} {
		if err := op(open(t, to, o)); !errors.Is(err, storage.ErrMoved) || !strings.Contains(err.Error(), back) {
			t.Fatalf("the moved prefix: %v, want ErrMoved naming %s", err, back)
		}
	}
	if st, err := open(t, back, o).Load(ctx); err != nil || st.Resources["db"] == nil || st.Lineage != before.Lineage {
		t.Fatalf("back in files: %+v %v", st, err)
	}
}
