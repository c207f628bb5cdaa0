package pluginhost

import (
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bulwark-iac/bulwark/core/providers"
)

// Creates made while one is in flight go together in one CreateMany when
// the plugin offers it, each with its own key, result and error; without
// it each goes at once as a Create of its own, whatever is in flight. A
// lone Create goes as a Create either way.
func TestCreateJoin(t *testing.T) {
	for _, tc := range []struct {
		mode        string
		wantMany    bool
		wantBatches []any // the CreateManys the plugin saw, by size
	}{
		{mode: "", wantMany: false, wantBatches: nil},
		{mode: "batch", wantMany: true, wantBatches: []any{3.0}},
	} {
		t.Run("mode="+tc.mode, func(t *testing.T) {
			p, ctx := startTestPlugin(t, tc.mode)
			// The Creates queued below wait for the one in flight however
			// long it takes.
			p.creates.patience = time.Hour
			if p.CreatesMany() != tc.wantMany {
				t.Fatalf("CreatesMany %v, want %v", p.CreatesMany(), tc.wantMany)
			}
			lone, err := p.Create(ctx, &providers.CreateRequest{Type: "thing", Name: "lone", IdempotencyKey: "k-lone"})
			if err != nil || lone.ID == "" {
				t.Fatalf("a lone Create: %+v %v", lone, err)
			}

			// One Create in flight (it hangs until cancelled) while three
			// more are asked for.
			hangCtx, cancelHang := context.WithCancel(ctx)
			defer cancelHang()
			hung := make(chan error, 1)
			go func() {
				_, err := p.Create(hangCtx, &providers.CreateRequest{Type: "thing", Name: "hang", IdempotencyKey: "k-hang"})
				hung <- err
			}()
			if tc.wantMany {
				deadline := time.Now().Add(30 * time.Second)
				for {
					p.creates.mu.Lock()
					flying := p.creates.flying
					p.creates.mu.Unlock()
					if flying > 0 {
						break
					}
					if time.Now().After(deadline) {
						t.Fatal("the hanging Create never went")
					}
					time.Sleep(time.Millisecond) // poll interval
				}
			}
			names := []string{"a", "multiline", "c"}
			type result struct {
				resp *providers.CreateResponse
				err  error
			}
			results := make([]result, len(names))
			var wg sync.WaitGroup
			for i, name := range names {
				wg.Add(1)
				go func() {
					defer wg.Done()
					resp, err := p.Create(ctx, &providers.CreateRequest{Type: "thing", Name: name, IdempotencyKey: "k-" + name, Config: providers.Attributes{"size": float64(i)}})
					results[i] = result{resp, err}
				}()
				if tc.wantMany {
					waitQueued(t, &p.creates, i+1)
				}
			}
			if !tc.wantMany {
				// Not offered: none of them waits for the one in flight.
				wg.Wait()
			}
			cancelHang()
			if err := <-hung; !errors.Is(err, context.Canceled) {
				t.Errorf("the cancelled Create: %v, want context.Canceled", err)
			}
			wg.Wait()
			for i, name := range names {
				r := results[i]
				if name == "multiline" {
					if r.err == nil || !strings.Contains(r.err.Error(), "create failed: boom") {
						t.Errorf("%s: %+v %v, want its own failure", name, r.resp, r.err)
					}
					continue
				}
				if r.err != nil || r.resp == nil || !strings.HasPrefix(r.resp.ID, name+"-") || r.resp.Attributes["size"] != float64(i) {
					t.Errorf("%s: %+v %v, not its own answer", name, r.resp, r.err)
				}
			}
			rr, err := p.Read(ctx, &providers.ReadRequest{Type: "thing", Name: "a", ID: results[0].resp.ID})
			if err != nil {
				t.Fatal(err)
			}
			if got, _ := rr.Attributes["batches"].([]any); !reflect.DeepEqual(got, tc.wantBatches) {
				t.Errorf("the plugin saw CreateManys of %v, want %v", got, tc.wantBatches)
			}

			// CreateMany itself (what the join sends): a key used again
			// finds what it made, a new one makes a resource.
			res, err := p.CreateMany(ctx, []*providers.CreateRequest{
				{Type: "thing", Name: "a", IdempotencyKey: "k-a"},
				{Type: "thing", Name: "d", IdempotencyKey: "k-d"},
			})
			if err != nil || len(res) != 2 || res[0].Err != nil || res[0].Response.ID != results[0].resp.ID || res[1].Err != nil || !strings.HasPrefix(res[1].Response.ID, "d-") {
				t.Errorf("CreateMany of a again and d: %+v %v", res, err)
			}
		})
	}
}

