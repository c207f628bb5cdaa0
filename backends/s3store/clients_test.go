package s3store

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/bulwark-iac/bulwark/core/state"
	"github.com/bulwark-iac/bulwark/core/storage"
)

// Backends that Clients opens share one S3 client, and so its
// connections: ten stacks opened and read one after another dial the
// server once (against AWS, one TLS handshake), where Open dials it for
// each. A backend of the shared client reads what another client wrote
// since, and Clients lists the stacks Stacks lists.
func TestClientsShareOneClientAcrossOpens(t *testing.T) {
	setup(t) // the credentials and region in the environment
	var dials atomic.Int32
	srv := httptest.NewUnstartedServer(gofakes3.New(s3mem.New(), gofakes3.WithAutoBucket(false)).Server())
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			dials.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	ctx := context.Background()
	if _, err := raw(srv.URL).CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(testBucket)}); err != nil {
		t.Fatal(err)
	}
	home := "s3://" + testBucket + "/t-" + randomHex(t) + "?" + url.Values{"region": {"us-east-1"}, "endpoint": {srv.URL}}.Encode()
	readTen := func(open func(string) (*Backend, error)) int32 {
		t.Helper()
		before := dials.Load()
		for i := range 10 {
			b, err := open(fmt.Sprintf("s%d", i))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := b.Load(ctx); err != nil {
				t.Fatal(err)
			}
			b.Close()
		}
		return dials.Load() - before
	}
	own := readTen(func(stack string) (*Backend, error) { return Open(ctx, home, storage.Options{Stack: stack}) })
	clients := NewClients()
	shared := readTen(func(stack string) (*Backend, error) { return clients.Open(ctx, home, storage.Options{Stack: stack}) })
	if own < 10 || shared != 1 {
		t.Errorf("ten opens and reads dialed the server %d times each with its own client (want at least 10) and %d times through Clients (want 1)", own, shared)
	}

	reader, err := clients.Open(ctx, home, storage.Options{Stack: "s0"})
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	writer := openHome(t, home, storage.Options{Stack: "s0"}) // a client of its own, as another process's
	defer writer.Close()
	w, err := writer.Lock(ctx, storage.Holder{Op: "op_other"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Commit(ctx, storage.Commit{Change: storage.Change{Put: []*state.Resource{res("late")}}}); err != nil {
		t.Fatal(err)
	}
	if err := w.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if st, err := reader.Load(ctx); err != nil || st.Resources["late"] == nil {
		t.Fatalf("the shared client's reader does not see another's commit: %v, %v", st, err)
	}
	want, err := Stacks(ctx, home)
	if err != nil {
		t.Fatal(err)
	}
	got, err := clients.Stacks(ctx, home)
	if err != nil || !slices.Equal(got, want) || !slices.Contains(got, "s0") {
		t.Errorf("Clients.Stacks: %v, %v; Stacks: %v", got, err, want)
	}
}
