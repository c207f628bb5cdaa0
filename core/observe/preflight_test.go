package observe

import (
	"context"
	"testing"
	"time"

	"github.com/bulwark-iac/bulwark/core/providers"
	"github.com/bulwark-iac/bulwark/core/spec"
	"github.com/bulwark-iac/bulwark/core/state"
)

func TestSameRead(t *testing.T) {
	base := func() *providers.ReadRequest {
		return &providers.ReadRequest{Type: "file", Name: "a", ID: "id-1", IdempotencyKey: "k", Private: []byte("p"),
			Config: map[string]any{"path": "/x", "tags": []any{"a", "b"}}}
	}
	tests := []struct {
		name string
		edit func(r *providers.ReadRequest)
		same bool
	}{
		{"identical", func(*providers.ReadRequest) {}, true},
		{"equal config, another map", func(r *providers.ReadRequest) {
			r.Config = map[string]any{"tags": []any{"a", "b"}, "path": "/x"}
		}, true},
		{"another type", func(r *providers.ReadRequest) { r.Type = "dir" }, false},
		{"another name", func(r *providers.ReadRequest) { r.Name = "b" }, false},
		{"another id", func(r *providers.ReadRequest) { r.ID = "id-2" }, false},
		{"by identity instead of id", func(r *providers.ReadRequest) { r.ID = "" }, false},
		{"another key", func(r *providers.ReadRequest) { r.IdempotencyKey = "k2" }, false},
		{"another private", func(r *providers.ReadRequest) { r.Private = []byte("q") }, false},
		{"no private", func(r *providers.ReadRequest) { r.Private = nil }, false},
		{"another config value", func(r *providers.ReadRequest) { r.Config["path"] = "/y" }, false},
		{"a nested config change", func(r *providers.ReadRequest) { r.Config["tags"] = []any{"a"} }, false},
		{"a config key more", func(r *providers.ReadRequest) { r.Config["mode"] = "0600" }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := base()
			tt.edit(b)
			if got := sameRead(base(), b); got != tt.same {
				t.Errorf("sameRead = %v, want %v", got, tt.same)
			}
		})
	}
}

// counting reads by Read alone, counting its calls.
type counting struct {
	reads int
	clock *time.Time // when set, each Read takes readTakes on it
}

// readTakes is how long a Read takes on a counting provider's clock.
const readTakes = 100 * time.Millisecond

func (c *counting) Read(_ context.Context, req *providers.ReadRequest) (*providers.ReadResponse, error) {
	c.reads++
	if c.clock != nil {
		*c.clock = c.clock.Add(readTakes)
	}
	return &providers.ReadResponse{Exists: true, ID: req.ID}, nil
}

func (c *counting) Import(context.Context, *providers.ImportRequest) (*providers.ImportResponse, error) {
	return &providers.ImportResponse{}, nil
}

func (c *counting) ReadsMany() bool { return false }

func (c *counting) ReadMany(context.Context, []*providers.ReadRequest) ([]providers.ReadResult, error) {
	panic("not offered")
}

type quiet struct{}

func (quiet) ReadsStarted(int)   {}
func (quiet) ReadStarted(string) {}
func (quiet) ReadEnded(string)   {}
func (quiet) ReadsEnded()        {}

