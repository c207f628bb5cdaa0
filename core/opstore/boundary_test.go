package opstore

import (
	"testing"

	"github.com/bulwark-iac/bulwark/core/journal"
)

// TestBoundaryKind: the kind the failpoints' tally gives a journal record
// has its four fields always ("-" for a missing one), marks the engine's
// own steps meta: and a set-aside object's steps, and never holds a space
// or an extra slash (the crash harness reads it by position).
func TestBoundaryKind(t *testing.T) {
	for _, c := range []struct {
		r    journal.Record
		want string
	}{
		{journal.Record{Kind: "op", Status: "running"}, "op/running/-/-"},
		{journal.Record{Kind: "step", Status: "started", Phase: "execute", Step: "db", Resource: "db", Action: "create"}, "step/started/execute/create"},
		{journal.Record{Kind: "step", Status: "ok", Phase: "execute", Step: "backup", Action: "backup"}, "step/ok/execute/meta:backup"},
		{journal.Record{Kind: "step", Status: "ok", Phase: "verify", Step: "vpc#op1", Resource: "vpc", Action: "delete"}, "step/ok/verify/delete/set-aside"},
		{journal.Record{Kind: "step", Status: "odd one", Phase: "a/b", Step: "x", Resource: "x", Action: "c d"}, "step/odd_one/a_b/c_d"},
	} {
		if got := boundaryKind(c.r); got != c.want {
			t.Errorf("boundaryKind(%+v) = %q, want %q", c.r, got, c.want)
		}
	}
}
