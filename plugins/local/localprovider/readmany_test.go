package localprovider_test

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/bulwark-iac/bulwark/plugins/local/localprovider"
	"github.com/bulwark-iac/bulwark/sdk"
)

// interruptAfterMetadata makes the resource typ/name look as its Create
// left it when a crash came after its metadata, before its rename: its
// folder back at a temporary name, recorded as pending under key. It
// returns the folder's place and the temporary folder.
func interruptAfterMetadata(t *testing.T, root, typ, name, key string) (place, tmp string) {
	t.Helper()
	place = filepath.Join(root, typ, name)
	tmp = filepath.Join(root, typ, ".tmp-00000000000000aa")
	if err := os.Rename(place, tmp); err != nil {
		t.Fatal(err)
	}
	if err := localprovider.RecordPending(root, "create", tmp, key); err != nil {
		t.Fatal(err)
	}
	return place, tmp
}

// ReadMany answers each read as Read would have at its turn, from one walk
// of the root: a read by key that finishes an interrupted Create is seen
// by the reads after it in the same call.
func TestReadManyAnswersAsReadWouldInTurn(t *testing.T) {
	p, root := configured(t, nil)
	storage := create(t, p, "s3_bucket", "storage", "op_1:storage", nil)
	net := create(t, p, "network", "net", "op_1:net", nil)
	// storage's Create crashed after its metadata, before its rename.
	interruptAfterMetadata(t, root, "s3_bucket", "storage", "op_1:storage")
	p2 := configuredOn(t, root, nil)
	batch, ok := p2.(sdk.BatchReader)
	if !ok {
		t.Fatal("the local provider does not implement sdk.BatchReader")
	}
	reads := []*sdk.ReadRequest{
		{Type: "s3_bucket", Name: "storage"},                                 // not in place yet
		{Type: "s3_bucket", Name: "storage", IdempotencyKey: "op_1:storage"}, // finishes it
		{Type: "s3_bucket", Name: "storage"},                                 // now in place
		{ID: net.ID},
		{Type: "network", Name: "absent"},
	}
	want := []struct {
		exists bool
		id     string
	}{{false, ""}, {true, storage.ID}, {true, storage.ID}, {true, net.ID}, {false, ""}}
	resp, err := batch.ReadMany(context.Background(), &sdk.ReadManyRequest{Reads: reads})
	if err != nil || resp.Diagnostics.HasError() {
		t.Fatalf("ReadMany: %v %v", err, resp)
	}
	if len(resp.Results) != len(reads) {
		t.Fatalf("%d results for %d reads", len(resp.Results), len(reads))
	}
	for i, w := range want {
		if got := resp.Results[i]; got.Exists != w.exists || got.ID != w.id {
			t.Errorf("read %d (%+v): exists %v id %q, want %v %q", i, reads[i], got.Exists, got.ID, w.exists, w.id)
		}
	}
	// And each answer is what a Read makes of the same request now.
	for i, r := range reads[1:] {
		if got, one := resp.Results[i+1], read(t, p2, r); got.Exists != one.Exists || got.ID != one.ID || got.IdempotencyKey != one.IdempotencyKey {
			t.Errorf("read %d: ReadMany %+v, Read %+v", i+1, got, one)
		}
	}
}

