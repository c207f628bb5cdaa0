package mockprovider_test

import (
	"context"
	"testing"

	"github.com/bulwark-iac/bulwark/sdk"
)

// rate_limit answers the Creates, Updates and Deletes past the quota
// throttled, with a wait, and they change nothing; Reads and validations
// are not limited.
func TestRateLimit(t *testing.T) {
	ctx := context.Background()
	// 0.001 a second: a burst of one, and the next token in 1000 s, so the
	// test's own pace never refills it.
	p := configured(t, t.TempDir(), sdk.Attributes{"rate_limit": 0.001})
	made := create(t, p, "network", "net", "k1", sdk.Attributes{"size": 1})

	throttled := func(what string, err error) {
		t.Helper()
		d, ok := sdk.IsThrottled(err)
		if !ok || d.RetryAfter <= 0 {
			t.Fatalf("%s past the quota: %v, want a throttle with a wait", what, err)
		}
	}
	_, err := p.Create(ctx, &sdk.CreateRequest{Type: "network", Name: "other", IdempotencyKey: "k2"})
	throttled("Create", err)
	_, err = p.Update(ctx, &sdk.UpdateRequest{Type: "network", Name: "net", ID: made.ID, Config: sdk.Attributes{"size": 2}})
	throttled("Update", err)
	_, err = p.Delete(ctx, &sdk.DeleteRequest{Type: "network", Name: "net", ID: made.ID})
	throttled("Delete", err)
	resp, err := p.(sdk.BatchCreator).CreateMany(ctx, &sdk.CreateManyRequest{Creates: []*sdk.CreateRequest{
		{Type: "network", Name: "a", IdempotencyKey: "ka"}, {Type: "network", Name: "b", IdempotencyKey: "kb"}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range resp.Results {
		throttled("a Create of a CreateMany", r.Diagnostics.Err())
	}

	// Nothing changed: the one resource, as made; reads and validations go.
	for _, key := range []string{"k2", "ka", "kb"} {
		r, err := p.Read(ctx, &sdk.ReadRequest{Type: "network", Name: "x", IdempotencyKey: key})
		if err != nil || r.Exists {
			t.Fatalf("Read by %s after a throttled Create: %+v %v", key, r, err)
		}
	}
	r, err := p.Read(ctx, &sdk.ReadRequest{Type: "network", Name: "net", ID: made.ID})
	if err != nil || !r.Exists || r.Attributes["size"] != 1.0 {
		t.Fatalf("Read of net after a throttled Update and Delete: %+v %v", r, err)
	}
	v, err := p.ValidateResource(ctx, &sdk.ValidateResourceRequest{Type: "network", Name: "net"})
	if err != nil || v.Diagnostics.HasError() {
		t.Fatalf("ValidateResource: %+v %v", v, err)
	}
}

// Within a CreateMany, the Creates the quota has tokens for are made, in
// the request's order; the others are answered throttled.
func TestRateLimitCreateMany(t *testing.T) {
	p := configured(t, t.TempDir(), sdk.Attributes{"rate_limit": 2})
	var reqs []*sdk.CreateRequest
	for _, n := range []string{"a", "b", "c"} {
		reqs = append(reqs, &sdk.CreateRequest{Type: "network", Name: n, IdempotencyKey: "k" + n})
	}
	got := createMany(t, p, reqs)
	if got[0].ID == "" || got[1].ID == "" {
		t.Fatalf("the first two: %+v %+v, want made", got[0], got[1])
	}
	if d, ok := got[2].Diagnostics.Throttle(); !ok || got[2].ID != "" {
		t.Fatalf("the third: %+v, want throttled", got[2])
	} else if d.RetryAfter <= 0 {
		t.Fatalf("the third's wait: %v", d.RetryAfter)
	}
}
