package world

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestStore(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "w"))
	if err != nil {
		t.Fatal(err)
	}
	desc := "d"
	a := &Thing{Type: "x_thing", ID: "a1", Name: "a", Description: &desc, Tags: map[string]string{}, Rules: []Rule{}}
	b := &Thing{Type: "x_thing", ID: "b2", Name: "b"}
	for _, o := range []*Thing{b, a} {
		if err := s.Put(o); err != nil {
			t.Fatal(err)
		}
	}
	// A temporary file a killed writer left behind is no object.
	if err := os.WriteFile(filepath.Join(s.Dir, "x_thing", ".tmp-c3-123"), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get("x_thing", "a1")
	if err != nil {
		t.Fatal(err)
	}
	// Empty and nil stay apart: a configuration's {} must read back as {}.
	if got.Name != "a" || *got.Description != "d" || got.Tags == nil || got.Rules == nil || got.Secret != nil {
		t.Errorf("Get: %+v", got)
	}
	all, err := s.List("x_thing")
	if err != nil || len(all) != 2 || all[0].ID != "a1" || all[1].ID != "b2" {
		t.Fatalf("List: %v, %v", all, err)
	}
	if o, err := s.FindByName("x_thing", "b"); err != nil || o.ID != "b2" {
		t.Errorf("FindByName(b): %v, %v", o, err)
	}
	if err := s.Put(&Thing{Type: "x_thing", ID: "b3", Name: "b"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.FindByName("x_thing", "b"); err == nil {
		t.Error("FindByName found one of two objects of the same name")
	}
	if err := s.Delete("x_thing", "a1"); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete("x_thing", "a1"); err != nil {
		t.Errorf("a second Delete: %v", err)
	}
	if _, err := s.Get("x_thing", "a1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get after Delete: %v", err)
	}
	if _, err := s.FindByName("x_thing", "a"); !errors.Is(err, ErrNotFound) {
		t.Errorf("FindByName after Delete: %v", err)
	}
	if all, err := s.List("y_thing"); err != nil || len(all) != 0 {
		t.Errorf("List of a type never written: %v, %v", all, err)
	}
}

// Ids come from users (import): none may name a file outside the world.
func TestInvalidNames(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"", ".", "..", "../x", "a/b", `a\b`, "a\x00b"} {
		if _, err := s.Get("x_thing", id); err == nil || errors.Is(err, ErrNotFound) {
			t.Errorf("Get(%q): %v, want an invalid-object error", id, err)
		}
		if err := s.Put(&Thing{Type: "x_thing", ID: id}); err == nil {
			t.Errorf("Put(%q) succeeded", id)
		}
	}
}

func TestOpen(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "from-env")
	t.Setenv(EnvDir, dir)
	s, err := Open("")
	if err != nil || s.Dir != dir {
		t.Fatalf("Open with %s set: %v, %v", EnvDir, s, err)
	}
	t.Setenv(EnvDir, "")
	if _, err := Open(""); err == nil {
		t.Error("Open with no folder succeeded")
	}
}

func TestLatency(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Latency(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Errorf("Latency on a canceled context: %v", err)
	}
	if err := Latency(context.Background(), 0); err != nil {
		t.Errorf("Latency(0): %v", err)
	}
}