// A plugin that dies in the middle of a CreateMany leaves every Create of
// it as a plugin that died in the middle of a Create: an error wrapping
// ErrPluginExited (what each made, the host finds by its key), and the
// next call starts a fresh process.
func TestCreateManyPluginDies(t *testing.T) {
	p, ctx := startBatching(t)
	pid := p.PID()
	res, err := p.CreateMany(ctx, []*providers.CreateRequest{
		{Type: "thing", Name: "a", IdempotencyKey: "k-a"},
		{Type: "thing", Name: "crash", IdempotencyKey: "k-crash"},
		{Type: "thing", Name: "b", IdempotencyKey: "k-b"},
	})
	if !errors.Is(err, ErrPluginExited) || res != nil {
		t.Fatalf("CreateMany through a crash: %+v %v, want an error wrapping ErrPluginExited", res, err)
	}
	c, err := p.Create(ctx, &providers.CreateRequest{Type: "thing", Name: "b", IdempotencyKey: "k-b"})
	if err != nil || c.ID == "" {
		t.Fatalf("a Create after the crash: %+v %v", c, err)
	}
	if p.PID() == pid {
		t.Errorf("still pid %d after the crash", pid)
	}
}

// A CreateMany too large for one message (the plugin's gRPC server refuses
// what passes its 4 MiB limit, before its provider sees any of it) is sent
// again in halves, each small enough: every Create is made once, under its
// own key, and answered in order.
func TestCreateManyTooLargeGoesInHalves(t *testing.T) {
	p, ctx := startBatching(t)
	big := strings.Repeat("z", bigSize)
	names := []string{"a", "b", "c", "d"}
	var reqs []*providers.CreateRequest
	for _, n := range names {
		reqs = append(reqs, &providers.CreateRequest{Type: "thing", Name: n, IdempotencyKey: "k-" + n, Config: providers.Attributes{"zone": big}})
	}
	res, err := p.CreateMany(ctx, reqs)
	answered(t, "CreateMany", len(res), err, len(reqs))
	seen := map[string]bool{}
	for i, r := range res {
		if r.Err != nil || r.Response == nil || r.Response.ID == "" {
			t.Fatalf("result %d: %+v %v", i, r.Response, r.Err)
		}
		if !strings.HasPrefix(r.Response.ID, names[i]+"-") || seen[r.Response.ID] {
			t.Errorf("result %d has id %q: want %s's own, once", i, r.Response.ID, names[i])
		}
		seen[r.Response.ID] = true
	}
	// The plugin saw two CreateManys of two: the call of four never reached
	// its provider.
	got, err := p.Read(ctx, &providers.ReadRequest{Type: "thing", Name: "a", IdempotencyKey: "k-a"})
	if err != nil || !got.Exists {
		t.Fatalf("read a: %+v %v", got, err)
	}
	if b := got.Attributes["batches"]; !reflect.DeepEqual(b, []any{2.0, 2.0}) {
		t.Errorf("the plugin's CreateManys by size: %v, want [2 2]", b)
	}
}

// bigSize is 1.5 MiB: a message carrying four values of it passes gRPC's
// 4 MiB limit, one carrying two does not.
const bigSize = 3 << 19

// startBatching starts the test plugin offering CreateMany, ReadMany and
// ValidateMany.
func startBatching(t *testing.T) (*Plugin, context.Context) {
	t.Helper()
	return startTestPlugin(t, "batch")
}

