package filestore_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"github.com/bulwark-iac/bulwark/core/journal"
	"github.com/bulwark-iac/bulwark/core/nofollow"
	"github.com/bulwark-iac/bulwark/core/protection"
	"github.com/bulwark-iac/bulwark/core/secrets"
	"github.com/bulwark-iac/bulwark/core/state"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/bulwark-iac/bulwark/core/storage"
	"github.com/bulwark-iac/bulwark/core/storage/filestore"
	"github.com/bulwark-iac/bulwark/core/storage/storagetest"
)

func TestConformance(t *testing.T) {
	storagetest.Run(t, storagetest.Factory{
		New: func(t *testing.T) string { return "file://" + t.TempDir() },
		Open: func(ctx context.Context, home string, o storage.Options) (storage.Backend, error) {
			return filestore.Open(ctx, home, o)
		},
		CopyState: func(t *testing.T, from, to string) {
			b, err := os.ReadFile(filepath.Join(dir(from), "state.json"))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir(to), "state.json"), b, 0o600); err != nil {
				t.Fatal(err)
			}
		},
		Tamper: func(t *testing.T, home, old, new string) {
			filepath.WalkDir(dir(home), func(p string, d os.DirEntry, err error) error {
				if err == nil && d.Type().IsRegular() && d.Name() != "lock" {
					b, _ := os.ReadFile(p)
					if bytes.Contains(b, []byte(old)) {
						if err := os.WriteFile(p, bytes.ReplaceAll(b, []byte(old), []byte(new)), 0o600); err != nil {
							t.Fatal(err)
						}
					}
				}
				return nil
			})
		},
		Raw: func(t *testing.T, home string) []byte {
			var all []byte
			filepath.WalkDir(dir(home), func(p string, d os.DirEntry, err error) error {
				if err == nil && d.Type().IsRegular() {
					b, _ := os.ReadFile(p)
					all = append(all, b...)
				}
				return nil
			})
			return all
		},
	})
}

func dir(home string) string {
	return filepath.Join(strings.TrimPrefix(home, "file://"), storagetest.Stack)
}

var sealing = func() state.Sealing {
	k, _ := secrets.NewKey("test")
	return state.Sealing{Sealer: k.Box(secrets.StackContext("s"))}
}()

