package tfplugin

import (
	"context"
	"os"
	"os/exec"
	"testing"

	"github.com/bulwark-iac/bulwark/core/providers"
)

// BenchmarkAdapter is the host's side of the adapter's calls a 1,000-item
// apply and no-op make per resource, over gRPC against the tests'
// provider: a create (plan, apply, the plan from what it applied), a no-op
// read toward the same config (one ReadResource, the plan remembered in
// the envelope), and an update after its Check's read. Its allocations
// per call do not move with the machine's load; its times do.
func BenchmarkAdapter(b *testing.B) {
	cmd := exec.Command(testProviderB(b))
	cmd.Env = append(os.Environ(), "TFTEST_PROTOCOL=6")
	ctx := context.Background()
	p, err := Start(ctx, StartOptions{Cmd: cmd})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	a := NewAdapter(p, "tftest", "0.0.0")
	if _, err := a.Configure(ctx, &providers.ConfigureRequest{Config: providers.Attributes{"prefix": "p-"}}); err != nil {
		b.Fatal(err)
	}
	cfg := providers.Attributes{"name": "a", "size": 3, "tags": map[string]any{"k": "v"}}
	create := func(b *testing.B) *providers.CreateResponse {
		made, err := a.Create(ctx, &providers.CreateRequest{Type: "tftest_thing", Name: "a", Config: cfg})
		if err != nil || made.Diagnostics.HasError() {
			b.Fatal(err, made.Diagnostics)
		}
		return made
	}
	b.Run("create", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			create(b)
		}
	})
	b.Run("noop-read", func(b *testing.B) {
		made := create(b)
		b.ReportAllocs()
		for b.Loop() {
			rr, err := a.Read(ctx, &providers.ReadRequest{Type: "tftest_thing", Name: "a", ID: made.ID, Config: cfg, Private: made.Private})
			if err != nil || rr.Diagnostics.HasError() || rr.Planned == nil || len(rr.Planned.Changes) != 0 {
				b.Fatal(err, rr)
			}
		}
	})
	b.Run("check-and-update", func(b *testing.B) {
		made := create(b)
		sizes := []providers.Attributes{
			{"name": "a", "size": 4, "tags": map[string]any{"k": "v"}},
			{"name": "a", "size": 3, "tags": map[string]any{"k": "v"}},
		}
		private := made.Private
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			to := sizes[i%2]
			i++
			rr, err := a.Read(ctx, &providers.ReadRequest{Type: "tftest_thing", Name: "a", ID: made.ID, Config: to, Private: private})
			if err != nil || rr.Diagnostics.HasError() {
				b.Fatal(err, rr)
			}
			up, err := a.Update(ctx, &providers.UpdateRequest{Type: "tftest_thing", Name: "a", ID: made.ID, Config: to, Private: rr.Private})
			if err != nil || up.Diagnostics.HasError() {
				b.Fatal(err, up)
			}
			private = up.Private
		}
	})
}
