package localprovider_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/bulwark-iac/bulwark/sdk"
)

// A user's copy of a resource folder (cp -a root/shared/data
// root/backup-of-data) holds the same .bulwark.json: the same id, key, type
// and name. It is a stranger: a resource is found at the place its
// metadata records. Read by id, by key and by name find the real folder,
// Delete removes the real one and never the copy, and once the real one
// is gone nothing is found (the copy is not taken for it).
func TestACopyOfAResourceFolderIsAStranger(t *testing.T) {
	p, root := configured(t, nil)
	ctx := context.Background()
	made := create(t, p, "s3_bucket", "data", "key-data", sdk.Attributes{"path": "shared/data"})
	real := filepath.Join(root, "shared", "data")
	copied := filepath.Join(root, "backup-of-data") // sorts before shared/: the first a walk meets
	if out, err := exec.Command("cp", "-a", real, copied).CombinedOutput(); err != nil {
		t.Fatalf("cp -a: %v %s", err, out)
	}
	if err := os.WriteFile(filepath.Join(copied, "objects", "only-in-the-copy.txt"), []byte("mine\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, req := range []*sdk.ReadRequest{
		{Type: "s3_bucket", Name: "data", ID: made.ID},
		{Type: "s3_bucket", Name: "data", IdempotencyKey: "key-data"},
		{Type: "s3_bucket", Name: "data", Config: sdk.Attributes{"path": "shared/data"}},
	} {
		got := read(t, p, req)
		if !got.Exists || got.ID != made.ID || got.Attributes["folder"] != real {
			t.Errorf("Read %+v found %v in %v, want the real folder %s", req, got.Exists, got.Attributes["folder"], real)
		}
	}
	if _, err := p.Delete(ctx, &sdk.DeleteRequest{Type: "s3_bucket", Name: "data", ID: made.ID, Protection: sdk.ProtectionDurable}); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if _, err := os.Stat(real); !os.IsNotExist(err) {
		t.Errorf("the real folder is still there: %v", err)
	}
	if _, err := os.Stat(filepath.Join(copied, "objects", "only-in-the-copy.txt")); err != nil {
		t.Fatalf("the copy was touched: %v", err)
	}
	if got := read(t, p, &sdk.ReadRequest{Type: "s3_bucket", Name: "data", ID: made.ID}); got.Exists {
		t.Errorf("after the Delete, Read by id finds %v: the copy taken for the resource", got.Attributes["folder"])
	}
	// A second Delete is of what is gone: it succeeds and touches nothing.
	if _, err := p.Delete(ctx, &sdk.DeleteRequest{Type: "s3_bucket", Name: "data", ID: made.ID, Protection: sdk.ProtectionDurable}); err != nil {
		t.Fatalf("second Delete: %v", err)
	}
	if _, err := os.Stat(filepath.Join(copied, "objects", "only-in-the-copy.txt")); err != nil {
		t.Fatalf("the copy was touched by the second Delete: %v", err)
	}
}

// A Delete checks what the recorded id holds against the private data the
// resource was recorded with: a folder whose key changed since (its claim
// released and imported by another stack) is not deleted, even when a host
// asks; the one that still carries the recorded key is.
func TestDeleteChecksTheRecordedKey(t *testing.T) {
	p, root := configured(t, nil)
	ctx := context.Background()
	made := create(t, p, "s3_bucket", "data", "key-data", sdk.Attributes{"path": "shared/data"})
	if len(made.Private) == 0 {
		t.Fatal("Create returned no private data")
	}
	rel, ok := p.(sdk.Releaser)
	if !ok {
		t.Fatal("the local provider is no sdk.Releaser")
	}
	if _, err := rel.Release(ctx, &sdk.ReleaseRequest{Type: "s3_bucket", Name: "data", ID: made.ID, Key: "key-data"}); err != nil {
		t.Fatalf("Release: %v", err)
	}
	imp, err := p.(sdk.Importer).Import(ctx, &sdk.ImportRequest{Type: "s3_bucket", Name: "data", ID: made.ID, ClaimKey: "key-other-stack"})
	if err != nil || !imp.Claimed {
		t.Fatalf("Import: %+v, %v", imp, err)
	}
	_, err = p.Delete(ctx, &sdk.DeleteRequest{Type: "s3_bucket", Name: "data", ID: made.ID, Protection: sdk.ProtectionEphemeral, Private: made.Private})
	if !sdk.IsConflict(err) {
		t.Fatalf("Delete with the old stack's private data: %v, want a conflict", err)
	}
	if _, err := os.Stat(filepath.Join(root, "shared", "data", "objects", "seed.txt")); err != nil {
		t.Fatalf("the folder was touched: %v", err)
	}
	if _, err := p.Delete(ctx, &sdk.DeleteRequest{Type: "s3_bucket", Name: "data", ID: made.ID, Protection: sdk.ProtectionEphemeral, Private: imp.Private}); err != nil {
		t.Fatalf("Delete by the holder of the claim: %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, "shared", "data")); !os.IsNotExist(err) {
		t.Fatalf("the holder's Delete left the folder: %v", err)
	}
}