// A stack folder written before this backend — a state.json whose
// revisions hold their (sealed) spec texts, a journal whose records carry
// no change — loads as it is, and its first Checkpoint moves the texts to
// their own files.
func TestOldStackFolderLoadsAndMigrates(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "s")
	old, err := state.OpenSealed(dir, "s", sealing)
	if err != nil {
		t.Fatal(err)
	}
	text := "stack: s\n# token: hunter2\n"
	if err := old.Mutate(func(st *state.State) error {
		st.Lineage = "01OLDLINEAGE"
		st.Resources["a"] = &state.Resource{Name: "a", Type: "network", Provider: "mock", ID: "id-a", Protection: protection.Ephemeral}
		st.Revisions = []state.Revision{{N: 1, Op: "op_1", File: "s.yaml", Spec: text, Status: state.RevisionApplied}}
		st.Current = 1
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	jr, err := journal.Open(filepath.Join(dir, journal.FileName), nil)
	if err != nil {
		t.Fatal(err)
	}
	jr.Append(journal.Record{Op: "op_1", Kind: journal.KindOp, Type: "apply", Status: journal.OpSucceeded, Lineage: "01OLDLINEAGE"})
	jr.Close()

	b := filestore.New(dir, storage.Options{Stack: "s", Sealing: sealing})
	st, err := b.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Serial != 1 || st.Resources["a"] == nil || st.Lineage != "01OLDLINEAGE" {
		t.Fatalf("old state loaded as %+v", st)
	}
	rev, _ := st.Revision(1)
	if rev.Spec != "" || rev.Digest != state.SpecDigest(text) {
		t.Errorf("an old revision loads with spec %q, digest %q", rev.Spec, rev.Digest)
	}
	if body, err := b.Revision(ctx, 1); err != nil || body.Spec != text {
		t.Fatalf("old revision's body: %+v %v", body, err)
	}
	w, err := b.Lock(ctx, storage.Holder{Op: "op_2", PID: os.Getpid()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Commit(ctx, storage.Commit{Records: []journal.Record{{Op: "op_2", Kind: journal.KindOp, Type: "update", Status: journal.OpRunning}}}); err != nil {
		t.Fatal(err)
	}
	if err := w.Checkpoint(ctx, 20); err != nil {
		t.Fatal(err)
	}
	w.Release(ctx)
	raw, err := os.ReadFile(filepath.Join(dir, "state.json"))
	if err != nil {
		t.Fatal(err)
	}
	var env struct {
		State state.State `json:"state"`
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		t.Fatal(err)
	}
	if len(env.State.Revisions) != 1 || env.State.Revisions[0].Spec != "" || env.State.Revisions[0].Digest == "" {
		t.Errorf("after the first checkpoint, state.json's revisions: %+v", env.State.Revisions)
	}
	if body, err := filestore.New(dir, storage.Options{Stack: "s", Sealing: sealing}).Revision(ctx, 1); err != nil || body.Spec != text {
		t.Errorf("migrated revision's body: %+v %v", body, err)
	}
	if strings.Contains(string(raw), "hunter2") {
		t.Error("the spec's text is in clear in state.json")
	}
	// The old single journal.jsonl is read as the live segment, and the
	// first Checkpoint seals it whole as the first segment: nothing of it
	// is rewritten.
	if fi, err := os.Stat(filepath.Join(dir, journal.FileName)); err != nil || fi.Size() != 0 {
		t.Errorf("live segment after the first checkpoint: %v %v", fi, err)
	}
	if seg, err := os.ReadFile(filepath.Join(dir, "journal", "00000001.jsonl")); err != nil || !strings.Contains(string(seg), `"op":"op_1"`) || !strings.Contains(string(seg), `"op":"op_2"`) {
		t.Errorf("first segment: %q %v", seg, err)
	}
	recs, bad, err := filestore.New(dir, storage.Options{Stack: "s", Sealing: sealing}).Journal(ctx)
	if err != nil || len(bad) > 0 || len(recs) != 2 || recs[0].Op != "op_1" || recs[1].Op != "op_2" {
		t.Errorf("journal after sealing the old one: %+v %v %v", recs, bad, err)
	}
}

// A commit cut short at the journal's tail (a power cut inside its one
// write) was never acknowledged: Load ignores it whole, and the next Lock
// cuts it off before appending.
func TestTornCommitIsCutWhole(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "s")
	b := filestore.New(dir, storage.Options{Stack: "s"})
	w, err := b.Lock(ctx, storage.Holder{Op: "op_1", PID: os.Getpid()})
	if err != nil {
		t.Fatal(err)
	}
	put := func(name string) storage.Change {
		return storage.Change{Put: []*state.Resource{{Name: name, Type: "t", Provider: "p", ID: name, Protection: protection.Ephemeral}}}
	}
	if _, err := w.Commit(ctx, storage.Commit{Records: []journal.Record{{Op: "op_1", Kind: journal.KindStep, Step: "a", Status: "ok"}}, Change: put("a")}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, journal.FileName)
	fi, _ := os.Stat(path)
	whole := fi.Size()
	recs := []journal.Record{{Op: "op_1", Kind: journal.KindStep, Step: "b", Status: "started"}, {Op: "op_1", Kind: journal.KindStep, Step: "b", Status: "ok"}}
	if _, err := w.Commit(ctx, storage.Commit{Records: recs, Change: put("b")}); err != nil {
		t.Fatal(err)
	}
	w.Release(ctx)
	// Keep the second commit's first line whole and nothing of its second.
	raw, _ := os.ReadFile(path)
	first := whole + int64(strings.IndexByte(string(raw[whole:]), '\n')) + 1
	if err := os.Truncate(path, first); err != nil {
		t.Fatal(err)
	}
	b2 := filestore.New(dir, storage.Options{Stack: "s"})
	st, err := b2.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Serial != 1 || st.Resources["b"] != nil {
		t.Errorf("a torn commit was loaded: serial %d, %v", st.Serial, st.Names())
	}
	got, _, _ := b2.Journal(ctx)
	if len(got) != 1 {
		t.Errorf("journal shows %d record(s) of a torn commit, want only the whole one", len(got))
	}
	w2, err := b2.Lock(ctx, storage.Holder{Op: "op_2", PID: os.Getpid()})
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Release(ctx)
	if fi, _ := os.Stat(path); fi.Size() != whole {
		t.Errorf("the torn commit was not cut off: %d bytes, want %d", fi.Size(), whole)
	}
	if serial, err := w2.Commit(ctx, storage.Commit{Change: put("c")}); err != nil || serial != 2 {
		t.Errorf("commit after the cut: %d %v", serial, err)
	}
}

// Everything is 0600 in a 0700 folder, and a link in place of the state or
// the journal is refused, never followed.
func TestModesAndLinks(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "s")
	b := filestore.New(dir, storage.Options{Stack: "s"})
	w, err := b.Lock(ctx, storage.Holder{Op: "op_1", PID: os.Getpid()})
	if err != nil {
		t.Fatal(err)
	}
	w.Commit(ctx, storage.Commit{Change: storage.Change{Put: []*state.Resource{{Name: "a", Type: "t", Provider: "p", ID: "a", Protection: protection.Ephemeral}}}})
	w.PutRevision(ctx, 1, storage.RevisionBody{Spec: "x"})
	w.PutBackup(ctx, "op_1", 5)
	if err := w.Checkpoint(ctx, 20); err != nil {
		t.Fatal(err)
	}
	w.Release(ctx)
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		fi, _ := d.Info()
		switch {
		case d.IsDir() && fi.Mode().Perm() != 0o700:
			t.Errorf("%s: mode %v", p, fi.Mode().Perm())
		case !d.IsDir() && fi.Mode().Perm() != 0o600:
			t.Errorf("%s: mode %v", p, fi.Mode().Perm())
		}
		return nil
	})
	for _, name := range []string{"state.json", journal.FileName} {
		p := filepath.Join(dir, name)
		os.Rename(p, p+".real")
		os.Symlink(p+".real", p)
		if _, err := filestore.New(dir, storage.Options{Stack: "s"}).Load(ctx); !errors.Is(err, nofollow.ErrRefused) {
			t.Errorf("load with %s a link: %v", name, err)
		}
		if w, err := filestore.New(dir, storage.Options{Stack: "s"}).Lock(ctx, storage.Holder{Op: "op_2", PID: os.Getpid()}); !errors.Is(err, nofollow.ErrRefused) {
			if err == nil {
				w.Release(ctx)
			}
			t.Errorf("lock with %s a link: %v", name, err)
		}
		os.Remove(p)
		os.Rename(p+".real", p)
	}
}

