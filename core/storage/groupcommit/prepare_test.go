package groupcommit_test

import (
	"errors"
	"github.com/bulwark-iac/bulwark/core/protection"
	"testing"
	"time"

	"github.com/bulwark-iac/bulwark/core/journal"
	"github.com/bulwark-iac/bulwark/core/state"
	"github.com/bulwark-iac/bulwark/core/storage"
	"github.com/bulwark-iac/bulwark/core/storage/groupcommit"
)

// TestPrepareFailsACommitAlone: in one group, a Commit of another lineage,
// one whose put Load would refuse, and one its backend cannot encode each
// fail alone; the others are accepted in order, stamped, with the serials
// of what they change.
func TestPrepareFailsACommitAlone(t *testing.T) {
	put := func(name string, level protection.Level) storage.Commit {
		return storage.Commit{Records: []journal.Record{{Op: "op", Kind: journal.KindStep}},
			Change: storage.Change{Put: []*state.Resource{{Name: name, Protection: level}}}}
	}
	cases := []struct {
		name    string
		commit  storage.Commit
		failed  func(error) bool
		serial  int64
		encodes bool
	}{
		{name: "ok", commit: put("a", protection.Durable), serial: 6},
		{name: "records alone", commit: storage.Commit{Records: []journal.Record{{Op: "op"}}}, serial: 6},
		{name: "another lineage", commit: storage.Commit{Change: storage.Change{Meta: &storage.Meta{Lineage: "L2"}}},
			failed: func(err error) bool { return errors.Is(err, storage.ErrLineage) }},
		{name: "unknown level", commit: put("b", protection.Level(99)),
			failed: func(err error) bool { var le *state.LevelError; return errors.As(err, &le) }},
		{name: "encode fails", commit: put("c", protection.Durable), encodes: true,
			failed: func(err error) bool { return errors.Is(err, errOdd) }},
		{name: "ok after", commit: put("d", protection.Durable), serial: 7},
	}
	var group []*groupcommit.Pending
	for _, c := range cases {
		group = append(group, &groupcommit.Pending{Commit: c.commit})
	}
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var encoded []string
	acc, lineage, serial := groupcommit.Prepare(group, groupcommit.Stack{Loc: "loc", Where: "here", Lineage: "L1", Serial: 5, Now: now},
		func(a *groupcommit.Accepted) error {
			if len(a.Sealed.Put) > 0 && a.Sealed.Put[0].Name == "c" {
				return errOdd
			}
			encoded = append(encoded, a.Commit.Records[0].Op)
			return nil
		})
	if lineage != "L1" || serial != 7 || len(acc) != 3 || len(encoded) != 3 {
		t.Fatalf("Prepare: %d accepted (%d encoded), lineage %q, serial %d; want 3, L1, 7", len(acc), len(encoded), lineage, serial)
	}
	for i, c := range cases {
		p := group[i]
		if c.failed != nil {
			if !c.failed(p.Err) {
				t.Errorf("%s: err %v", c.name, p.Err)
			}
			continue
		}
		if p.Err != nil || p.Serial != c.serial {
			t.Errorf("%s: err %v, serial %d; want nil, %d", c.name, p.Err, p.Serial, c.serial)
		}
		for _, r := range p.Commit.Records {
			if r.ID == "" || !r.Time.Equal(now) || r.Lineage != "L1" {
				t.Errorf("%s: record not stamped: %+v", c.name, r)
			}
		}
	}
}