// TestCheckReadReuse: a step's Check uses what the pre-flight read saw only
// under the reuse rules (CheckRead), once, and never for a delete's Check.
func TestCheckReadReuse(t *testing.T) {
	r := &spec.Resource{Name: "a", Type: "file", Provider: "local", Config: map[string]any{"path": "/x"}}
	recorded := &state.Resource{Name: "a", Type: "file", Provider: "local", ID: "id-1", Config: map[string]any{"path": "/x"}}
	tests := []struct {
		name     string
		readOnly bool
		cur      *state.Resource // recorded when the pre-flight read, and at the Check
		changed  bool            // the spec's config changed between the two
		reuse    Reuse
		reads    int // Reads the Check makes
	}{
		{"by recorded id: reused", false, recorded, false, Reuse{}, 0},
		{"by identity, keys reported: reused", false, nil, false, Reuse{KeysReported: true}, 0},
		{"by identity, no keys: read again", false, nil, false, Reuse{}, 1},
		{"a saved plan: read again", false, recorded, false, Reuse{Saved: true}, 1},
		{"another request: read again", false, recorded, true, Reuse{}, 1},
		{"read-only session keeps nothing", true, recorded, false, Reuse{}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &counting{}
			rd := &Reader{Lookup: func(string) (Provider, bool) { return p, true }, Parallelism: 2, Progress: quiet{}, ReadOnly: tt.readOnly}
			ctx := context.Background()
			jobs := []Job{rd.JobFor(r, tt.cur)}
			got, err := rd.ReadAll(ctx, jobs)
			if err != nil {
				t.Fatal(err)
			}
			rd.Keep(jobs, got)
			at := r
			if tt.changed {
				c := *r
				c.Config = map[string]any{"path": "/y"}
				at = &c
			}
			p.reads = 0
			obs, err := rd.CheckRead(ctx, at, tt.cur, tt.reuse)
			if err != nil {
				t.Fatal(err)
			}
			if p.reads != tt.reads {
				t.Fatalf("the Check made %d Reads, want %d", p.reads, tt.reads)
			}
			if tt.reads == 0 && obs != got["a"] {
				t.Fatalf("reused %v, want the pre-flight's %v", obs, got["a"])
			}
			// Once only: a second Check reads.
			if _, err := rd.CheckRead(ctx, at, tt.cur, tt.reuse); err != nil {
				t.Fatal(err)
			}
			if p.reads != tt.reads+1 {
				t.Fatalf("a second Check made %d Reads in all, want %d", p.reads, tt.reads+1)
			}
		})
	}

	// A delete's Check uses the pre-flight read only while it ended less
	// long ago than it took (as fresh as a read of its own would be), once.
	for _, tt := range []struct {
		name  string
		after time.Duration // since the pre-flight read ended
		reads int           // Reads the Check makes
	}{
		{"a delete's Check reuses a read younger than its round trip", readTakes - time.Millisecond, 0},
		{"a delete's Check reads again once the read is older", readTakes, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
			p := &counting{clock: &now}
			rd := &Reader{Lookup: func(string) (Provider, bool) { return p, true }, Parallelism: 1, Progress: quiet{},
				Now: func() time.Time { return now }}
			ctx := context.Background()
			jobs := []Job{Recorded(recorded)}
			got, err := rd.ReadAll(ctx, jobs)
			if err != nil {
				t.Fatal(err)
			}
			rd.Keep(jobs, got)
			now = now.Add(tt.after)
			p.reads = 0
			if _, err := rd.CheckRecorded(ctx, recorded); err != nil {
				t.Fatal(err)
			}
			if p.reads != tt.reads {
				t.Fatalf("the Check made %d Reads, want %d", p.reads, tt.reads)
			}
			// Once only: what the pre-flight saw is forgotten.
			if _, ok := rd.take("a", jobs[0].req); ok {
				t.Fatal("the pre-flight read is still kept after the delete's Check")
			}
		})
	}
}

// TestReadAllFirstErrorInOrder: the error of the first job in order wins,
// whatever finished first; a provider not running is an error of its job.
func TestReadAllFirstErrorInOrder(t *testing.T) {
	p := &counting{}
	rd := &Reader{Lookup: func(name string) (Provider, bool) { return p, name == "local" }, Parallelism: 4, Progress: quiet{}}
	jobs := []Job{
		rd.JobFor(&spec.Resource{Name: "a", Type: "file", Provider: "local"}, nil),
		rd.JobFor(&spec.Resource{Name: "b", Type: "file", Provider: "gone"}, nil),
		rd.JobFor(&spec.Resource{Name: "c", Type: "file", Provider: "other"}, nil),
	}
	_, err := rd.ReadAll(context.Background(), jobs)
	want := `read b: b: provider "gone" is not running`
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v, want %s", err, want)
	}
}