// The snapshot a Checkpoint or a backup writes holds every sensitive value
// sealed — resources' (their prior included), private data, sensitive
// outputs and revision variables — while the state in memory, which the
// snapshot shares the resources with nothing to seal with, stays as it was;
// both load back whole. With a key and without one.
func TestSnapshotSealsAndLeavesTheViewAlone(t *testing.T) {
	for _, tc := range []struct {
		name    string
		sealing state.Sealing
	}{
		{"with a key", sealing},
		{"without a key", state.Sealing{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			dir := filepath.Join(t.TempDir(), "s")
			b := filestore.New(dir, storage.Options{Stack: "s", Sealing: tc.sealing})
			w, err := b.Lock(ctx, storage.Holder{Op: "op_1", PID: os.Getpid()})
			if err != nil {
				t.Fatal(err)
			}
			secret := &state.Resource{Name: "db", Type: "generic", Provider: "mock", ID: "id-db", Protection: protection.Ephemeral,
				Config: map[string]any{"password": "hunter2-config"}, Attributes: map[string]any{"password": "hunter2-attribute", "size": 1.0},
				Prior:     &state.Prior{Op: "op_1", Protection: protection.Ephemeral, Attributes: map[string]any{"password": "hunter2-prior"}},
				Sensitive: []string{"password"}}
			secret.SetPrivate([]byte("hunter2-private"))
			plain := &state.Resource{Name: "net", Type: "network", Provider: "mock", ID: "id-net", Protection: protection.Durable, Attributes: map[string]any{"cidr": "10.0.0.0/16"}}
			meta := &storage.Meta{
				Revisions: []state.Revision{{N: 1, Op: "op_1", File: "s.yaml", Status: state.RevisionApplied,
					Variables: map[string]any{"pw": "hunter2-variable", "n": 2.0}, SensitiveVariables: []string{"pw"}}},
				Current: 1,
				Outputs: map[string]state.Output{"pw": {Value: "hunter2-output", Sensitive: true}, "cidr": {Value: "10.0.0.0/16"}},
			}
			want := map[string]*state.Resource{"db": secret.Clone(), "net": plain.Clone()}
			if _, err := w.Commit(ctx, storage.Commit{Change: storage.Change{Put: []*state.Resource{secret, plain}, Meta: meta}}); err != nil {
				t.Fatal(err)
			}
			if _, err := w.PutBackup(ctx, "op_1", 5); err != nil {
				t.Fatal(err)
			}
			if err := w.Checkpoint(ctx, 20); err != nil {
				t.Fatal(err)
			}
			for n, r := range map[string]*state.Resource{"db": secret, "net": plain} {
				if !reflect.DeepEqual(r, want[n]) {
					t.Errorf("after the checkpoint, the resource committed is %+v, want it unchanged: %+v", r, want[n])
				}
			}
			if meta.Outputs["pw"].Value != "hunter2-output" || meta.Revisions[0].Variables["pw"] != "hunter2-variable" {
				t.Errorf("after the checkpoint, the metadata committed is %+v", meta)
			}
			w.Release(ctx)
			raw, err := os.ReadFile(filepath.Join(dir, "state.json"))
			if err != nil {
				t.Fatal(err)
			}
			backups, _ := filepath.Glob(filepath.Join(dir, "backups", "*"))
			if len(backups) != 1 {
				t.Fatalf("backups %v", backups)
			}
			braw, err := os.ReadFile(backups[0])
			if err != nil {
				t.Fatal(err)
			}
			if tc.sealing.Sealer != nil {
				for _, s := range []string{"hunter2-config", "hunter2-attribute", "hunter2-prior", "hunter2-private", "hunter2-variable", "hunter2-output"} {
					for what, b := range map[string][]byte{"state.json": raw, "the backup": braw} {
						if strings.Contains(string(b), s) {
							t.Errorf("%q is in clear in %s", s, what)
						}
					}
				}
			}
			st, err := filestore.New(dir, storage.Options{Stack: "s", Sealing: tc.sealing}).Load(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(st.Resources, want) {
				t.Errorf("loaded %+v, want %+v", st.Resources, want)
			}
			if st.Outputs["pw"].Value != "hunter2-output" || st.Revisions[0].Variables["pw"] != "hunter2-variable" || st.Current != 1 {
				t.Errorf("loaded metadata %+v %+v", st.Outputs, st.Revisions)
			}
		})
	}
}

// The journal is segments: each Checkpoint seals the live journal.jsonl
// into journal/N.jsonl once the snapshot covers it, and a compaction writes
// a base segment of summaries in place of the oldest sealed ones, which it
// removes whole; the newest operations' segments are never rewritten.
func TestJournalSegmentsSealAndCompact(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "s")
	const keep = 2
	runOp := func(i int) string {
		b := filestore.New(dir, storage.Options{Stack: "s", Sealing: sealing})
		w, err := b.Lock(ctx, storage.Holder{Op: "op", PID: os.Getpid()})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Release(ctx)
		op := journal.NewOpID()
		name := "r" + string(rune('a'+i))
		for _, c := range []storage.Commit{
			{Records: []journal.Record{{Op: op, Kind: journal.KindOp, Type: "apply", Status: journal.OpRunning}}},
			{Records: []journal.Record{{Op: op, Kind: journal.KindStep, Step: name, Status: journal.StepOK}},
				Change: storage.Change{Put: []*state.Resource{{Name: name, Type: "t", Provider: "p", ID: name, Protection: protection.Ephemeral}}}},
			{Records: []journal.Record{{Op: op, Kind: journal.KindOp, Type: "apply", Status: journal.OpSucceeded}}},
		} {
			if _, err := w.Commit(ctx, c); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Checkpoint(ctx, keep); err != nil {
			t.Fatal(err)
		}
		return op
	}
	files := func() []string {
		entries, _ := os.ReadDir(filepath.Join(dir, "journal"))
		var out []string
		for _, e := range entries {
			out = append(out, e.Name())
		}
		return out
	}
	var ops []string
	for i := range 2*keep + 1 {
		ops = append(ops, runOp(i))
		if fi, err := os.Stat(filepath.Join(dir, journal.FileName)); err != nil || fi.Size() != 0 {
			t.Fatalf("after operation %d's checkpoint the live segment is %v %v, want empty", i, fi, err)
		}
	}
	// 5 whole operations > 2×2: the 3 oldest are folded into a base.
	want := []string{"00000004.jsonl", "00000004.ops", "00000005.jsonl", "00000005.ops", "base-00000003.jsonl"}
	if got := files(); !slices.Equal(got, want) {
		t.Fatalf("journal folder holds %v, want %v", got, want)
	}
	sealed4, _ := os.ReadFile(filepath.Join(dir, "journal", "00000004.jsonl"))
	for i := 2*keep + 1; i < 4*keep+2; i++ {
		ops = append(ops, runOp(i))
	}
	// 10 operations: compacted again at the 8th, keeping the 7th and 8th
	// whole; the 9th and 10th are whole too.
	if got, want := files(), []string{"00000007.jsonl", "00000007.ops", "00000008.jsonl", "00000008.ops", "00000009.jsonl", "00000009.ops", "00000010.jsonl", "00000010.ops", "base-00000006.jsonl"}; !slices.Equal(got, want) {
		t.Fatalf("after the second compaction the journal folder holds %v, want %v", got, want)
	}
	b := filestore.New(dir, storage.Options{Stack: "s", Sealing: sealing})
	recs, bad, err := b.Journal(ctx)
	if err != nil || len(bad) > 0 {
		t.Fatal(err, bad)
	}
	var got []string
	for _, r := range recs {
		got = append(got, r.Op+" "+r.Kind)
	}
	var wantRecs []string
	for i, op := range ops {
		if i < len(ops)-4 {
			wantRecs = append(wantRecs, op+" summary")
		} else {
			wantRecs = append(wantRecs, op+" op", op+" step", op+" op")
		}
	}
	if !slices.Equal(got, wantRecs) {
		t.Fatalf("journal reads\n%v\nwant\n%v", got, wantRecs)
	}
	if recs[0].Steps != 3 || recs[0].Status != journal.OpSucceeded {
		t.Errorf("summary %+v", recs[0])
	}
	// A reader of the operations alone reads the sealed segments' op
	// indexes (one line per op record), and learns what the whole journal
	// says of them.
	var opsRead []journal.Record
	if _, err := b.ScanJournal(ctx, []string{journal.KindOp, journal.KindSummary}, func(r journal.Record) error {
		opsRead = append(opsRead, r)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	var opsWant []journal.Record
	for _, r := range recs {
		if r.Kind == journal.KindOp || r.Kind == journal.KindSummary {
			opsWant = append(opsWant, r)
		}
	}
	if !reflect.DeepEqual(opsRead, opsWant) {
		t.Errorf("the op indexes say\n%+v\nthe segments\n%+v", opsRead, opsWant)
	}
	idx, _ := os.ReadFile(filepath.Join(dir, "journal", "00000010.ops"))
	if n := strings.Count(string(idx), "\n"); n != 2 || strings.Contains(string(idx), `"kind":"step"`) {
		t.Errorf("op index of segment 10: %q", idx)
	}
	st, err := b.Load(ctx)
	if err != nil || len(st.Resources) != len(ops) {
		t.Fatalf("load: %d resources, %v", len(st.Resources), err)
	}
	// A segment is never rewritten while it lives: the one sealed fourth
	// was the same bytes until the compaction removed it whole.
	if len(sealed4) == 0 || strings.Contains(string(sealed4), `"kind":"summary"`) {
		t.Errorf("sealed segment 4: %q", sealed4)
	}
	stats, err := b.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var bytes int64
	filepath.WalkDir(filepath.Join(dir, "journal"), func(p string, d os.DirEntry, err error) error {
		if fi, err := d.Info(); err == nil && fi.Mode().IsRegular() {
			bytes += fi.Size()
		}
		return nil
	})
	if stats.JournalBytes != bytes || stats.SummarizedOps != len(ops)-4 || stats.WholeOps != 4 || stats.JournalRecords != len(wantRecs) {
		t.Errorf("stats %+v, want %d journal bytes, %d summarized, 4 whole, %d records", stats, bytes, len(ops)-4, len(wantRecs))
	}
}

// What a compaction cut short leaves (a new base beside the segments and
// the older base it replaces) is never read, and the next compaction
// removes it.
func TestLeftoversOfACompactionAreIgnored(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "s")
	b := filestore.New(dir, storage.Options{Stack: "s"})
	w, err := b.Lock(ctx, storage.Holder{Op: "op_1", PID: os.Getpid()})
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range []string{"op_a", "op_b"} {
		for _, st := range []string{journal.OpRunning, journal.OpSucceeded} {
			if _, err := w.Commit(ctx, storage.Commit{Records: []journal.Record{{Op: op, Kind: journal.KindOp, Type: "apply", Status: st}}}); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Checkpoint(ctx, 20); err != nil {
			t.Fatal(err)
		}
	}
	w.Release(ctx)
	seg := filepath.Join(dir, "journal")
	// A base covering segment 1 (op_a summarized), as a compaction killed
	// before it removed segment 1 leaves it; and an older base.
	sum := `{"id":"01AAAAAAAAAAAAAAAAAAAAAAAA","op":"op_a","ts":"2026-01-01T00:00:00Z","kind":"summary","type":"apply","status":"succeeded","steps":2}` + "\n"
	os.WriteFile(filepath.Join(seg, "base-00000001.jsonl"), []byte(sum), 0o600)
	os.WriteFile(filepath.Join(seg, "base-00000000.jsonl"), []byte("junk\n"), 0o600) // not a segment's name
	recs, bad, err := filestore.New(dir, storage.Options{Stack: "s"}).Journal(ctx)
	if err != nil || len(bad) > 0 {
		t.Fatal(err, bad)
	}
	var got []string
	for _, r := range recs {
		got = append(got, r.Op+" "+r.Kind)
	}
	if want := []string{"op_a summary", "op_b op", "op_b op"}; !slices.Equal(got, want) {
		t.Fatalf("journal reads %v, want %v", got, want)
	}
}

// A state change an older bulwark journaled (no checksum: a stack killed
// in the middle of an operation, resumed by this one) is replayed as it is;
// one with a checksum that does not match is refused, naming the record.
func TestJournalChangeChecksum(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name string
		edit func(line []byte) []byte
		want string // in Load's error; "" for none
	}{
		{name: "as written"},
		{name: "as an older bulwark wrote it", edit: func(line []byte) []byte {
			// "change":{"checksum":"sha256:…","record":X} becomes "change":X.
			i := bytes.Index(line, []byte(`"change":{"checksum":`))
			j := bytes.Index(line[i:], []byte(`"record":`))
			rest := line[i+j+len(`"record":`):]
			out := append(append([]byte(nil), line[:i]...), `"change":`...)
			out = append(out, rest[:len(rest)-1]...) // the envelope's closing brace
			return out
		}},
		{name: "edited by hand", edit: func(line []byte) []byte {
			return bytes.Replace(line, []byte(`"durable"`), []byte(`"ephemeral"`), 1)
		}, want: "does not match its checksum"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "s")
			b := filestore.New(dir, storage.Options{Stack: "s"})
			w, err := b.Lock(ctx, storage.Holder{Op: "op_1", PID: os.Getpid()})
			if err != nil {
				t.Fatal(err)
			}
			r := &state.Resource{Name: "vault", Type: "network", Provider: "mock", ID: "id-v", Protection: protection.Durable}
			if _, err := w.Commit(ctx, storage.Commit{Records: []journal.Record{{Op: "op_1", Kind: journal.KindStep, Status: journal.StepOK}},
				Change: storage.Change{Put: []*state.Resource{r}}}); err != nil {
				t.Fatal(err)
			}
			if err := w.Release(ctx); err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(dir, journal.FileName)
			if tt.edit != nil {
				data, err := os.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				lines := bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
				last := len(lines) - 1
				if !bytes.Contains(lines[last], []byte(`"change":{"checksum":"sha256:`)) {
					t.Fatalf("the commit's last line carries no checksummed change: %s", lines[last])
				}
				lines[last] = tt.edit(lines[last])
				if err := os.WriteFile(p, append(bytes.Join(lines, []byte("\n")), '\n'), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			st, err := filestore.New(dir, storage.Options{Stack: "s"}).Load(ctx)
			if tt.want != "" {
				if !errors.Is(err, storage.ErrIntegrity) || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), p) {
					t.Fatalf("Load: %v, want an integrity error naming %s", err, p)
				}
				return
			}
			if err != nil || st.Resources["vault"] == nil || st.Resources["vault"].Protection != protection.Durable {
				t.Fatalf("Load: %+v %v", st, err)
			}
		})
	}
}

