package s3store

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"github.com/bulwark-iac/bulwark/core/protection"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/bulwark-iac/bulwark/core/journal"
	"github.com/bulwark-iac/bulwark/core/secrets"
	"github.com/bulwark-iac/bulwark/core/state"
	"github.com/bulwark-iac/bulwark/core/storage"
	"github.com/bulwark-iac/bulwark/core/storage/remote"
	"github.com/bulwark-iac/bulwark/core/storage/storagetest"
)

const testBucket = "bulwark-state-test"

// server is the S3 endpoint the tests talk to over loopback: the emulator
// .ci/emulators.sh started (BULWARK_TEST_S3_ENDPOINT), else gofakes3
// served by this process. Its handler counts what it is sent and can
// answer like real S3 where gofakes3 differs.
type server struct {
	url string

	mu       sync.Mutex
	puts     []put // every PUT of an object, in order
	match404 bool  // If-Match on a missing key: 404 NoSuchKey, as AWS
}

type put struct {
	key  string
	size int
}

func (s *server) ServeHTTP(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if q := r.URL.Query(); r.Method == http.MethodPut && (len(q) == 0 || q.Get("x-id") == "PutObject") {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			s.mu.Lock()
			s.puts = append(s.puts, put{key: r.URL.Path, size: len(body)})
			m404 := s.match404
			s.mu.Unlock()
			if m404 && r.Header.Get("If-Match") != "" {
				probe := httptest.NewRecorder()
				next.ServeHTTP(probe, httptest.NewRequest(http.MethodHead, r.URL.String(), nil))
				if probe.Code == http.StatusNotFound {
					w.WriteHeader(http.StatusNotFound)
					io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>NoSuchKey</Code><Message>The specified key does not exist.</Message></Error>`)
					return
				}
			}
		}
		next.ServeHTTP(w, r)
	})
}

func (s *server) putsSince(n int) []put {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]put(nil), s.puts[n:]...)
}

func (s *server) putCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.puts)
}

// setup gives the test credentials (the SDK's chain reads the environment;
// the emulators check no signature) and an endpoint with the test bucket.
func setup(t *testing.T) *server {
	t.Helper()
	for k, v := range map[string]string{"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "AWS_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true"} {
		if os.Getenv(k) == "" {
			t.Setenv(k, v)
		}
	}
	s := &server{}
	if ep := os.Getenv("BULWARK_TEST_S3_ENDPOINT"); ep != "" {
		// The emulator's own server: nothing is counted or changed there.
		s.url = ep
	} else {
		srv := httptest.NewServer(s.ServeHTTP(gofakes3.New(s3mem.New(), gofakes3.WithAutoBucket(false)).Server()))
		t.Cleanup(srv.Close)
		s.url = srv.URL
	}
	_, err := raw(s.url).CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(testBucket)})
	if err != nil && apiCode(err) != "BucketAlreadyExists" && apiCode(err) != "BucketAlreadyOwnedByYou" {
		t.Fatalf("create the test bucket: %v", err)
	}
	return s
}

func raw(endpoint string) *s3.Client {
	return s3.New(s3.Options{Region: "us-east-1", BaseEndpoint: aws.String(endpoint), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", "")})
}

func randomHex(t *testing.T) string {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b[:])
}

// home is a fresh prefix's URL.
func (s *server) home(t *testing.T, lease string) string {
	q := url.Values{"region": {"us-east-1"}, "endpoint": {s.url}}
	if lease != "" {
		q.Set("lease", lease)
	}
	return "s3://" + testBucket + "/t-" + randomHex(t) + "?" + q.Encode()
}

// stackKey is the key of a stack object under home.
func stackKey(t *testing.T, home, stack, name string) string {
	_, prefix, _, err := ParseURL(home)
	if err != nil {
		t.Fatal(err)
	}
	return prefix + "/" + stack + "/" + name
}

func openHome(t *testing.T, home string, o storage.Options) *Backend {
	t.Helper()
	b, err := Open(context.Background(), home, o)
	if err != nil {
		t.Fatalf("open %s: %v", home, err)
	}
	return b
}

func TestConformance(t *testing.T) {
	s := setup(t)
	c := raw(s.url)
	ctx := context.Background()
	storagetest.Run(t, storagetest.Factory{
		New: func(t *testing.T) string { return s.home(t, "3s") },
		Open: func(ctx context.Context, home string, o storage.Options) (storage.Backend, error) {
			return Open(ctx, home, o)
		},
		CopyState: func(t *testing.T, from, to string) {
			// The state is the snapshot and the WAL: both are copied over
			// (stack.json, the stack's identity, stays).
			src := stackKey(t, from, storagetest.Stack, "")
			out, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(testBucket), Prefix: aws.String(src)})
			if err != nil {
				t.Fatal(err)
			}
			copied := 0
			for _, o := range out.Contents {
				name := strings.TrimPrefix(aws.ToString(o.Key), src)
				if name != snapshotKey && !strings.HasPrefix(name, walDir) {
					continue
				}
				if _, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String(testBucket), CopySource: aws.String(testBucket + "/" + aws.ToString(o.Key)),
					Key: aws.String(stackKey(t, to, storagetest.Stack, name))}); err != nil {
					t.Fatal(err)
				}
				copied++
			}
			if copied == 0 {
				t.Fatalf("no state under %s to copy", src)
			}
		},
		Raw: func(t *testing.T, home string) []byte {
			_, prefix, _, _ := ParseURL(home)
			var all []byte
			p := s3.NewListObjectsV2Paginator(c, &s3.ListObjectsV2Input{Bucket: aws.String(testBucket), Prefix: aws.String(prefix + "/")})
			for p.HasMorePages() {
				page, err := p.NextPage(ctx)
				if err != nil {
					t.Fatal(err)
				}
				for _, o := range page.Contents {
					out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(testBucket), Key: o.Key})
					if err != nil {
						t.Fatal(err)
					}
					b, _ := io.ReadAll(out.Body)
					out.Body.Close()
					all = append(all, b...)
				}
			}
			return all
		},
		Tamper: func(t *testing.T, home, old, new string) {
			tamper(t, home, storagetest.Stack, "", old, new)
		},
		Steal: func(t *testing.T, home string) { steal(t, home, storagetest.Stack) },
	})
}

// tamper edits by hand (GET, replace, PUT: what a person with the aws CLI
// would do) every object of home's stack whose name starts with only (all
// but lock.json when only is ""), replacing old by new; it reports how
// many it changed.
func tamper(t *testing.T, home, stack, only, old, new string) int {
	t.Helper()
	ctx := context.Background()
	b := openHome(t, home, storage.Options{Stack: stack})
	objs, err := b.c.list(ctx, only, "")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, lo := range objs {
		name := aws.ToString(lo.Key)
		if name == lockKey {
			continue
		}
		o, err := b.c.get(ctx, name)
		if err != nil || o == nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !bytes.Contains(o.body, []byte(old)) {
			continue
		}
		if _, err := b.c.put(ctx, name, bytes.ReplaceAll(o.body, []byte(old), []byte(new)), cond{}, o.meta); err != nil {
			t.Fatal(err)
		}
		n++
	}
	return n
}

// steal makes the lock of home's stack look as if its lease ran out, and
// takes it over from another backend (which fences the old holder), then
// lets it go.
func steal(t *testing.T, home, stack string) {
	t.Helper()
	ctx := context.Background()
	b := openHome(t, home, storage.Options{Stack: stack})
	lr, _, err := b.c.readLock(ctx)
	if err != nil || lr == nil {
		t.Fatalf("steal: no lock to steal (%v)", err)
	}
	lr.Holder.Until = time.Now().Add(-time.Minute)
	lr.Proc = proc{} // as if on another machine
	body, _ := json.Marshal(lr)
	if _, err := b.c.put(ctx, lockKey, body, cond{}, nil); err != nil {
		t.Fatal(err)
	}
	w, err := b.Lock(ctx, storage.Holder{Op: "op_thief", PID: 1, Host: "elsewhere"})
	if err != nil {
		t.Fatalf("steal: %v", err)
	}
	if w.Stale() == nil {
		t.Fatal("steal: the takeover names no stale holder")
	}
	if err := w.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

func options() storage.Options {
	k, err := secrets.NewKey("s3store test")
	if err != nil {
		panic(err)
	}
	return storage.Options{Stack: "web", Sealing: state.Sealing{Sealer: k.Box(secrets.StackContext("web"))}}
}

func res(name string) *state.Resource {
	return &state.Resource{Name: name, Type: "network", Provider: "mock", Source: "mock", ID: "id-" + name, Protection: protection.Ephemeral,
		Config: map[string]any{"size": 1.0}, Attributes: map[string]any{"size": 1.0}}
}

// writeLock puts a lock record of someone else's in place, as their
// process would have.
func writeLock(t *testing.T, b *Backend, h storage.Holder) {
	t.Helper()
	body, _ := json.Marshal(&lockRecord{Format: format, Holder: h, Token: "theirs"})
	if _, err := b.c.put(context.Background(), lockKey, body, cond{}, nil); err != nil {
		t.Fatal(err)
	}
}

func TestLease(t *testing.T) {
	s := setup(t)
	ctx := context.Background()
	elsewhere := storage.Holder{Op: "op_elsewhere", PID: 4242, Host: "ci-runner-7", Since: time.Now().Add(-time.Hour).UTC().Truncate(time.Second)}

	t.Run("a live lease elsewhere is refused, naming its holder", func(t *testing.T) {
		b := openHome(t, s.home(t, ""), options())
		h := elsewhere
		h.Until = time.Now().Add(time.Hour).UTC().Truncate(time.Second)
		writeLock(t, b, h)
		_, err := b.Lock(ctx, storage.Holder{Op: "op_me"})
		var le *storage.LockedError
		if !errors.As(err, &le) || le.Holder == nil || le.Holder.Op != "op_elsewhere" || le.Holder.Host != "ci-runner-7" || !le.Holder.Until.Equal(h.Until) {
			t.Fatalf("Lock over a live lease: %v (%+v), want a LockedError naming op_elsewhere and its lease", err, le)
		}
		if got, err := b.Holder(ctx); err != nil || got == nil || got.Op != "op_elsewhere" {
			t.Fatalf("Holder: %v %v", got, err)
		}
		if msg := err.Error(); !strings.Contains(msg, "lease until "+h.Until.Format(time.RFC3339)) {
			t.Errorf("the refusal %q does not say when the lease runs out", msg)
		}
	})

	t.Run("a lease that ran out is taken over, and the takeover journaled", func(t *testing.T) {
		b := openHome(t, s.home(t, ""), options())
		h := elsewhere
		h.Until = time.Now().Add(-time.Second).UTC()
		writeLock(t, b, h)
		w, err := b.Lock(ctx, storage.Holder{Op: "op_me"})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Release(ctx)
		if st := w.Stale(); st == nil || st.Op != "op_elsewhere" || st.PID != 4242 {
			t.Fatalf("Stale %v, want op_elsewhere", st)
		}
		recs, _, err := b.Journal(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) != 1 || recs[0].Kind != kindLock || recs[0].Status != "taken_over" || recs[0].Op != "op_me" ||
			!strings.Contains(recs[0].Error, "op_elsewhere") || !strings.Contains(recs[0].Error, "lease ran out") {
			t.Fatalf("journal after a takeover: %+v", recs)
		}
		if got, err := b.Holder(ctx); err != nil || got == nil || got.Op != "op_me" || !got.Until.After(time.Now()) {
			t.Fatalf("Holder after the takeover: %+v %v", got, err)
		}
	})

	t.Run("renewal finds another holder: Lost, and the next Commit writes nothing", func(t *testing.T) {
		home := s.home(t, "3s")
		b := openHome(t, home, options())
		w, err := b.Lock(ctx, storage.Holder{Op: "op_me"})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Release(ctx)
		if _, err := w.Commit(ctx, storage.Commit{Change: storage.Change{Put: []*state.Resource{res("a")}}}); err != nil {
			t.Fatal(err)
		}
		h := elsewhere
		h.Until = time.Now().Add(time.Hour)
		writeLock(t, b, h)
		select {
		case <-w.Lost():
		case <-time.After(10 * time.Second):
			t.Fatal("Lost() not closed 10 s after another holder's lock replaced this one (renewal every 1 s)")
		}
		before := s.putCount()
		_, err = w.Commit(ctx, storage.Commit{Records: []journal.Record{{Op: "op_me", Kind: journal.KindStep, Status: journal.StepOK}}, Change: storage.Change{Put: []*state.Resource{res("b")}}})
		if !errors.Is(err, storage.ErrLost) || !strings.Contains(err.Error(), "taken over by operation op_elsewhere") {
			t.Fatalf("Commit after the lock was lost: %v, want ErrLost naming who took it", err)
		}
		if os.Getenv("BULWARK_TEST_S3_ENDPOINT") == "" && s.putCount() != before {
			t.Fatalf("a lost writer's Commit sent %d PUT(s)", s.putCount()-before)
		}
		if st, err := openHome(t, home, options()).Load(ctx); err != nil || st.Resources["b"] != nil || st.Resources["a"] == nil {
			t.Fatalf("state after a lost commit: %+v %v", st, err)
		}
		// Release leaves the other holder's lock alone.
		if err := w.Release(ctx); err != nil {
			t.Fatal(err)
		}
		if got, _ := b.Holder(ctx); got == nil || got.Op != "op_elsewhere" {
			t.Fatalf("the lost writer's Release removed another holder's lock: %v", got)
		}
	})

	t.Run("a renewal answered 404 (the lock deleted, AWS's answer to If-Match) is a lost race", func(t *testing.T) {
		if os.Getenv("BULWARK_TEST_S3_ENDPOINT") != "" {
			t.Skip("needs this process's server, which answers 404 as AWS does")
		}
		s.mu.Lock()
		s.match404 = true
		s.mu.Unlock()
		defer func() { s.mu.Lock(); s.match404 = false; s.mu.Unlock() }()
		home := s.home(t, "3s")
		b := openHome(t, home, options())
		w, err := b.Lock(ctx, storage.Holder{Op: "op_me"})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Release(ctx)
		if _, err := raw(s.url).DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(testBucket), Key: aws.String(stackKey(t, home, "web", lockKey))}); err != nil {
			t.Fatal(err)
		}
		select {
		case <-w.Lost():
		case <-time.After(10 * time.Second):
			t.Fatal("Lost() not closed 10 s after the lock object was deleted")
		}
		if _, err := w.Commit(ctx, storage.Commit{Change: storage.Change{Put: []*state.Resource{res("b")}}}); !errors.Is(err, storage.ErrLost) {
			t.Fatalf("Commit: %v, want ErrLost", err)
		}
	})

	t.Run("a displaced holder that did not notice is fenced", func(t *testing.T) {
		home := s.home(t, "")
		b := openHome(t, home, options())
		w, err := b.Lock(ctx, storage.Holder{Op: "op_paused"})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Release(ctx)
		if _, err := w.Commit(ctx, storage.Commit{Change: storage.Change{Put: []*state.Resource{res("a")}}}); err != nil {
			t.Fatal(err)
		}
		steal(t, home, "web") // its lease "ran out" while it was paused
		_, err = w.Commit(ctx, storage.Commit{Change: storage.Change{Put: []*state.Resource{res("b")}}})
		if !errors.Is(err, storage.ErrLost) {
			t.Fatalf("the displaced holder's Commit: %v, want ErrLost", err)
		}
		for _, op := range []func() error{
			func() error { return w.Checkpoint(ctx, 20) },
			func() error { return w.PutRevision(ctx, 1, storage.RevisionBody{Spec: "x"}) },
			func() error { _, err := w.PutBackup(ctx, "op_x", 5); return err },
		} {
			if err := op(); !errors.Is(err, storage.ErrLost) {
				t.Errorf("a lost writer's call: %v, want ErrLost", err)
			}
		}
		st, err := openHome(t, home, options()).Load(ctx)
		if err != nil || st.Resources["b"] != nil || st.Resources["a"] == nil {
			t.Fatalf("state: %+v %v", st, err)
		}
	})
}

// A Commit is one PUT of what it carries: its size does not grow with the
// stack.
func TestCommitCostIsTheChange(t *testing.T) {
	if os.Getenv("BULWARK_TEST_S3_ENDPOINT") != "" {
		t.Skip("counts what this process's server is sent")
	}
	s := setup(t)
	ctx := context.Background()
	b := openHome(t, s.home(t, ""), options())
	w, err := b.Lock(ctx, storage.Holder{Op: "op_cost"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Release(ctx)
	measure := func(name string) put {
		t.Helper()
		n := s.putCount()
		if _, err := w.Commit(ctx, storage.Commit{Records: []journal.Record{{Op: "op_cost", Kind: journal.KindStep, Step: name, Status: journal.StepOK}},
			Change: storage.Change{Put: []*state.Resource{res(name)}}}); err != nil {
			t.Fatal(err)
		}
		ps := s.putsSince(n)
		if len(ps) != 1 || !strings.Contains(ps[0].key, "/wal/") {
			t.Fatalf("a Commit sent %+v, want one PUT of a WAL object", ps)
		}
		return ps[0]
	}
	// The first write also writes stack.json.
	if _, err := w.Commit(ctx, storage.Commit{Change: storage.Change{Put: []*state.Resource{res("first")}}}); err != nil {
		t.Fatal(err)
	}
	small := measure("r0")
	for i := range 500 {
		if _, err := w.Commit(ctx, storage.Commit{Change: storage.Change{Put: []*state.Resource{res("bulk" + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + hex.EncodeToString([]byte{byte(i >> 8), byte(i)}))}}}); err != nil {
			t.Fatal(err)
		}
	}
	large := measure("r1")
	t.Logf("one-resource commit: %d bytes at 2 resources, %d bytes at 503", small.size, large.size)
	if large.size > small.size+64 {
		t.Fatalf("a one-resource commit grew from %d to %d bytes with the stack", small.size, large.size)
	}
}

// A Checkpoint after a short run (a no-op apply: its two records) writes
// nothing; one that compacts the journal writes the snapshot and drops the
// WAL it folded.
func TestCheckpointWritesOnlyWhatPays(t *testing.T) {
	if os.Getenv("BULWARK_TEST_S3_ENDPOINT") != "" {
		t.Skip("counts what this process's server is sent")
	}
	s := setup(t)
	ctx := context.Background()
	home := s.home(t, "")
	b := openHome(t, home, options())
	w, err := b.Lock(ctx, storage.Holder{Op: "op_cp"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Release(ctx)
	op := func(n int) {
		id := "op_" + strings.Repeat("0", 20) + string(rune('A'+n%26)) + hex.EncodeToString([]byte{byte(n)})
		for _, c := range []storage.Commit{
			{Records: []journal.Record{{Op: id, Kind: journal.KindOp, Type: "apply", Status: journal.OpRunning}}},
			{Records: []journal.Record{{Op: id, Kind: journal.KindOp, Type: "apply", Status: journal.OpSucceeded}}},
		} {
			if _, err := w.Commit(ctx, c); err != nil {
				t.Fatal(err)
			}
		}
	}
	op(0)
	n := s.putCount()
	if err := w.Checkpoint(ctx, 20); err != nil {
		t.Fatal(err)
	}
	if ps := s.putsSince(n); len(ps) != 0 {
		t.Fatalf("a checkpoint after a no-op run wrote %+v", ps)
	}
	for i := 1; i < 12; i++ {
		op(i)
	}
	n = s.putCount()
	if err := w.Checkpoint(ctx, 3); err != nil {
		t.Fatal(err)
	}
	ps := s.putsSince(n)
	if len(ps) != 1 || !strings.HasSuffix(ps[0].key, "/"+snapshotKey) {
		t.Fatalf("a compacting checkpoint wrote %+v, want the snapshot", ps)
	}
	left, err := b.c.list(ctx, walDir, "")
	if err != nil || len(left) != 0 {
		t.Fatalf("WAL objects left after the checkpoint: %d %v", len(left), err)
	}
	recs, _, err := openHome(t, home, options()).Journal(ctx)
	if err != nil || len(recs) >= 24 {
		t.Fatalf("journal after compaction: %d records, %v", len(recs), err)
	}
}

// The first Lock of a stack stores its lineage: a Load right after it, by
// anyone, returns it, so the first operation's idempotency keys name it
// (bulwark:STACK:LINEAGE:ID) and another machine resuming that operation
// recognises what it made.
func TestFirstLockStoresTheLineage(t *testing.T) {
	s := setup(t)
	ctx := context.Background()
	home := s.home(t, "")
	b := openHome(t, home, options())
	if st, err := b.Load(ctx); err != nil || st.Lineage != "" {
		t.Fatalf("before any lock: %q %v", st.Lineage, err)
	}
	w, err := b.Lock(ctx, storage.Holder{Op: "op_first"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Release(ctx)
	st, err := openHome(t, home, options()).Load(ctx)
	if err != nil || st.Lineage == "" || st.Serial != 0 {
		t.Fatalf("right after the first lock, another reader loads lineage %q, serial %d (%v)", st.Lineage, st.Serial, err)
	}
	if _, err := w.Commit(ctx, storage.Commit{Records: []journal.Record{{Op: "op_first", Kind: journal.KindOp, Status: journal.OpRunning}}}); err != nil {
		t.Fatal(err)
	}
	recs, _, err := b.Journal(ctx)
	if err != nil || len(recs) != 1 || recs[0].Lineage != st.Lineage {
		t.Fatalf("journal %+v %v, want one record of lineage %s", recs, err, st.Lineage)
	}
}

func TestParseURL(t *testing.T) {
	tests := []struct {
		url, bucket, prefix, err string
		lease                    time.Duration
	}{
		{url: "s3://team-state/stacks?region=eu-west-1", bucket: "team-state", prefix: "stacks", lease: DefaultLease},
		{url: "s3://team-state?lease=90s", bucket: "team-state", lease: 90 * time.Second},
		{url: "s3://team-state/a/b/?endpoint=http://127.0.0.1:9000", bucket: "team-state", prefix: "a/b", lease: DefaultLease},
		{url: "s3:///stacks", err: "names no bucket"},
		{url: "file:///x", err: "want s3://"},
		{url: "s3://b/p?secret_key=hunter2", err: `unknown URL parameter "secret_key"`},
		{url: "s3://AKIA:hunter2@b/p", err: "carries credentials"},
		{url: "s3://b/p?endpoint=http://u:hunter2@h", err: "without credentials"},
		{url: "s3://b/p?lease=1s", err: "at least"},
	}
	for _, tt := range tests {
		bucket, prefix, s, err := ParseURL(tt.url)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) || strings.Contains(err.Error(), "hunter2") {
				t.Errorf("%s: %v, want an error saying %q (and no secret)", tt.url, err, tt.err)
			}
			continue
		}
		if err != nil || bucket != tt.bucket || prefix != tt.prefix || s.Lease != tt.lease {
			t.Errorf("%s: %q %q %+v %v", tt.url, bucket, prefix, s, err)
		}
	}
}

// A bucket that does not exist is said to be so, not taken for an empty
// stack.
// On the write path too (the first write of an apply is its Lock), and
// every message names the location as the user gave it, not re-encoded.
func TestMissingBucket(t *testing.T) {
	s := setup(t)
	ctx := context.Background()
	bucket := "no-such-bucket-" + randomHex(t)
	for _, home := range []string{
		"s3://" + bucket + "/p?endpoint=" + url.QueryEscape(s.url) + "&region=us-east-1",
		"s3://" + bucket + "/p?region=us-east-1&endpoint=" + s.url,
	} {
		b := openHome(t, home, options())
		if b.Location() != home {
			t.Errorf("Location %s, want the URL as given, %s", b.Location(), home)
		}
		_, lerr := b.Load(ctx)
		_, werr := b.Lock(ctx, storage.Holder{Op: "op_1"})
		_, serr := Stacks(ctx, home)
		for what, err := range map[string]error{"Load": lerr, "Lock": werr, "Stacks": serr} {
			if err == nil {
				t.Fatalf("%s from a missing bucket succeeded", what)
			}
			msg := err.Error()
			for _, want := range []string{"bucket " + bucket + " does not exist", "bulwark does not create it", home} {
				if !strings.Contains(msg, want) {
					t.Errorf("%s from a missing bucket: %q does not say %q", what, msg, want)
				}
			}
		}
	}
}

// No credentials anywhere: the error names every source the SDK's chain
// tried, and how to give one, not only the last (EC2 IMDS).
func TestMissingCredentials(t *testing.T) {
	s := setup(t)
	dir := t.TempDir()
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_DEFAULT_PROFILE",
		"AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI"} {
		t.Setenv(k, "")
	}
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true") // no network beyond loopback
	t.Setenv("AWS_CONFIG_FILE", dir+"/config")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", dir+"/credentials")
	t.Setenv("HOME", dir)
	_, err := Open(context.Background(), s.home(t, ""), options())
	if err == nil {
		t.Fatal("Open without credentials succeeded")
	}
	msg := err.Error()
	t.Log(msg)
	for _, want := range []string{"no AWS credentials found", "AWS_ACCESS_KEY_ID", "~/.aws/credentials", "SSO", "AWS_WEB_IDENTITY_TOKEN_FILE",
		"container role", "EC2 instance role (IMDS)", "export AWS_PROFILE=NAME", "&profile=NAME"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the error %q does not say %q", msg, want)
		}
	}
}

// BenchmarkCommit: one-resource Commits from 10 goroutines (the steps of an
// apply at --parallelism 10), grouped into WAL objects, against the S3
// server on loopback.
func BenchmarkCommit(b *testing.B) {
	for k, v := range map[string]string{"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "AWS_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true"} {
		if os.Getenv(k) == "" {
			b.Setenv(k, v)
		}
	}
	ep := os.Getenv("BULWARK_TEST_S3_ENDPOINT")
	if ep == "" {
		srv := httptest.NewServer(gofakes3.New(s3mem.New(), gofakes3.WithAutoBucket(false)).Server())
		b.Cleanup(srv.Close)
		ep = srv.URL
	}
	ctx := context.Background()
	if _, err := raw(ep).CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(testBucket)}); err != nil && apiCode(err) != "BucketAlreadyExists" && apiCode(err) != "BucketAlreadyOwnedByYou" {
		b.Fatal(err)
	}
	var rb [6]byte
	rand.Read(rb[:])
	home := "s3://" + testBucket + "/bench-" + hex.EncodeToString(rb[:]) + "?region=us-east-1&endpoint=" + url.QueryEscape(ep)
	be, err := Open(ctx, home, options())
	if err != nil {
		b.Fatal(err)
	}
	w, err := be.Lock(ctx, storage.Holder{Op: "op_bench"})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Release(ctx)
	var n atomic.Int64
	b.SetParallelism(10)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := n.Add(1)
			name := "r" + strconv.FormatInt(i, 10)
			if _, err := w.Commit(ctx, storage.Commit{Records: []journal.Record{{Op: "op_bench", Kind: journal.KindStep, Step: name, Status: journal.StepOK}},
				Change: storage.Change{Put: []*state.Resource{res(name)}}}); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// Stacks lists the stacks of a prefix (those with a stack.json), not one
// moved away, not a folder bulwark did not make, nothing of another prefix.
func TestStacks(t *testing.T) {
	s := setup(t)
	ctx := context.Background()
	home := s.home(t, "")
	if got, err := Stacks(ctx, home); err != nil || len(got) != 0 {
		t.Fatalf("Stacks of an empty prefix: %v %v", got, err)
	}
	for _, stack := range []string{"web", "db", "gone"} {
		o := options()
		o.Stack = stack
		b := openHome(t, home, o)
		w, err := b.Lock(ctx, storage.Holder{Op: "op_" + stack})
		if err != nil {
			t.Fatal(err)
		}
		if stack == "gone" {
			if err := w.(*remote.Writer).MarkMoved(ctx, "postgres://elsewhere/db"); err != nil {
				t.Fatal(err)
			}
		}
		w.Release(ctx)
	}
	other := openHome(t, s.home(t, ""), options())
	if w, err := other.Lock(ctx, storage.Holder{Op: "op_other"}); err != nil {
		t.Fatal(err)
	} else {
		w.Release(ctx)
	}
	_, prefix, _, _ := ParseURL(home)
	if _, err := raw(s.url).PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(testBucket), Key: aws.String(prefix + "/notes/readme.txt"), Body: strings.NewReader("not a stack")}); err != nil {
		t.Fatal(err)
	}
	got, err := Stacks(ctx, home)
	if err != nil || !slices.Equal(got, []string{"db", "web"}) {
		t.Fatalf("Stacks: %v %v, want [db web]", got, err)
	}
}

// Inspect tells a live holder from a stale one, for doctor: a lease that
// ran out, or a holder of this machine whose process is gone, is stale.
func TestInspect(t *testing.T) {
	s := setup(t)
	ctx := context.Background()
	b := openHome(t, s.home(t, ""), options())
	if live, stale, err := b.Inspect(ctx); err != nil || live != nil || stale != nil {
		t.Fatalf("Inspect with no lock: %v %v %v", live, stale, err)
	}
	w, err := b.Lock(ctx, storage.Holder{Op: "op_me", PID: os.Getpid(), Host: "here", Since: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if live, stale, err := b.Inspect(ctx); err != nil || live == nil || live.Op != "op_me" || stale != nil {
		t.Fatalf("Inspect under a live lock: %v %v %v", live, stale, err)
	}
	w.Release(ctx)
	h := storage.Holder{Op: "op_elsewhere", PID: 4242, Host: "ci-runner-7", Since: time.Now().Add(-time.Hour), Until: time.Now().Add(-time.Second)}
	writeLock(t, b, h)
	if live, stale, err := b.Inspect(ctx); err != nil || live != nil || stale == nil || stale.Op != "op_elsewhere" {
		t.Fatalf("Inspect of a lease that ran out: %v %v %v, want it stale", live, stale, err)
	}
}

// The lease is read and written on the backend's clock (Options.Now), the
// one Lock stamps the holder with: the lease's end is the clock's time plus
// the lease, at the Lock and at every renewal.
func TestLeaseUsesTheInjectedClock(t *testing.T) {
	s := setup(t)
	ctx := context.Background()
	const skew = -2 * time.Hour
	o := options()
	o.Now = func() time.Time { return time.Now().Add(skew) }
	b := openHome(t, s.home(t, "3s"), o)
	w, err := b.Lock(ctx, storage.Holder{Op: "op_clock"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Release(ctx)
	near := func(what string, got time.Time) {
		t.Helper()
		want := time.Now().Add(skew + 3*time.Second)
		if d := got.Sub(want); d < -2*time.Second || d > 2*time.Second {
			t.Fatalf("%s: the lease ends at %s, want about %s (the injected clock's now plus the lease)", what, got, want)
		}
	}
	h, err := b.Holder(ctx)
	if err != nil || h == nil {
		t.Fatalf("Holder: %v %v", h, err)
	}
	near("at Lock", h.Until)
	first := h.Until
	deadline := time.Now().Add(10 * time.Second)
	for {
		h, err = b.Holder(ctx)
		if err != nil || h == nil {
			t.Fatalf("Holder: %v %v", h, err)
		}
		if !h.Until.Equal(first) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no renewal in 10 s (every 1 s)")
		}
		time.Sleep(50 * time.Millisecond)
	}
	near("after a renewal", h.Until)
	select {
	case <-w.Lost():
		t.Fatal("the writer lost its lock")
	default:
	}
}

// A lock record that cannot be encoded is an error, never an empty
// lock.json (which no one could take over: it names no holder).
func TestLockRecordEncodeErrorIsAnError(t *testing.T) {
	s := setup(t)
	ctx := context.Background()
	home := s.home(t, "")
	b := openHome(t, home, options())
	// A time encoding/json refuses (a year past 9999).
	w, err := b.Lock(ctx, storage.Holder{Op: "op_far", Since: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)})
	if err == nil {
		w.Release(ctx)
		t.Fatal("Lock with a holder that cannot be encoded succeeded")
	}
	if o, gerr := b.c.get(ctx, lockKey); gerr != nil || o != nil {
		t.Fatalf("lock.json after a failed Lock: %v %v, want none", o, gerr)
	}
}

// ignoringDeleteConditions serves the S3 API of the tests' emulator (this
// process's gofakes3, or the one BULWARK_TEST_S3_ENDPOINT names) through a
// proxy that drops the conditions of every DELETE, as MinIO was seen to:
// a DELETE with If-Match and a wrong ETag answers 204 and deletes.
func ignoringDeleteConditions(t *testing.T) string {
	t.Helper()
	var next http.Handler
	if ep := os.Getenv("BULWARK_TEST_S3_ENDPOINT"); ep != "" {
		u, err := url.Parse(ep)
		if err != nil {
			t.Fatal(err)
		}
		next = httputil.NewSingleHostReverseProxy(u)
	} else {
		next = gofakes3.New(s3mem.New(), gofakes3.WithAutoBucket(false)).Server()
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodDelete {
			r.Header.Del("If-Match")
			r.Header.Del("If-None-Match")
		}
		next.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	_, err := raw(srv.URL).CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(testBucket)})
	if err != nil && apiCode(err) != "BucketAlreadyExists" && apiCode(err) != "BucketAlreadyOwnedByYou" {
		t.Fatalf("create the test bucket: %v", err)
	}
	return srv.URL
}

// A holder displaced without knowing it (its clock behind the taker's, so
// its lease had not run out by its own clock, and no renewal came between)
// neither removes the newcomer's lock when it releases, nor writes, even
// against a server that ignores the condition of a DELETE: nothing rests on
// a conditional delete; the lock's token fences.
func TestDisplacedHolderCannotRemoveTheNewLockOrWrite(t *testing.T) {
	setup(t) // credentials
	ep := ignoringDeleteConditions(t)
	ctx := context.Background()
	// displaced returns a holder, and the newcomer that took its lock over
	// without it noticing.
	displaced := func(t *testing.T) (string, storage.Writer, *Backend, storage.Writer) {
		home := "s3://" + testBucket + "/t-" + randomHex(t) + "?" + url.Values{"region": {"us-east-1"}, "endpoint": {ep}}.Encode()
		a := openHome(t, home, options())
		wa, err := a.Lock(ctx, storage.Holder{Op: "op_old"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { wa.Release(ctx) })
		if _, err := wa.Commit(ctx, storage.Commit{Change: storage.Change{Put: []*state.Resource{res("a")}}}); err != nil {
			t.Fatal(err)
		}
		if err := wa.PutRevision(ctx, 1, storage.RevisionBody{Spec: "old"}); err != nil {
			t.Fatal(err)
		}
		// The newcomer's clock is ahead by more than the lease: the old
		// lease ran out by it.
		ob := options()
		ob.Now = func() time.Time { return time.Now().Add(2 * DefaultLease) }
		b := openHome(t, home, ob)
		wb, err := b.Lock(ctx, storage.Holder{Op: "op_new"})
		if err != nil {
			t.Fatalf("the newcomer's takeover: %v", err)
		}
		t.Cleanup(func() { wb.Release(ctx) })
		if wb.Stale() == nil || wb.Stale().Op != "op_old" {
			t.Fatalf("the takeover names %v, want op_old", wb.Stale())
		}
		if err := wb.PutRevision(ctx, 1, storage.RevisionBody{Spec: "new"}); err != nil {
			t.Fatal(err)
		}
		return home, wa, b, wb
	}

	t.Run("its Release leaves the newcomer's lock", func(t *testing.T) {
		home, wa, b, wb := displaced(t)
		if err := wa.Release(ctx); err != nil {
			t.Errorf("the displaced holder's Release: %v", err)
		}
		h, err := b.Holder(ctx)
		if err != nil || h == nil || h.Op != "op_new" {
			t.Fatalf("after the displaced holder's Release, the lock is held by %v (%v), want op_new", h, err)
		}
		if _, err := openHome(t, home, options()).Lock(ctx, storage.Holder{Op: "op_third"}); !errors.Is(err, storage.ErrLocked) {
			t.Fatalf("a third Lock while the newcomer holds it: %v, want ErrLocked", err)
		}
		if _, err := wb.Commit(ctx, storage.Commit{Change: storage.Change{Put: []*state.Resource{res("c")}}}); err != nil {
			t.Fatalf("the newcomer's Commit: %v", err)
		}
		// Once the newcomer releases, the lock is free for anyone, and not
		// taken over as a stale one.
		if err := wb.Release(ctx); err != nil {
			t.Fatal(err)
		}
		if h, err := b.Holder(ctx); err != nil || h != nil {
			t.Fatalf("after the newcomer's Release: holder %v %v, want none", h, err)
		}
		wc, err := openHome(t, home, options()).Lock(ctx, storage.Holder{Op: "op_next"})
		if err != nil {
			t.Fatalf("Lock after a release: %v", err)
		}
		if wc.Stale() != nil {
			t.Errorf("a released lock was taken over as stale from %v", wc.Stale())
		}
		wc.Release(ctx)
	})

	t.Run("its Commit is refused after the newcomer's checkpoint folded the WAL", func(t *testing.T) {
		_, wa, b, wb := displaced(t)
		// Enough finished operations for the checkpoint to compact, write
		// the snapshot and delete the WAL objects it holds.
		for i := range 4 {
			op := "op_n" + strconv.Itoa(i)
			if _, err := wb.Commit(ctx, storage.Commit{Records: []journal.Record{{Op: op, Kind: journal.KindOp, Type: "apply", Status: journal.OpRunning}, {Op: op, Kind: journal.KindOp, Type: "apply", Status: journal.OpSucceeded}}}); err != nil {
				t.Fatal(err)
			}
		}
		if err := wb.Checkpoint(ctx, 1); err != nil {
			t.Fatal(err)
		}
		if _, err := wa.Commit(ctx, storage.Commit{Change: storage.Change{Put: []*state.Resource{res("b")}}}); !errors.Is(err, storage.ErrLost) {
			t.Errorf("the displaced holder's Commit after the checkpoint: %v, want ErrLost", err)
		}
		if _, err := wb.Commit(ctx, storage.Commit{Change: storage.Change{Put: []*state.Resource{res("c")}}}); err != nil {
			t.Fatalf("the newcomer's Commit: %v", err)
		}
		st, err := b.Load(ctx)
		if err != nil || st.Resources["a"] == nil || st.Resources["b"] != nil || st.Resources["c"] == nil {
			t.Fatalf("state: %v %v", st, err)
		}
	})

	t.Run("its writes are refused", func(t *testing.T) {
		_, wa, b, wb := displaced(t)
		if err := wa.PutRevision(ctx, 1, storage.RevisionBody{Spec: "old again"}); !errors.Is(err, storage.ErrLost) {
			t.Errorf("the displaced holder's PutRevision: %v, want ErrLost", err)
		}
		if err := wa.DeleteRevision(ctx, 1); !errors.Is(err, storage.ErrLost) {
			t.Errorf("the displaced holder's DeleteRevision: %v, want ErrLost", err)
		}
		if _, err := wa.Commit(ctx, storage.Commit{Change: storage.Change{Put: []*state.Resource{res("b")}}}); !errors.Is(err, storage.ErrLost) {
			t.Errorf("the displaced holder's Commit: %v, want ErrLost", err)
		}
		if h, err := b.Holder(ctx); err != nil || h == nil || h.Op != "op_new" {
			t.Fatalf("the lock is held by %v (%v), want op_new", h, err)
		}
		if _, err := wb.Commit(ctx, storage.Commit{Change: storage.Change{Put: []*state.Resource{res("c")}}}); err != nil {
			t.Fatalf("the newcomer's Commit: %v", err)
		}
		if rb, err := b.Revision(ctx, 1); err != nil || rb.Spec != "new" {
			t.Fatalf("revision 1: %+v %v, want the newcomer's", rb, err)
		}
		st, err := b.Load(ctx)
		if err != nil || st.Resources["a"] == nil || st.Resources["b"] != nil || st.Resources["c"] == nil {
			t.Fatalf("state: %v %v", st, err)
		}
	})
}

// An object the state is read from, edited by hand (a protection level
// lowered in a WAL object or in the snapshot, a revision's or a backup's
// text changed), is refused on read with an error naming the backend, the
// stack and the object, and saying how to recover.
func TestHandEditRefused(t *testing.T) {
	s := setup(t)
	ctx := context.Background()
	tests := []struct {
		name, only, old, new string
		compact              bool // checkpoint first: the state is in the snapshot
		read                 func(b *Backend) error
	}{
		{name: "a protection level lowered in the WAL", only: walDir, old: `"durable"`, new: `"ephemeral"`,
			read: func(b *Backend) error { _, err := b.Load(ctx); return err }},
		{name: "a protection level lowered in the snapshot", only: snapshotKey, old: `"durable"`, new: `"ephemeral"`, compact: true,
			read: func(b *Backend) error { _, err := b.Load(ctx); return err }},
		{name: "the stack's lineage edited", only: identityKey, old: `"lineage":"`, new: `"lineage":"X`,
			read: func(b *Backend) error { _, err := b.Load(ctx); return err }},
		{name: "a revision's text edited", only: revisionDir, old: `"spec":"`, new: `"spec":"X`,
			read: func(b *Backend) error { _, err := b.Revision(ctx, 1); return err }},
		{name: "a backup's protection level lowered", only: backupDir, old: `"durable"`, new: `"ephemeral"`,
			read: func(b *Backend) error { _, err := b.Backup(ctx, "op_1"); return err }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			home := s.home(t, "")
			b := openHome(t, home, options())
			w, err := b.Lock(ctx, storage.Holder{Op: "op_1"})
			if err != nil {
				t.Fatal(err)
			}
			vault := res("vault")
			vault.Protection = protection.Durable
			if _, err := w.Commit(ctx, storage.Commit{Change: storage.Change{Put: []*state.Resource{vault, res("web")}}}); err != nil {
				t.Fatal(err)
			}
			if err := w.PutRevision(ctx, 1, storage.RevisionBody{Spec: "stack: web"}); err != nil {
				t.Fatal(err)
			}
			if _, err := w.PutBackup(ctx, "op_1", 5); err != nil {
				t.Fatal(err)
			}
			if tt.compact {
				for i := range 4 {
					op := "op_c" + strconv.Itoa(i)
					if _, err := w.Commit(ctx, storage.Commit{Records: []journal.Record{{Op: op, Kind: journal.KindOp, Status: journal.OpRunning}, {Op: op, Kind: journal.KindOp, Status: journal.OpSucceeded}}}); err != nil {
						t.Fatal(err)
					}
				}
				if err := w.Checkpoint(ctx, 1); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Release(ctx); err != nil {
				t.Fatal(err)
			}
			if err := tt.read(b); err != nil {
				t.Fatalf("before the edit: %v", err)
			}
			if n := tamper(t, home, "web", tt.only, tt.old, tt.new); n != 1 {
				t.Fatalf("%d object(s) edited, want 1", n)
			}
			err = tt.read(b)
			var ie *storage.IntegrityError
			if !errors.As(err, &ie) || !errors.Is(err, state.ErrCorrupt) {
				t.Fatalf("read after a hand edit: %v, want an IntegrityError", err)
			}
			msg := err.Error()
			t.Log(msg)
			for _, want := range []string{"load state " + b.Location(), "stack web", "object " + stackKey(t, home, "web", tt.only), "does not match its checksum", "restore the newest good copy from"} {
				if !strings.Contains(msg, want) {
					t.Errorf("the error %q does not say %q", msg, want)
				}
			}
			// And no writer starts over it.
			if tt.only != revisionDir && tt.only != backupDir {
				if w, err := b.Lock(ctx, storage.Holder{Op: "op_2"}); !errors.Is(err, storage.ErrIntegrity) {
					if err == nil {
						w.Release(ctx)
					}
					t.Errorf("Lock over an edited object: %v, want ErrIntegrity", err)
				}
			}
		})
	}
}

// A stack an older bulwark wrote (objects without checksums) loads as it
// is; its next Lock adds their checksums (the snapshot, revisions, backups
// and stack.json last), and from then on an object without one, or edited,
// is refused.
func TestOlderStackUpgrades(t *testing.T) {
	s := setup(t)
	ctx := context.Background()
	home := s.home(t, "")
	by := openHome(t, home, options())
	putRaw := func(name, body string, meta map[string]string) {
		t.Helper()
		if _, err := by.c.put(ctx, name, []byte(body), cond{}, meta); err != nil {
			t.Fatal(err)
		}
	}
	vault := `{"name":"vault","type":"network","provider":"mock","source":"mock","id":"id-vault","protection":"durable"}`
	putRaw(identityKey, `{"format":1,"stack":"web","lineage":"L1","created":"2026-01-01T00:00:00Z"}`, nil)
	putRaw(walKey(1), `{"format":1,"seq":1,"lineage":"L1","token":"old","entries":[{"records":[{"id":"R1","op":"op_old","ts":"2026-01-01T00:00:00Z","kind":"op","status":"succeeded","lineage":"L1"}],"put":[`+vault+`]}]}`, nil)
	putRaw(revisionKey(1), `{"body":{"spec":"stack: web"}}`, nil)
	putRaw(backupDir+"op_old", `{"format":1,"name":"op_old","time":"2026-01-01T00:00:00Z","state":{"version":1,"stack":"web","lineage":"L1","serial":0,"resources":{}}}`,
		map[string]string{"time": "2026-01-01T00:00:00Z", "serial": "0"})

	b := openHome(t, home, options())
	check := func(when string) {
		t.Helper()
		st, err := b.Load(ctx)
		if err != nil || st.Lineage != "L1" || st.Resources["vault"] == nil || st.Resources["vault"].Protection != protection.Durable {
			t.Fatalf("%s: Load %+v %v", when, st, err)
		}
		if recs, _, err := b.Journal(ctx); err != nil || len(recs) != 1 || recs[0].ID != "R1" {
			t.Fatalf("%s: Journal %+v %v", when, recs, err)
		}
		if rb, err := b.Revision(ctx, 1); err != nil || rb.Spec != "stack: web" {
			t.Fatalf("%s: Revision %+v %v", when, rb, err)
		}
		if _, err := b.Backup(ctx, "op_old"); err != nil {
			t.Fatalf("%s: Backup %v", when, err)
		}
		if list, err := b.Backups(ctx); err != nil || len(list) != 1 || list[0].Time.IsZero() {
			t.Fatalf("%s: Backups %+v %v", when, list, err)
		}
	}
	check("before the upgrade")
	w, err := b.Lock(ctx, storage.Holder{Op: "op_new"})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Release(ctx); err != nil {
		t.Fatal(err)
	}
	check("after the upgrade")
	for _, name := range []string{identityKey, snapshotKey, revisionKey(1), backupDir + "op_old"} {
		o, err := b.c.get(ctx, name)
		if err != nil || o == nil {
			t.Fatalf("%s: %v", name, err)
		}
		if _, err := storage.Disclose(o.body, storage.Where{}); err != nil {
			t.Errorf("%s after the upgrade: %v", name, err)
		}
	}
	// An object without a checksum is no longer taken.
	putRaw(revisionKey(1), `{"body":{"spec":"stack: web"}}`, nil)
	if _, err := b.Revision(ctx, 1); !errors.Is(err, storage.ErrIntegrity) {
		t.Fatalf("a revision without a checksum after the upgrade: %v, want ErrIntegrity", err)
	}
	if n := tamper(t, home, "web", snapshotKey, `"durable"`, `"ephemeral"`); n != 1 {
		t.Fatalf("%d snapshot(s) edited", n)
	}
	if _, err := b.Load(ctx); !errors.Is(err, storage.ErrIntegrity) {
		t.Fatalf("Load of an edited snapshot after the upgrade: %v, want ErrIntegrity", err)
	}
}
