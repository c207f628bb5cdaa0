package stack

import (
	"testing"

	"github.com/bulwark-iac/bulwark/core/journal"
)

// A rotation that succeeded and whose records are still whole (killed
// between its end record and the compaction after it) makes the next
// command's first checkpoint keep none whole; anything else keeps what the
// command was given.
func TestKeepOperationsAfterARotation(t *testing.T) {
	for _, tc := range []struct {
		name string
		recs []journal.Record
		want int
	}{
		{"none", nil, 7},
		{"an apply", []journal.Record{
			{Op: "a", Kind: journal.KindOp, Type: "update", Status: journal.OpRunning},
			{Op: "a", Kind: journal.KindOp, Status: journal.OpSucceeded},
		}, 7},
		{"a rotation running", []journal.Record{
			{Op: "r", Kind: journal.KindOp, Type: OpRotate, Status: journal.OpRunning},
		}, 7},
		{"a rotation failed", []journal.Record{
			{Op: "r", Kind: journal.KindOp, Type: OpRotate, Status: journal.OpRunning},
			{Op: "r", Kind: journal.KindOp, Status: journal.OpFailed},
		}, 7},
		{"a rotation succeeded", []journal.Record{
			{Op: "a", Kind: journal.KindOp, Type: "update", Status: journal.OpSucceeded},
			{Op: "r", Kind: journal.KindOp, Type: OpRotate, Status: journal.OpRunning},
			{Op: "r", Kind: journal.KindOp, Status: journal.OpSucceeded},
		}, journal.KeepNone},
	} {
		if got := keepOperations(tc.recs, 7); got != tc.want {
			t.Errorf("%s: keep %d, want %d", tc.name, got, tc.want)
		}
	}
}