// DropBackup deletes only the stack's own backup file, and ReplaceBackup
// (secrets rotate) rewrites only it: a backups folder replaced by a link
// to a folder elsewhere (one holding a file of the backup's name), or a
// link planted in the backup's place, never gets what it points at deleted
// or overwritten, and a replace through either is refused.
func TestDropBackupNeverFollowsALink(t *testing.T) {
	ctx := context.Background()
	for _, op := range []string{"drop", "replace"} {
		t.Run(op, func(t *testing.T) { backupLinkCases(t, ctx, op) })
	}
}

func backupLinkCases(t *testing.T, ctx context.Context, op string) {
	for _, tt := range []struct {
		name  string
		plant func(t *testing.T, dir, victim string)
	}{
		{"the backups folder a link", func(t *testing.T, dir, victim string) {
			if err := os.RemoveAll(filepath.Join(dir, "backups")); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(filepath.Dir(victim), filepath.Join(dir, "backups")); err != nil {
				t.Fatal(err)
			}
		}},
		{"the backup a link", func(t *testing.T, dir, victim string) {
			p := filepath.Join(dir, "backups", filepath.Base(victim))
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(victim, p); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "s")
			b := filestore.New(dir, storage.Options{Stack: "s"})
			w, err := b.Lock(ctx, storage.Holder{Op: "op_1", PID: os.Getpid()})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Release(ctx)
			if _, err := w.Commit(ctx, storage.Commit{Change: storage.Change{Put: []*state.Resource{{Name: "a", Type: "t", Provider: "p", ID: "a", Protection: protection.Ephemeral}}}}); err != nil {
				t.Fatal(err)
			}
			if stored, err := w.PutBackup(ctx, "op_1", 5); err != nil || !stored {
				t.Fatalf("backup: %v %v", stored, err)
			}
			victim := filepath.Join(t.TempDir(), "state-op_1.json")
			if err := os.WriteFile(victim, []byte("not bulwark's"), 0o600); err != nil {
				t.Fatal(err)
			}
			tt.plant(t, dir, victim)
			if op == "drop" {
				w.DropBackup(ctx, "op_1")
			} else if err := w.(storage.BackupReplacer).ReplaceBackup(ctx, "op_1", &state.State{Stack: "s"}); err == nil {
				t.Errorf("ReplaceBackup through a planted link: no error")
			}
			if got, err := os.ReadFile(victim); err != nil || string(got) != "not bulwark's" {
				t.Errorf("the file a link pointed at: %q, %v", got, err)
			}
		})
	}
}
