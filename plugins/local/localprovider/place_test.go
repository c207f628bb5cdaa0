package localprovider_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bulwark-iac/bulwark/plugins/local/localprovider"
	"github.com/bulwark-iac/bulwark/sdk"
)

// placeCase is the root as someone left it after the Create of s3_bucket
// "data" at shared/data (key-data) and of network "other" at other
// (key-other), and what a Read, an Update and a Delete of "data" by its id
// and its private data must do then.
type placeCase struct {
	name string
	// perturb changes the root (and outside, a folder beside it) by hand.
	perturb func(t *testing.T, root, outside string, data, other *sdk.CreateResponse)
	// private is the private data sent; nil: the one data's Create returned.
	private func(root, outside string, data, other *sdk.CreateResponse) []byte
	// exists: the Read finds data at shared/data; readErr: it fails.
	exists, readErr bool
	// scanSays, when set, is the folder a Read by id without private data
	// finds (a scan of the root), where it differs by design; "error" for
	// a scan that fails. Unset: the same answer as with the private data.
	scanSays string
	// deleteErr: the Delete is refused; else it succeeds and removes
	// shared/data exactly when exists.
	deleteErr bool
}

func run(t *testing.T, name string, args ...string) {
	t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %v: %v %s", name, args, err, out)
	}
}

func writeFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

// editMetadata rewrites the MetadataFile in dir through edit.
func editMetadata(t *testing.T, dir string, edit func(m map[string]any)) {
	t.Helper()
	file := filepath.Join(dir, localprovider.MetadataFile)
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	if b, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	writeFile(t, file, string(b))
}

