package localprovider_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bulwark-iac/bulwark/plugins/local/localprovider"
	"github.com/bulwark-iac/bulwark/sdk"
)

// A Delete with an expected key deletes only a folder that carries it, and
// the folder it removes is the one it checked: another stack sharing the
// root that puts its own resource in the checked folder's place between
// the check and the move (the attacker's window: this process's lock does
// not cover another's) gets it back, untouched, and the Delete fails with
// a conflict. The checked resource, moved away by the attacker, is not
// touched either.
func TestDeleteChecksTheExpectedKey(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	cfg := sdk.Attributes{"root": root}
	owner, other := configuredOn(t, t.TempDir(), cfg), configuredOn(t, t.TempDir(), cfg)
	if sc, err := owner.GetSchema(ctx, &sdk.GetSchemaRequest{}); err != nil || !sc.Capabilities.DeleteChecksKey {
		t.Fatalf("the local provider does not announce DeleteChecksKey: %v", err)
	}
	cr := create(t, owner, "network", "n", "k-owner", nil)
	if _, err := owner.Delete(ctx, &sdk.DeleteRequest{Type: "network", Name: "n", ID: cr.ID, ExpectedKey: "k-someone-else"}); !sdk.IsConflict(err) {
		t.Fatalf("Delete expecting another key: %v, want a conflict", err)
	}
	if !read(t, owner, &sdk.ReadRequest{ID: cr.ID}).Exists {
		t.Fatal("a Delete expecting another key deleted it")
	}

	// The swap, as the Delete is about to move the folder.
	moved := filepath.Join(root, "elsewhere")
	var theirs *sdk.CreateResponse
	localprovider.BeforeRename(owner, func(dir string) {
		if err := os.Rename(dir, moved); err != nil {
			t.Error(err)
			return
		}
		theirs = create(t, other, "network", "n", "k-other", nil)
	})
	_, err := owner.Delete(ctx, &sdk.DeleteRequest{Type: "network", Name: "n", ID: cr.ID, ExpectedKey: "k-owner"})
	if !sdk.IsConflict(err) || !strings.Contains(err.Error(), "replaced during the delete") {
		t.Fatalf("Delete of a folder swapped before its move: %v, want a conflict", err)
	}
	localprovider.BeforeRename(owner, nil)
	if theirs == nil {
		t.Fatal("the swap did not happen")
	}
	got := read(t, other, &sdk.ReadRequest{ID: theirs.ID})
	if !got.Exists || got.IdempotencyKey != "k-other" {
		t.Fatalf("the other stack's resource, swapped in, was deleted or changed: %+v", got)
	}
	if _, err := os.Stat(filepath.Join(moved, localprovider.MetadataFile)); err != nil {
		t.Fatalf("the checked resource, moved away, was touched: %v", err)
	}
	// Nothing is left pending that a later call would remove.
	if _, err := other.Delete(ctx, &sdk.DeleteRequest{Type: "network", Name: "gone", ID: "local-network-gone-12345678"}); err != nil {
		t.Fatal(err)
	}
	if got := read(t, other, &sdk.ReadRequest{ID: theirs.ID}); !got.Exists {
		t.Fatal("a later call removed the other stack's resource")
	}
	// Deleted with its own key, it goes.
	if _, err := other.Delete(ctx, &sdk.DeleteRequest{Type: "network", Name: "n", ID: theirs.ID, ExpectedKey: "k-other"}); err != nil {
		t.Fatal(err)
	}
	if read(t, other, &sdk.ReadRequest{ID: theirs.ID}).Exists {
		t.Fatal("a Delete expecting its own key left it")
	}
}

// A delete cut short after the move is finished by the next call only if
// what was moved is the resource checked (the id and key the pending record
// names); anything else is left where it is.
func TestFinishedDeleteRemovesOnlyWhatWasChecked(t *testing.T) {
	ctx := context.Background()
	p, root := configured(t, nil)
	mine := create(t, p, "network", "mine", "k-mine", nil)
	create(t, p, "network", "theirs", "k-theirs", nil)
	doomed := filepath.Join(root, "network", ".del-0123456789abcdef")
	// The pending record names mine, but the folder moved is theirs.
	if err := os.Rename(filepath.Join(root, "network", "theirs"), doomed); err != nil {
		t.Fatal(err)
	}
	if err := localprovider.RecordPendingDelete(root, doomed, mine.ID, "k-mine"); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Delete(ctx, &sdk.DeleteRequest{Type: "network", Name: "gone", ID: "local-network-gone-12345678"}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(doomed, localprovider.MetadataFile)); err != nil {
		t.Fatalf("a folder the pending delete did not check was removed: %v", err)
	}
}
