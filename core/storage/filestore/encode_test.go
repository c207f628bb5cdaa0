package filestore_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"github.com/bulwark-iac/bulwark/core/protection"
	"os"
	"path/filepath"
	"testing"

	"github.com/bulwark-iac/bulwark/core/journal"
	"github.com/bulwark-iac/bulwark/core/state"
	"github.com/bulwark-iac/bulwark/core/storage"
	"github.com/bulwark-iac/bulwark/core/storage/filestore"
)

// TestCommitLinesAreJSONMarshal holds what a commit writes (its change
// encoded without reflection and spliced into its last record) to the
// bytes json.Marshal writes for the same records and change, for every
// shape of change.
func TestCommitLinesAreJSONMarshal(t *testing.T) {
	ctx := context.Background()
	res := func(name string) *state.Resource {
		return &state.Resource{
			Name: name, Type: "t<&>", Provider: "p", Source: "p", ID: "id-" + name, Protection: protection.Ephemeral,
			DependsOn:  []string{"x"},
			Config:     map[string]any{"n": 1.5, "m": map[string]any{"b": []any{"\u2028", nil, true}, "a": 1e21}},
			Attributes: map[string]any{"arn": "a:b", "password": "hunter2", "when": "2026-12-01T00:00:00Z"},
			Sensitive:  []string{"password"},
			CreatedBy:  "op_1", IdempotencyKey: "k",
			Private: state.PrivateOf([]byte("priv")),
		}
	}
	changes := []struct {
		name string
		ch   storage.Change
	}{
		{"one put", storage.Change{Put: []*state.Resource{res("a")}}},
		{"puts and deletes", storage.Change{Put: []*state.Resource{res("b"), res("c<")}, Delete: []string{"a", "d&"}}},
		{"a delete", storage.Change{Delete: []string{"b"}}},
		{"metadata", storage.Change{Put: []*state.Resource{res("e")}, Meta: &storage.Meta{Current: 1}}},
		{"an update's prior", storage.Change{Put: []*state.Resource{func() *state.Resource {
			r := res("f")
			r.Prior = &state.Prior{Op: "op_0", Config: map[string]any{"n": 1.0}, Protection: protection.Durable}
			return r
		}()}}},
	}
	dir := filepath.Join(t.TempDir(), "s")
	b := filestore.New(dir, storage.Options{Stack: "s", Sealing: sealing})
	w, err := b.Lock(ctx, storage.Holder{Op: "op_1", PID: os.Getpid()})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range changes {
		recs := []journal.Record{
			{Op: "op_1", Kind: journal.KindStep, Step: c.name, Status: journal.StepStarted},
			{Op: "op_1", Kind: journal.KindStep, Step: c.name, Status: journal.StepOK},
		}
		if _, err := w.Commit(ctx, storage.Commit{Records: recs, Change: c.ch}); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
	}
	if err := w.Release(ctx); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(dir, journal.FileName))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	changed := 0
	for sc.Scan() {
		line := sc.Bytes()
		var r journal.Record
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		if len(r.Change) > 0 {
			changed++
			// The change as json.Marshal writes what it holds, with its
			// checksum.
			rec, err := storage.Disclose(r.Change, storage.Where{})
			if err != nil {
				t.Fatal(err)
			}
			var ch storage.Change
			if err := json.Unmarshal(rec, &ch); err != nil {
				t.Fatal(err)
			}
			if want, _ := json.Marshal(ch); !bytes.Equal(rec, want) {
				t.Errorf("change:\n got %s\nwant %s", rec, want)
			}
		}
		want, err := json.Marshal(r) // the change compacted and escaped again
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(line, want) {
			t.Errorf("line:\n got %s\nwant %s", line, want)
		}
	}
	if changed != len(changes) {
		t.Errorf("%d lines carry a change, want %d", changed, len(changes))
	}
}