func placeCases() []placeCase {
	rmData := func(t *testing.T, root string) {
		t.Helper()
		if err := os.RemoveAll(filepath.Join(root, "shared", "data")); err != nil {
			t.Fatal(err)
		}
	}
	privateAt := func(path string) []byte {
		b, _ := json.Marshal(map[string]string{"path": path, "key": "key-data"})
		return b
	}
	return []placeCase{
		{name: "as made", exists: true},
		{
			name:    "removed by hand",
			perturb: func(t *testing.T, root, _ string, _, _ *sdk.CreateResponse) { rmData(t, root) },
		},
		{
			name: "a user's plain folder at the place",
			perturb: func(t *testing.T, root, _ string, _, _ *sdk.CreateResponse) {
				rmData(t, root)
				writeFile(t, filepath.Join(root, "shared", "data", "mine.txt"), "mine\n")
			},
		},
		{
			name: "a symlink at the place to a copy outside the root",
			perturb: func(t *testing.T, root, outside string, _, _ *sdk.CreateResponse) {
				run(t, "cp", "-a", filepath.Join(root, "shared", "data"), filepath.Join(outside, "data"))
				rmData(t, root)
				if err := os.Symlink(filepath.Join(outside, "data"), filepath.Join(root, "shared", "data")); err != nil {
					t.Fatal(err)
				}
			},
		},
		{
			name: "a symlink on the way to the resource moved outside the root",
			perturb: func(t *testing.T, root, outside string, _, _ *sdk.CreateResponse) {
				run(t, "mv", filepath.Join(root, "shared"), filepath.Join(outside, "shared"))
				if err := os.Symlink(filepath.Join(outside, "shared"), filepath.Join(root, "shared")); err != nil {
					t.Fatal(err)
				}
			},
		},
		{
			name: "a folder on the way made a resource by hand",
			perturb: func(t *testing.T, root, _ string, _, _ *sdk.CreateResponse) {
				run(t, "cp", filepath.Join(root, "other", localprovider.MetadataFile), filepath.Join(root, "shared"))
				editMetadata(t, filepath.Join(root, "shared"), func(m map[string]any) { m["path"] = "shared" })
			},
		},
		{
			name: "a corrupt MetadataFile on the way",
			perturb: func(t *testing.T, root, _ string, _, _ *sdk.CreateResponse) {
				writeFile(t, filepath.Join(root, "shared", localprovider.MetadataFile), "{not json")
			},
			readErr: true, deleteErr: true,
		},
		{
			name: "another stack's resource made at the place since",
			perturb: func(t *testing.T, root, _ string, _, _ *sdk.CreateResponse) {
				rmData(t, root)
				p := configuredOn(t, root, nil)
				create(t, p, "s3_bucket", "data", "key-another-stack", sdk.Attributes{"path": "shared/data"})
			},
		},
		{
			name: "a stranger moved into the place",
			perturb: func(t *testing.T, root, _ string, _, _ *sdk.CreateResponse) {
				rmData(t, root)
				run(t, "mv", filepath.Join(root, "other"), filepath.Join(root, "shared", "data"))
			},
		},
		{
			name: "private data naming another resource's place",
			private: func(_, _ string, _, other *sdk.CreateResponse) []byte {
				return other.Private
			},
			exists: true, deleteErr: true,
		},
		{
			name: "private data naming a copy outside the root by ..",
			perturb: func(t *testing.T, root, outside string, _, _ *sdk.CreateResponse) {
				run(t, "cp", "-a", filepath.Join(root, "shared", "data"), filepath.Join(outside, "data"))
			},
			private: func(root, outside string, _, _ *sdk.CreateResponse) []byte {
				rel, _ := filepath.Rel(root, filepath.Join(outside, "data"))
				return privateAt(filepath.ToSlash(rel))
			},
			exists: true, deleteErr: true,
		},
		{
			name: "private data naming a copy outside the root absolutely",
			perturb: func(t *testing.T, root, outside string, _, _ *sdk.CreateResponse) {
				run(t, "cp", "-a", filepath.Join(root, "shared", "data"), filepath.Join(outside, "data"))
			},
			private: func(_, outside string, _, _ *sdk.CreateResponse) []byte {
				return privateAt(filepath.Join(outside, "data"))
			},
			exists: true, deleteErr: true,
		},
		{
			name: "private data naming a hidden copy",
			perturb: func(t *testing.T, root, _ string, _, _ *sdk.CreateResponse) {
				run(t, "cp", "-a", filepath.Join(root, "shared", "data"), filepath.Join(root, ".hidden"))
				editMetadata(t, filepath.Join(root, ".hidden"), func(m map[string]any) { m["path"] = ".hidden" })
			},
			private: func(_, _ string, _, _ *sdk.CreateResponse) []byte { return privateAt(".hidden") },
			exists:  true, deleteErr: true,
		},
		{
			name:    "private data naming the place uncleanly",
			private: func(_, _ string, _, _ *sdk.CreateResponse) []byte { return privateAt("shared/./data") },
			exists:  true, deleteErr: true,
		},
		{
			name:    "private data that is not a place",
			private: func(_, _ string, _, _ *sdk.CreateResponse) []byte { return []byte("not json") },
			exists:  true,
		},
		{
			// The scan reads every resource's metadata and fails on any
			// that is corrupt; the place reads its own.
			name: "a corrupt MetadataFile elsewhere",
			perturb: func(t *testing.T, root, _ string, _, _ *sdk.CreateResponse) {
				writeFile(t, filepath.Join(root, "zzz", localprovider.MetadataFile), "{not json")
			},
			exists: true, scanSays: "error",
		},
		{
			name: "the resource's folder recording another place",
			perturb: func(t *testing.T, root, _ string, _, _ *sdk.CreateResponse) {
				editMetadata(t, filepath.Join(root, "shared", "data"), func(m map[string]any) { m["path"] = "elsewhere" })
			},
		},
		{
			// Gone from its place is gone, decided without the scan,
			// which would fail.
			name: "removed by hand, a corrupt MetadataFile elsewhere",
			perturb: func(t *testing.T, root, _ string, _, _ *sdk.CreateResponse) {
				rmData(t, root)
				writeFile(t, filepath.Join(root, "zzz", localprovider.MetadataFile), "{not json")
			},
			scanSays: "error",
		},
		{
			name: "a user's plain folder at the place, a corrupt MetadataFile elsewhere",
			perturb: func(t *testing.T, root, _ string, _, _ *sdk.CreateResponse) {
				rmData(t, root)
				writeFile(t, filepath.Join(root, "shared", "data", "mine.txt"), "mine\n")
				writeFile(t, filepath.Join(root, "zzz", localprovider.MetadataFile), "{not json")
			},
			scanSays: "error",
		},
		{
			// A copy whose metadata was edited to record its own place:
			// the scan meets it first (a-twin sorts before shared).
			name: "a twin made by hand",
			perturb: func(t *testing.T, root, _ string, _, _ *sdk.CreateResponse) {
				run(t, "cp", "-a", filepath.Join(root, "shared", "data"), filepath.Join(root, "a-twin"))
				editMetadata(t, filepath.Join(root, "a-twin"), func(m map[string]any) { m["path"] = "a-twin" })
			},
			exists: true, scanSays: "a-twin",
		},
	}
}