// A read-only session's ReadMany (a plan's) writes nothing, even where a
// read by key finds an interrupted Create: it reports the resource it will
// be, as Read does, and leaves the temporary folder and the pending record
// as they are.
func TestReadManyReadOnlyWritesNothing(t *testing.T) {
	p, root := configured(t, nil)
	storage := create(t, p, "s3_bucket", "storage", "op_1:storage", nil)
	place, tmp := interruptAfterMetadata(t, root, "s3_bucket", "storage", "op_1:storage")
	pending, err := os.ReadFile(filepath.Join(root, localprovider.PendingFile))
	if err != nil {
		t.Fatal(err)
	}
	ro := localprovider.New()
	if resp, err := ro.Configure(context.Background(), &sdk.ConfigureRequest{Config: sdk.Attributes{"root": root}, DataDir: t.TempDir(), ReadOnly: true}); err != nil || resp.Diagnostics.HasError() {
		t.Fatalf("configure read-only: %v %v", err, resp)
	}
	resp, err := ro.(sdk.BatchReader).ReadMany(context.Background(), &sdk.ReadManyRequest{Reads: []*sdk.ReadRequest{
		{Type: "s3_bucket", Name: "storage", IdempotencyKey: "op_1:storage"},
		{Type: "s3_bucket", Name: "storage"},
	}})
	if err != nil || resp.Diagnostics.HasError() {
		t.Fatalf("ReadMany: %v %v", err, resp)
	}
	if r := resp.Results[0]; !r.Exists || r.ID != storage.ID {
		t.Errorf("read by key: %+v, want the resource the interrupted create will be (%s)", r, storage.ID)
	}
	for i, r := range []*sdk.ReadRequest{{Type: "s3_bucket", Name: "storage", IdempotencyKey: "op_1:storage"}, {Type: "s3_bucket", Name: "storage"}} {
		if one := read(t, ro, r); one.Exists != resp.Results[i].Exists || one.ID != resp.Results[i].ID {
			t.Errorf("read %d: ReadMany %+v, Read %+v", i, resp.Results[i], one)
		}
	}
	if _, err := os.Stat(tmp); err != nil {
		t.Errorf("the temporary folder was touched: %v", err)
	}
	if _, err := os.Lstat(place); !os.IsNotExist(err) {
		t.Errorf("something was put in place: %v", err)
	}
	if after, err := os.ReadFile(filepath.Join(root, localprovider.PendingFile)); err != nil || string(after) != string(pending) {
		t.Errorf("the pending record changed: %v\n%s\nwas\n%s", err, after, pending)
	}
}

// CreateMany makes each resource as Create would, in order, from one scan:
// what an earlier Create of the batch made is seen by the later ones (a
// second identity under another key is a conflict of its own, a retry of
// a key answers what that key made), and a Create that fails stops none
// of the others.
func TestCreateManyAnswersAsCreateWouldInTurn(t *testing.T) {
	p, root := configured(t, nil)
	batch, ok := p.(sdk.BatchCreator)
	if !ok {
		t.Fatal("the local provider does not implement sdk.BatchCreator")
	}
	creates := []*sdk.CreateRequest{
		{Type: "network", Name: "net", IdempotencyKey: "op_1:net"},
		{Type: "network", Name: "net", IdempotencyKey: "op_2:net", Config: sdk.Attributes{"path": "elsewhere/net"}}, // taken by the first, in another folder
		{Type: "generic", Name: "g", IdempotencyKey: "op_1:g"},                                                      // made despite the conflict before it
		{Type: "network", Name: "net", IdempotencyKey: "op_1:net"},                                                  // a retry: the first's resource
		{Type: "generic", Name: "bad", IdempotencyKey: "op_1:bad", Config: sdk.Attributes{"path": "../escape"}},     // refused on its own
	}
	resp, err := batch.CreateMany(context.Background(), &sdk.CreateManyRequest{Creates: creates})
	if err != nil || resp.Diagnostics.HasError() {
		t.Fatalf("CreateMany: %v %v", err, resp)
	}
	if len(resp.Results) != len(creates) {
		t.Fatalf("%d results for %d creates", len(resp.Results), len(creates))
	}
	r := resp.Results
	if r[0].Diagnostics.HasError() || r[0].ID == "" {
		t.Errorf("the first create: %+v", r[0])
	}
	if len(r[1].Diagnostics) != 1 || r[1].Diagnostics[0].Code != sdk.CodeConflict || r[1].ID != "" {
		t.Errorf("the same identity under another key: %+v, want a conflict and nothing made", r[1])
	}
	if r[2].Diagnostics.HasError() || r[2].ID == "" {
		t.Errorf("the create after the conflict: %+v", r[2])
	}
	if r[3].Diagnostics.HasError() || r[3].ID != r[0].ID {
		t.Errorf("the retry of the first key: %+v, want id %s", r[3], r[0].ID)
	}
	if !r[4].Diagnostics.HasError() || r[4].ID != "" {
		t.Errorf("a path out of the root: %+v, want an error and nothing made", r[4])
	}
	if got := resourceFolders(t, root); !reflect.DeepEqual(got, []string{"generic/g", "network/net"}) {
		t.Errorf("resource folders %v, want generic/g and network/net", got)
	}

	// A folder a user put where a Create of the next batch would go is
	// not adopted: that Create is a conflict of its own, the folder keeps
	// what it held and gets no metadata, and the rest of the batch is made.
	foreign := filepath.Join(root, "generic", "foreign")
	if err := os.MkdirAll(foreign, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(foreign, "data.txt"), []byte("mine"), 0o600); err != nil {
		t.Fatal(err)
	}
	resp, err = batch.CreateMany(context.Background(), &sdk.CreateManyRequest{Creates: []*sdk.CreateRequest{
		{Type: "generic", Name: "foreign", IdempotencyKey: "op_3:foreign"},
		{Type: "generic", Name: "after", IdempotencyKey: "op_3:after"},
	}})
	if err != nil || resp.Diagnostics.HasError() {
		t.Fatalf("CreateMany: %v %v", err, resp)
	}
	if r := resp.Results[0]; len(r.Diagnostics) != 1 || r.Diagnostics[0].Code != sdk.CodeConflict || r.ID != "" {
		t.Errorf("a Create onto a user's folder: %+v, want a conflict and nothing made", r)
	}
	if r := resp.Results[1]; r.Diagnostics.HasError() || r.ID == "" {
		t.Errorf("the Create after it: %+v", r)
	}
	if b, err := os.ReadFile(filepath.Join(foreign, "data.txt")); err != nil || string(b) != "mine" {
		t.Errorf("the user's file: %q, %v", b, err)
	}
	if _, err := os.Lstat(filepath.Join(foreign, localprovider.MetadataFile)); !os.IsNotExist(err) {
		t.Errorf("the user's folder was given metadata: %v", err)
	}
	for i, c := range []*sdk.CreateRequest{creates[0], creates[2]} {
		if rr := read(t, p, &sdk.ReadRequest{IdempotencyKey: c.IdempotencyKey}); !rr.Exists || rr.ID != r[2*i].ID {
			t.Errorf("Read by key %s: %+v", c.IdempotencyKey, rr)
		}
	}
}

