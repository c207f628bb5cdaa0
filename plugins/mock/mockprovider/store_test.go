package mockprovider_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/bulwark-iac/bulwark/plugins/mock/mockprovider"
	"github.com/bulwark-iac/bulwark/sdk"
)

// The world file and its log as a crash (kill -9) or an interrupted
// compaction leaves them: the next instance reads the same world, and its
// own changes are never lost behind a torn line.
func TestWorldLogAfterCrashes(t *testing.T) {
	cases := []struct {
		name string
		// leave changes the files the first instance left, with its
		// log's content before its Close as logged.
		leave func(t *testing.T, dir string, logged []byte)
	}{
		{"killed before Close: the log alone", func(t *testing.T, dir string, logged []byte) {
			os.Remove(filepath.Join(dir, mockprovider.WorldFile))
			write(t, filepath.Join(dir, mockprovider.LogFile), logged)
		}},
		{"killed mid-append: a torn last line", func(t *testing.T, dir string, logged []byte) {
			os.Remove(filepath.Join(dir, mockprovider.WorldFile))
			write(t, filepath.Join(dir, mockprovider.LogFile), append(bytes.Clone(logged), `{"put":{"id":"half`...))
		}},
		{"killed between a compaction's rewrite and its removal of the log", func(t *testing.T, dir string, logged []byte) {
			write(t, filepath.Join(dir, mockprovider.LogFile), logged)
		}},
		{"closed", func(*testing.T, string, []byte) {}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			p := configured(t, dir, sdk.Attributes{"fail_delete": map[string]any{"b": 1}})
			a := create(t, p, "network", "a", "ka", sdk.Attributes{"size": 1})
			b := create(t, p, "network", "b", "kb", nil)
			gone := create(t, p, "network", "gone", "kg", nil)
			if _, err := p.Delete(t.Context(), &sdk.DeleteRequest{Type: "network", Name: "gone", ID: gone.ID}); err != nil {
				t.Fatal(err)
			}
			if _, err := p.Delete(t.Context(), &sdk.DeleteRequest{Type: "network", Name: "b", ID: b.ID}); err == nil {
				t.Fatal("fail_delete did not fail the first Delete of b")
			}
			if _, err := p.Update(t.Context(), &sdk.UpdateRequest{Type: "network", Name: "a", ID: a.ID, Config: sdk.Attributes{"size": 2}}); err != nil {
				t.Fatal(err)
			}
			logged, err := os.ReadFile(filepath.Join(dir, mockprovider.LogFile))
			if err != nil {
				t.Fatal(err)
			}
			closeProvider(t, p)
			c.leave(t, dir, logged)

			q := configured(t, dir, sdk.Attributes{"fail_delete": map[string]any{"b": 1}})
			if rr := read(t, q, &sdk.ReadRequest{ID: a.ID}); !rr.Exists || rr.Attributes["size"] != 2.0 {
				t.Errorf("a = %+v, want size 2", rr)
			}
			if read(t, q, &sdk.ReadRequest{ID: gone.ID}).Exists {
				t.Error("a deleted resource is back")
			}
			// The counter was consumed once: the second Delete of b goes
			// through.
			if _, err := q.Delete(t.Context(), &sdk.DeleteRequest{Type: "network", Name: "b", ID: b.ID}); err != nil {
				t.Errorf("second Delete of b: %v", err)
			}
			d := create(t, q, "network", "d", "kd", nil)
			if rr := read(t, configured(t, dir, nil), &sdk.ReadRequest{ID: d.ID}); !rr.Exists {
				t.Error("a change made after the crash is lost")
			}
			closeProvider(t, q)
			if rr := read(t, configured(t, dir, nil), &sdk.ReadRequest{ID: d.ID}); !rr.Exists {
				t.Error("a change made after the crash is lost by the compaction")
			}
		})
	}
}

// The log is folded into the world file once it holds as many records as
// the world has resources (and at least 1,024), so it never grows past the
// world's size, and nothing is lost across the fold.
func TestWorldLogCompacts(t *testing.T) {
	dir := t.TempDir()
	p := configured(t, dir, nil)
	const n = 1100
	for i := range n {
		create(t, p, "generic", fmt.Sprintf("g%d", i), fmt.Sprintf("k%d", i), nil)
	}
	if _, err := os.Stat(filepath.Join(dir, mockprovider.WorldFile)); err != nil {
		t.Fatalf("no compaction after %d changes: %v", n, err)
	}
	fi, err := os.Stat(filepath.Join(dir, mockprovider.LogFile))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() > 200*(n-1024) {
		t.Errorf("the log holds %d bytes after the compaction", fi.Size())
	}
	q := configured(t, dir, nil)
	for i := range n {
		if !read(t, q, &sdk.ReadRequest{Type: "generic", Name: fmt.Sprintf("g%d", i)}).Exists {
			t.Fatalf("g%d is lost", i)
		}
	}
}

func write(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}
