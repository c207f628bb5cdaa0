package backends

import (
	"context"
	"github.com/bulwark-iac/bulwark/core/protection"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bulwark-iac/bulwark/backends/pgstore/pgtest"
	"github.com/bulwark-iac/bulwark/core/journal"
	"github.com/bulwark-iac/bulwark/core/secrets"
	"github.com/bulwark-iac/bulwark/core/state"
	"github.com/bulwark-iac/bulwark/core/storage"
)

// state migrate copies the backups with the stack: names, times, serials
// and contents (sensitive values sealed at rest, opened with the key), hop
// after hop: file -> postgres -> s3 -> file.
func TestMigrateCopiesBackups(t *testing.T) {
	ctx := context.Background()
	key, _ := secrets.NewKey("test")
	o := storage.Options{Stack: "web", Sealing: state.Sealing{Sealer: key.Box(secrets.StackContext("web"))}}
	hops := []struct{ name, url string }{
		{"file", "file://" + t.TempDir()},
		{"postgres", pgtest.URL(t)},
		{"s3", s3URL(t)},
		{"file again", "file://" + t.TempDir()},
	}

	// The source: two backups of two states, an hour apart.
	src := open(t, hops[0].url, o)
	w, err := src.Lock(ctx, storage.Holder{Op: "op_1"})
	if err != nil {
		t.Fatal(err)
	}
	for i, pw := range []string{"hunter2", "hunter3"} {
		r := &state.Resource{Name: "db", Type: "generic", Provider: "mock", Source: "mock", ID: "x", Protection: protection.Durable,
			Attributes: map[string]any{"pw": pw}, Sensitive: []string{"pw"}}
		if _, err := w.Commit(ctx, storage.Commit{Records: []journal.Record{{Op: "op_1", Kind: journal.KindStep, Resource: "db", Status: journal.StepOK}},
			Change: storage.Change{Put: []*state.Resource{r}}}); err != nil {
			t.Fatal(err)
		}
		if stored, err := w.PutBackup(ctx, journal.NewOpID(), 5); err != nil || !stored {
			t.Fatalf("backup %d: %v %v", i, stored, err)
		}
	}
	w.Release(ctx)
	want, err := src.Backups(ctx)
	if err != nil || len(want) != 2 {
		t.Fatalf("source backups %+v %v", want, err)
	}

	for i := 1; i < len(hops); i++ {
		from, to := hops[i-1], hops[i]
		t.Run(from.name+" to "+to.name, func(t *testing.T) {
			moved, err := migrate(ctx, from.url, to.url, o, "op_m")
			if err != nil {
				t.Fatal(err)
			}
			if moved.Backups != 2 {
				t.Errorf("moved %d backups, want 2", moved.Backups)
			}
			dst := open(t, to.url, o)
			got, err := dst.Backups(ctx)
			if err != nil || len(got) != len(want) {
				t.Fatalf("backups at %s: %+v %v", to.name, got, err)
			}
			for k, b := range want {
				g := got[k]
				if g.Name != b.Name || g.Serial != b.Serial || g.Time.Sub(b.Time).Abs() > time.Second {
					t.Errorf("backup %d at %s is %+v, want %+v", k, to.name, g, b)
				}
				st, err := dst.Backup(ctx, b.Name)
				if err != nil {
					t.Fatalf("backup %s at %s: %v", b.Name, to.name, err)
				}
				if pw := st.Resources["db"].Attributes["pw"]; pw != []string{"hunter2", "hunter3"}[k] {
					t.Errorf("backup %s at %s holds pw %v", b.Name, to.name, pw)
				}
			}
		})
	}
	// Sealed at rest in the last folder, backups included.
	last := strings.TrimPrefix(hops[len(hops)-1].url, "file://")
	n := 0
	filepath.WalkDir(last, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if strings.Contains(p, "backup") {
			n++
		}
		if b, _ := os.ReadFile(p); strings.Contains(string(b), "hunter") {
			t.Errorf("%s holds a sensitive value in clear", p)
		}
		return nil
	})
	if n != 2 {
		t.Errorf("%d backup files in %s, want 2", n, last)
	}
}
