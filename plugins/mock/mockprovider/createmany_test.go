package mockprovider_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bulwark-iac/bulwark/plugins/mock/mockprovider"
	"github.com/bulwark-iac/bulwark/sdk"
)

// createMany calls p's CreateMany, failing on an error of the whole call.
func createMany(t *testing.T, p sdk.Provider, reqs []*sdk.CreateRequest) []*sdk.CreateResponse {
	t.Helper()
	resp, err := p.(sdk.BatchCreator).CreateMany(context.Background(), &sdk.CreateManyRequest{Creates: reqs})
	if err != nil {
		t.Fatalf("CreateMany: %v", err)
	}
	if resp.Diagnostics.HasError() || len(resp.Results) != len(reqs) {
		t.Fatalf("CreateMany: %+v, want one result per Create", resp)
	}
	return resp.Results
}

// CreateMany answers each Create as a single Create made in the request's
// order would: with fail_create applied to its own Creates, a key used
// before finding what it made, a taken name a conflict; one failing never
// fails another.
func TestCreateManyAsSingleCreates(t *testing.T) {
	cfg := sdk.Attributes{"fail_create": []any{"compute"}}
	reqs := []*sdk.CreateRequest{
		{Type: "generic", Name: "a", IdempotencyKey: "k-a", Config: sdk.Attributes{"tags": map[string]any{"n": "1"}}},
		{Type: "generic", Name: "taken", IdempotencyKey: "k-taken"},
		{Type: "generic", Name: "taken", IdempotencyKey: "k-other"},
		{Type: "compute", Name: "compute", IdempotencyKey: "k-compute"},
		{Type: "generic", Name: "b", IdempotencyKey: "k-b"},
		{Type: "generic", Name: "c", IdempotencyKey: "k-c", Config: sdk.Attributes{"tags": map[string]any{"n": true}}},
		{Type: "no_such_type", Name: "d", IdempotencyKey: "k-d"},
		{Type: "generic", Name: "b", IdempotencyKey: "k-b2"},
	}
	// What each gets: "" made (or found by its key), else its own error.
	want := []string{"", "", "already exists", "injected failure: create compute", "", "tags", "unknown resource type", "already exists"}

	// The same world twice: one where every Create is single, one where
	// they all go in one CreateMany; "taken" exists in both beforehand.
	single := configured(t, t.TempDir(), cfg)
	batch := configured(t, t.TempDir(), cfg)
	takenSingle := create(t, single, "generic", "taken", "k-taken", nil)
	takenBatch := create(t, batch, "generic", "taken", "k-taken", nil)

	got := createMany(t, batch, reqs)
	for i, req := range reqs {
		one, err := single.Create(context.Background(), req)
		if err != nil {
			one = &sdk.CreateResponse{Diagnostics: sdk.DiagnosticsFromError(err)}
		}
		many := got[i]
		if want[i] != "" {
			for what, ds := range map[string]sdk.Diagnostics{"CreateMany": many.Diagnostics, "Create": one.Diagnostics} {
				if !ds.HasError() || !strings.Contains(ds.Error(), want[i]) {
					t.Errorf("%s of %s (key %s): %+v, want its own error %q", what, req.Name, req.IdempotencyKey, ds, want[i])
				}
			}
			if sdk.IsConflict(many.Diagnostics.Err()) != sdk.IsConflict(one.Diagnostics.Err()) {
				t.Errorf("%s (key %s): a conflict in one and not in the other: %v / %v", req.Name, req.IdempotencyKey, many.Diagnostics, one.Diagnostics)
			}
			continue
		}
		if many.Diagnostics.HasError() || many.ID == "" {
			t.Errorf("CreateMany of %s (key %s): %+v, want it made", req.Name, req.IdempotencyKey, many)
			continue
		}
		if a, b := withoutCreatedAt(many.Attributes), withoutCreatedAt(one.Attributes); !reflect.DeepEqual(a, b) {
			t.Errorf("%s: CreateMany answered %v, Create %v", req.Name, a, b)
		}
		rr := read(t, batch, &sdk.ReadRequest{Type: req.Type, Name: req.Name, IdempotencyKey: req.IdempotencyKey})
		if !rr.Exists || rr.ID != many.ID || rr.IdempotencyKey != req.IdempotencyKey {
			t.Errorf("Read by the key of %s: %+v, want %s", req.Name, rr, many.ID)
		}
	}
	if got[1].ID != takenBatch.ID || takenSingle.ID == "" {
		t.Errorf("the key used before found %s, want what it made, %s", got[1].ID, takenBatch.ID)
	}
	for _, name := range []string{"compute", "c"} {
		for _, p := range []sdk.Provider{single, batch} {
			if rr := read(t, p, &sdk.ReadRequest{Type: "generic", Name: name}); rr.Exists {
				t.Errorf("a failed Create of %s made %+v", name, rr)
			}
		}
	}
}

