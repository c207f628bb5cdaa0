package mockprovider

import (
	"context"
	"testing"

	"github.com/bulwark-iac/bulwark/sdk"
)

// A CreateMany is one change of the world, whatever it carries: one append
// to the log (so one fsync), where single Creates make one each.
func TestCreateManyOneAppend(t *testing.T) {
	for _, tc := range []struct {
		name  string
		batch bool
		want  int64
	}{
		{"single Creates", false, 3},
		{"one CreateMany", true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := New().(*provider)
			if _, err := p.Configure(context.Background(), &sdk.ConfigureRequest{DataDir: t.TempDir()}); err != nil {
				t.Fatal(err)
			}
			reqs := []*sdk.CreateRequest{
				{Type: "generic", Name: "a", IdempotencyKey: "k-a"},
				{Type: "generic", Name: "b", IdempotencyKey: "k-b"},
				{Type: "generic", Name: "c", IdempotencyKey: "k-c"},
			}
			before := p.store.written.Load()
			if tc.batch {
				resp, err := p.CreateMany(context.Background(), &sdk.CreateManyRequest{Creates: reqs})
				if err != nil || len(resp.Results) != 3 {
					t.Fatalf("CreateMany: %+v %v", resp, err)
				}
			} else {
				for _, r := range reqs {
					if _, err := p.Create(context.Background(), r); err != nil {
						t.Fatal(err)
					}
				}
			}
			if got := p.store.written.Load() - before; got != tc.want {
				t.Errorf("%d appends to the log, want %d", got, tc.want)
			}
			if p.store.synced.Load() < p.store.written.Load() {
				t.Error("an append is not durable when the call returns")
			}
		})
	}
}