// startTestPlugin starts the test plugin serving as TESTPLUGIN_MODE mode
// says.
func startTestPlugin(t *testing.T, mode string) (*Plugin, context.Context) {
	t.Helper()
	dir := testPlugin(t)
	t.Setenv("TESTPLUGIN_MODE", mode)
	h := New(Options{Dirs: []string{dir}, StartTimeout: 30 * time.Second})
	t.Cleanup(h.Close)
	ctx := context.Background()
	p, err := h.Start(ctx, Config{Name: "t", Source: "test", DataDir: filepath.Join(t.TempDir(), "d")})
	if err != nil {
		t.Fatal(err)
	}
	return p, ctx
}

// answered checks that a batch call of 6 MiB gave one result for each of
// its n requests.
func answered(t *testing.T, call string, results int, err error, n int) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s of 6 MiB: %v", call, err)
	}
	if results != n {
		t.Fatalf("%s: %d results for %d requests", call, results, n)
	}
}

// sizes is what the plugin recorded under attr (the size of each batch
// call of one kind), as a single Read reports it.
func sizes(t *testing.T, ctx context.Context, p *Plugin, attr string) any {
	t.Helper()
	got, err := p.Read(ctx, &providers.ReadRequest{Type: "thing", Name: "probe"})
	if err != nil {
		t.Fatalf("read the plugin's counts: %v", err)
	}
	return got.Attributes[attr]
}

// A ReadMany too large for one message (its reads carry their configs;
// the plugin's gRPC server refuses what passes 4 MiB before its provider
// sees any of it) is sent again in halves: every read answered, in order,
// with its own resource.
func TestReadManyTooLargeGoesInHalves(t *testing.T) {
	p, ctx := startBatching(t)
	big := strings.Repeat("z", bigSize)
	names := []string{"a", "b", "c", "d"}
	var reqs []*providers.ReadRequest
	for _, n := range names {
		cfg := providers.Attributes{"zone": big + n}
		// One at a time: a Create of 1.5 MiB fits one message.
		resp, err := p.Create(ctx, &providers.CreateRequest{Type: "thing", Name: n, IdempotencyKey: "k-" + n, Config: cfg})
		if err != nil {
			t.Fatalf("create %s: %v", n, err)
		}
		reqs = append(reqs, &providers.ReadRequest{Type: "thing", Name: n, ID: resp.ID, Config: cfg})
	}
	res, err := p.ReadMany(ctx, reqs)
	answered(t, "ReadMany", len(res), err, len(reqs))
	for i, r := range res {
		if r.Err != nil || r.Response == nil || !r.Response.Exists {
			t.Fatalf("result %d: %+v %v", i, r.Response, r.Err)
		}
		if r.Response.ID != reqs[i].ID || r.Response.Attributes["zone"] != big+names[i] {
			t.Errorf("result %d is %q: want %s's own, in order", i, r.Response.ID, names[i])
		}
	}
	// The call of four never reached the provider.
	if b := sizes(t, ctx, p, "reads"); !reflect.DeepEqual(b, []any{2.0, 2.0}) {
		t.Errorf("the plugin's ReadManys by size: %v, want [2 2]", b)
	}
}

// A ValidateMany too large for one message (the plugin's gRPC server
// refuses it before its provider sees it) is sent again in halves, and
// each validation's diagnostics come back in order.
func TestValidateManyTooLargeGoesInHalves(t *testing.T) {
	p, ctx := startBatching(t)
	big := strings.Repeat("z", bigSize)
	sizesOf := []float64{1, -1, 2, -2} // the negative ones fail validation
	var reqs []*providers.ValidateResourceRequest
	for _, n := range sizesOf {
		reqs = append(reqs, &providers.ValidateResourceRequest{Type: "thing", Config: providers.Attributes{"zone": big, "size": n}})
	}
	res, err := p.ValidateMany(ctx, reqs)
	answered(t, "ValidateMany", len(res), err, len(reqs))
	for i, r := range res {
		if r.Err != nil {
			t.Fatalf("result %d: %v", i, r.Err)
		}
		if failed := r.Diagnostics.HasError(); failed != (sizesOf[i] < 0) {
			t.Errorf("result %d (size %v): diagnostics %v", i, sizesOf[i], r.Diagnostics)
		}
	}
	if b := sizes(t, ctx, p, "checks"); !reflect.DeepEqual(b, []any{2.0, 2.0}) {
		t.Errorf("the plugin's ValidateManys by size: %v, want [2 2]", b)
	}
}