func withoutCreatedAt(a sdk.Attributes) sdk.Attributes {
	out := sdk.Attributes{}
	for k, v := range a {
		if k != "created_at" && k != "arn" {
			out[k] = v
		}
	}
	return out
}

// crash_create in a CreateMany exits once what the Create it names made is
// durable, with what the Creates before it made; the ones after it never
// start. The next run finds each by its key, and a retry makes no second
// resource and crashes no more.
func TestCreateManyCrash(t *testing.T) {
	dir := t.TempDir()
	cfg := sdk.Attributes{"crash_create": []any{"compute"}}
	var mu sync.Mutex
	var codes []int
	exit := func(code int) {
		mu.Lock()
		defer mu.Unlock()
		codes = append(codes, code)
	}
	reqs := []*sdk.CreateRequest{
		{Type: "generic", Name: "a", IdempotencyKey: "op_1:a"},
		{Type: "compute", Name: "compute", IdempotencyKey: "op_1:compute", Config: sdk.Attributes{"size": 2}},
		{Type: "generic", Name: "b", IdempotencyKey: "op_1:b"},
	}
	p := configured(t, dir, cfg, mockprovider.WithExit(exit))
	if resp, err := p.(sdk.BatchCreator).CreateMany(context.Background(), &sdk.CreateManyRequest{Creates: reqs}); err == nil {
		t.Fatalf("CreateMany returned normally after the crash hook: %+v", resp)
	}
	if !reflect.DeepEqual(codes, []int{mockprovider.CrashExitCode}) {
		t.Fatalf("exit hook calls = %v, want [3]", codes)
	}
	p2 := configured(t, dir, cfg, mockprovider.WithExit(exit))
	ids := map[string]string{}
	for _, req := range reqs {
		rr := read(t, p2, &sdk.ReadRequest{Type: req.Type, Name: req.Name, IdempotencyKey: req.IdempotencyKey})
		if rr.Exists != (req.Name != "b") {
			t.Errorf("after the crash, Read by the key of %s: %+v", req.Name, rr)
		}
		ids[req.Name] = rr.ID
	}
	got := createMany(t, p2, reqs)
	for i, req := range reqs {
		if got[i].Diagnostics.HasError() || (req.Name != "b" && got[i].ID != ids[req.Name]) {
			t.Errorf("the retry of %s: %+v, want %q", req.Name, got[i], ids[req.Name])
		}
	}
	if len(codes) != 1 {
		t.Errorf("the retry crashed again: exit calls %v", codes)
	}
}

// latency_ms is slept once for the batch, as each Create would sleep it
// alone, and a ctx that ends during it makes nothing.
func TestCreateManyLatency(t *testing.T) {
	reqs := []*sdk.CreateRequest{{Type: "generic", Name: "a", IdempotencyKey: "k-a"}, {Type: "generic", Name: "b", IdempotencyKey: "k-b"}}
	t.Run("sleeps", func(t *testing.T) {
		p := configured(t, t.TempDir(), sdk.Attributes{"latency_ms": 30})
		start := time.Now()
		createMany(t, p, reqs)
		if d := time.Since(start); d < 30*time.Millisecond {
			t.Fatalf("CreateMany took %v, want >= 30ms", d)
		}
	})
	t.Run("honours ctx", func(t *testing.T) {
		dir := t.TempDir()
		p := configured(t, dir, sdk.Attributes{"latency_ms": 60_000})
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		_, err := p.(sdk.BatchCreator).CreateMany(ctx, &sdk.CreateManyRequest{Creates: reqs})
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("CreateMany: %v, want deadline exceeded", err)
		}
		for _, req := range reqs {
			if rr := read(t, configured(t, dir, nil), &sdk.ReadRequest{Type: req.Type, Name: req.Name}); rr.Exists {
				t.Fatalf("a cancelled CreateMany made %s", req.Name)
			}
		}
	})
}
