package storage_test

import (
	"errors"
	"github.com/bulwark-iac/bulwark/core/protection"
	"os"
	"testing"
	"time"

	"github.com/bulwark-iac/bulwark/core/journal"
	"github.com/bulwark-iac/bulwark/core/state"
	"github.com/bulwark-iac/bulwark/core/storage"
)

func TestNextLineage(t *testing.T) {
	cases := []struct {
		name      string
		m         *storage.Meta
		adoptable bool
		want      string
		refused   bool
	}{
		{name: "no meta", want: "L1"},
		{name: "meta without lineage", m: &storage.Meta{}, want: "L1"},
		{name: "same lineage", m: &storage.Meta{Lineage: "L1"}, want: "L1"},
		{name: "another, adoptable", m: &storage.Meta{Lineage: "L2"}, adoptable: true, want: "L2"},
		{name: "another, not adoptable", m: &storage.Meta{Lineage: "L2"}, want: "L1", refused: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := storage.NextLineage("loc", "L1", c.m, c.adoptable)
			if got != c.want || errors.Is(err, storage.ErrLineage) != c.refused {
				t.Fatalf("NextLineage = %q, %v; want %q, refused %v", got, err, c.want, c.refused)
			}
		})
	}
}

func TestSealChangeRefusesWhatLoadWould(t *testing.T) {
	cases := []struct {
		name string
		put  *state.Resource
		want func(error) bool
	}{
		{name: "nil put", put: nil, want: func(err error) bool { return errors.Is(err, storage.ErrNoName) }},
		{name: "no name", put: &state.Resource{Protection: protection.Durable}, want: func(err error) bool { return errors.Is(err, storage.ErrNoName) }},
		{name: "unknown level", put: &state.Resource{Name: "a", Protection: protection.Level(99)}, want: func(err error) bool {
			var le *state.LevelError
			return errors.As(err, &le)
		}},
		{name: "good", put: &state.Resource{Name: "a", Protection: protection.Durable}, want: func(err error) bool { return err == nil }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := storage.SealChange(storage.Change{Put: []*state.Resource{c.put}}, "here", state.Sealing{})
			if !c.want(err) {
				t.Fatalf("SealChange: %v", err)
			}
		})
	}
}

func TestSealMetaKeepsLineageAndDropsSpecs(t *testing.T) {
	m := &storage.Meta{Lineage: "L1", Current: 2, Revisions: []state.Revision{{N: 1, Spec: "text"}}}
	got, err := storage.SealMeta(m, state.Sealing{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Lineage != "L1" || got.Current != 2 || got.Revisions[0].Spec != "" {
		t.Fatalf("SealMeta = %+v", got)
	}
	if m.Revisions[0].Spec != "text" {
		t.Fatal("SealMeta changed its argument")
	}
}

func TestStampAndHolderDefaults(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("x", 3600))
	recs := []journal.Record{{}, {ID: "kept", Time: now.Add(time.Hour)}}
	storage.Stamp(recs, now, "L1")
	if recs[0].ID == "" || !recs[0].Time.Equal(now) || recs[1].ID != "kept" || !recs[1].Time.Equal(now.Add(time.Hour)) || recs[0].Lineage != "L1" || recs[1].Lineage != "L1" {
		t.Fatalf("Stamp: %+v", recs)
	}
	h := storage.HolderDefaults(storage.Holder{Op: "op"}, now)
	if h.PID != os.Getpid() || h.Host == "" || !h.Since.Equal(now) || h.Since.Location() != time.UTC {
		t.Fatalf("HolderDefaults: %+v", h)
	}
	h = storage.HolderDefaults(storage.Holder{Op: "op", PID: 7, Host: "h", Since: now.Add(-time.Hour)}, now)
	if h.PID != 7 || h.Host != "h" || !h.Since.Equal(now.Add(-time.Hour)) {
		t.Fatalf("HolderDefaults overrode what was set: %+v", h)
	}
}