// A Read, an Update and a Delete by id with the resource's private data
// look at the place it records (reading that folder and the ones on the
// way, not the whole root) and answer as a scan of the root would,
// whatever was done to the root by hand: symlinks in and out of it, a
// resource, a stranger or a corrupt file on the way or at the place,
// private data naming another place. They never read, change or remove
// anything but the resource at its recorded place, and never anything
// outside the root.
func TestByPlaceAnswersAsTheScanAndTouchesNothingElse(t *testing.T) {
	ctx := context.Background()
	for _, c := range placeCases() {
		t.Run(c.name, func(t *testing.T) {
			p, root := configured(t, nil)
			outside := t.TempDir()
			data := create(t, p, "s3_bucket", "data", "key-data", sdk.Attributes{"path": "shared/data"})
			other := create(t, p, "network", "other", "key-other", sdk.Attributes{"path": "other"})
			real := filepath.Join(root, "shared", "data")
			if c.perturb != nil {
				c.perturb(t, root, outside, data, other)
			}
			private := data.Private
			if c.private != nil {
				private = c.private(root, outside, data, other)
			}

			// Read, with the private data and without (the scan).
			got, err := p.Read(ctx, &sdk.ReadRequest{Type: "s3_bucket", Name: "data", ID: data.ID, Private: private})
			if c.readErr {
				if err == nil {
					t.Fatalf("Read: %+v, want an error", got)
				}
			} else if err != nil {
				t.Fatalf("Read: %v", err)
			} else if got.Exists != c.exists || (c.exists && got.Attributes["folder"] != real) {
				t.Fatalf("Read: exists %v in %v, want %v in %s", got.Exists, got.Attributes["folder"], c.exists, real)
			}
			scan, serr := p.Read(ctx, &sdk.ReadRequest{Type: "s3_bucket", Name: "data", ID: data.ID})
			switch c.scanSays {
			case "":
				if (serr != nil) != (err != nil) || (err == nil && (scan.Exists != got.Exists || scan.Attributes["folder"] != got.Attributes["folder"])) {
					t.Fatalf("the scan says %+v, %v; the place %+v, %v", scan, serr, got, err)
				}
			case "error":
				if serr == nil {
					t.Fatalf("the scan says %+v, want an error", scan)
				}
			default:
				if serr != nil || !scan.Exists || scan.Attributes["folder"] != filepath.Join(root, c.scanSays) {
					t.Fatalf("the scan says %+v, %v, want %s", scan, serr, c.scanSays)
				}
			}

			// Update: changes the resource's metadata at its place, or
			// nothing.
			before := snapshots(t, root, outside)
			_, err = p.Update(ctx, &sdk.UpdateRequest{Type: "s3_bucket", Name: "data", ID: data.ID, Private: private, Config: sdk.Attributes{"path": "shared/data", "size": 2.0}})
			after := snapshots(t, root, outside)
			meta := filepath.Join(real, localprovider.MetadataFile)
			if c.exists {
				if err != nil {
					t.Fatalf("Update: %v", err)
				}
				if !strings.Contains(after[meta], `"size": 2`) {
					t.Fatalf("Update left %s as %s", meta, after[meta])
				}
				delete(before, meta)
				delete(after, meta)
			} else if err == nil {
				t.Fatal("Update of what is not at its place succeeded")
			}
			sameTrees(t, "Update", before, after, "")

			// Delete.
			before = snapshots(t, root, outside)
			_, err = p.Delete(ctx, &sdk.DeleteRequest{Type: "s3_bucket", Name: "data", ID: data.ID, Private: private, Protection: sdk.ProtectionDurable})
			after = snapshots(t, root, outside)
			if c.deleteErr != (err != nil) {
				t.Fatalf("Delete: %v, want refused %v", err, c.deleteErr)
			}
			gone := ""
			if c.exists && !c.deleteErr {
				gone = real
				if _, err := os.Lstat(real); !os.IsNotExist(err) {
					t.Fatalf("Delete left %s: %v", real, err)
				}
			}
			sameTrees(t, "Delete", before, after, gone)
		})
	}
}

// snapshots is snapshot of every folder given, the provider's pending
// record and its lock left out (they come and go with every change).
func snapshots(t *testing.T, dirs ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, d := range dirs {
		for k, v := range snapshot(t, d) {
			if b := filepath.Base(k); b == localprovider.PendingFile || strings.HasPrefix(b, ".bulwark-local-pending") {
				continue
			}
			out[k] = v
		}
	}
	return out
}

// sameTrees fails unless after is before, but for what was under gone
// (when set), which must be missing from after.
func sameTrees(t *testing.T, what string, before, after map[string]string, gone string) {
	t.Helper()
	under := func(k string) bool {
		return gone != "" && (k == gone || strings.HasPrefix(k, gone+string(filepath.Separator)))
	}
	for k, v := range before {
		switch w, ok := after[k]; {
		case under(k) && ok:
			t.Errorf("%s left %s", what, k)
		case !under(k) && !ok:
			t.Errorf("%s removed %s", what, k)
		case !under(k) && w != v:
			t.Errorf("%s changed %s: %q, was %q", what, k, w, v)
		}
	}
	for k := range after {
		if _, ok := before[k]; !ok {
			t.Errorf("%s made %s", what, k)
		}
	}
}