// ReadMany answers the reads by id that carry their private data from the
// places it names and scans the root only for the others: a batch of such
// reads answers even when a scan would fail (a corrupt MetadataFile
// elsewhere); one read that needs the scan then fails the batch, as before.
func TestReadManyReadsByPlaceAndScansOnlyForTheRest(t *testing.T) {
	p, root := configured(t, nil)
	ctx := context.Background()
	a := create(t, p, "generic", "a", "op_1:a", nil)
	b := create(t, p, "generic", "b", "op_1:b", nil)
	if _, err := p.Delete(ctx, &sdk.DeleteRequest{Type: "generic", Name: "b", ID: b.ID, Private: b.Private}); err != nil {
		t.Fatal(err)
	}
	batch := p.(sdk.BatchReader)
	byPlace := []*sdk.ReadRequest{
		{Type: "generic", Name: "a", ID: a.ID, Private: a.Private},
		{Type: "generic", Name: "b", ID: b.ID, Private: b.Private},
	}
	rest := []*sdk.ReadRequest{
		{Type: "generic", Name: "a", IdempotencyKey: "op_1:a"},
		{Type: "generic", Name: "a", ID: a.ID},
	}
	resp, err := batch.ReadMany(ctx, &sdk.ReadManyRequest{Reads: append(append([]*sdk.ReadRequest(nil), byPlace...), rest...)})
	if err != nil {
		t.Fatalf("ReadMany: %v", err)
	}
	for i, want := range []bool{true, false, true, true} {
		if got := resp.Results[i]; got.Exists != want || (want && got.ID != a.ID) {
			t.Errorf("read %d: %+v, want exists %v", i, got, want)
		}
	}
	writeFile(t, filepath.Join(root, "zzz", localprovider.MetadataFile), "{not json")
	resp, err = batch.ReadMany(ctx, &sdk.ReadManyRequest{Reads: byPlace})
	if err != nil {
		t.Fatalf("ReadMany by place beside a corrupt MetadataFile: %v", err)
	}
	if !resp.Results[0].Exists || resp.Results[1].Exists {
		t.Errorf("by place: %+v, %+v", resp.Results[0], resp.Results[1])
	}
	if _, err := batch.ReadMany(ctx, &sdk.ReadManyRequest{Reads: append(append([]*sdk.ReadRequest(nil), byPlace...), rest[0])}); err == nil || !strings.Contains(err.Error(), "corrupt") {
		t.Errorf("a batch with a read the scan answers, beside a corrupt MetadataFile: %v, want the scan's error", err)
	}
}
