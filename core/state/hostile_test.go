package state

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bulwark-iac/bulwark/core/nofollow"
	"github.com/bulwark-iac/bulwark/core/protection"
)

// A state.json that is a symbolic link is refused by Load and Open, and what
// it points to is left as it was, even after a Mutate was asked for.
func TestSymlinkedStateIsRefused(t *testing.T) {
	dir := t.TempDir()
	outside := filepath.Join(t.TempDir(), "precious")
	os.WriteFile(outside, []byte("keep me\n"), 0o644)
	path := filepath.Join(dir, FileName)
	if err := os.Symlink(outside, path); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path); !errors.Is(err, nofollow.ErrRefused) || !strings.Contains(err.Error(), path) {
		t.Fatalf("Load: %v", err)
	}
	if _, err := Open(dir, "s"); !errors.Is(err, nofollow.ErrRefused) {
		t.Fatalf("Open: %v", err)
	}
	if b, _ := os.ReadFile(outside); string(b) != "keep me\n" {
		t.Fatalf("target changed: %q", b)
	}
}

// A link planted after Open is refused by the write, not replaced silently.
func TestMutateRefusesALinkPlantedLater(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, "s")
	if err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "precious")
	os.WriteFile(outside, []byte("keep me\n"), 0o644)
	os.Symlink(outside, filepath.Join(dir, FileName))
	if err := s.Mutate(func(*State) error { return nil }); !errors.Is(err, nofollow.ErrRefused) {
		t.Fatalf("Mutate: %v", err)
	}
	if b, _ := os.ReadFile(outside); string(b) != "keep me\n" {
		t.Fatalf("target changed: %q", b)
	}
}

// A stack folder that is a symbolic link is refused.
func TestSymlinkedStackFolderIsRefused(t *testing.T) {
	real := t.TempDir()
	link := filepath.Join(t.TempDir(), "s")
	os.Symlink(real, link)
	if _, err := Open(link, "s"); !errors.Is(err, nofollow.ErrRefused) {
		t.Fatalf("Open: %v", err)
	}
}

// A recorded protection level that is not one bulwark knows is an error
// naming the resource: "" does not silently mean ephemeral, and no unknown
// word may lead anywhere near a delete.
func TestUnknownRecordedProtectionIsAnError(t *testing.T) {
	for _, level := range []string{"", "weird", "Protected", " durable", "unspecified"} {
		dir := t.TempDir()
		s, err := Open(dir, "s")
		if err != nil {
			t.Fatal(err)
		}
		// Written as an older or hand-edited file would be: with a good
		// checksum, so only the level is wrong.
		st := s.Snapshot()
		st.Resources["db"] = &Resource{Name: "db", Type: "t", Provider: "p", ID: "1", Protection: protection.Ephemeral}
		if err := writeWords(filepath.Join(dir, FileName), st, map[string]string{"db": level}, nil); err != nil {
			t.Fatal(err)
		}
		_, err = Load(filepath.Join(dir, FileName))
		var le *LevelError
		if !errors.As(err, &le) || le.Resource != "db" || le.Level != level {
			t.Fatalf("level %q: Load: %v, want a LevelError naming db", level, err)
		}
		if !strings.Contains(err.Error(), `resource "db"`) {
			t.Fatalf("level %q: %v does not name the resource", level, err)
		}
	}
	for _, level := range []protection.Level{protection.Ephemeral, protection.Durable, protection.Protected} {
		dir := t.TempDir()
		st := &State{Version: Version, Stack: "s", Resources: map[string]*Resource{
			"db":  {Name: "db", Protection: level, Prior: &Prior{Op: "op_1", Protection: level}},
			"old": {Name: "old", Protection: level, Prior: &Prior{Op: "op_1"}}}}
		if err := write(filepath.Join(dir, FileName), st); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(filepath.Join(dir, FileName)); err != nil {
			t.Fatalf("level %q: %v", level, err)
		}
	}
}

func TestUnknownPriorProtectionIsAnError(t *testing.T) {
	dir := t.TempDir()
	st := &State{Version: Version, Stack: "s", Resources: map[string]*Resource{
		"db": {Name: "db", Protection: protection.Durable, Prior: &Prior{Op: "op_1", Protection: protection.Ephemeral}}}}
	if err := writeWords(filepath.Join(dir, FileName), st, nil, map[string]string{"db": "weird"}); err != nil {
		t.Fatal(err)
	}
	var le *LevelError
	if _, err := Load(filepath.Join(dir, FileName)); !errors.As(err, &le) || !strings.Contains(le.Resource, "db") {
		t.Fatalf("Load: %v", err)
	}
}

// writeWords writes st to path as a state file whose resources (words)
// and priors (priors) named record the protection words given, as an
// older or hand-edited file would: with a good checksum, so only the
// level is wrong. (No level in memory has an unknown word.)
func writeWords(path string, st *State, words, priors map[string]string) error {
	if err := write(path, st); err != nil {
		return err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var env struct {
		State map[string]any `json:"state"`
	}
	if err := json.Unmarshal(b, &env); err != nil {
		return err
	}
	resources := env.State["resources"].(map[string]any)
	for name, w := range words {
		resources[name].(map[string]any)["protection"] = w
	}
	for name, w := range priors {
		resources[name].(map[string]any)["prior"].(map[string]any)["protection"] = w
	}
	body, err := json.Marshal(env.State)
	if err != nil {
		return err
	}
	out, err := json.Marshal(map[string]any{"checksum": checksum(body), "state": json.RawMessage(body)})
	if err != nil {
		return err
	}
	return os.WriteFile(path, out, 0o600)
}

// Load refuses a state whose stack folder is a symbolic link, even for a
// read.
func TestLoadThroughALinkedStackFolderIsRefused(t *testing.T) {
	real := t.TempDir()
	s, _ := Open(real, "s")
	s.Mutate(func(*State) error { return nil })
	link := filepath.Join(t.TempDir(), "s")
	os.Symlink(real, link)
	if _, err := Load(filepath.Join(link, FileName)); !errors.Is(err, nofollow.ErrRefused) {
		t.Fatalf("Load: %v", err)
	}
}

// Mutate never writes a level Load would refuse.
func TestMutateRefusesAnUnknownLevel(t *testing.T) {
	s, err := Open(t.TempDir(), "s")
	if err != nil {
		t.Fatal(err)
	}
	// No level (what a resource given none holds), or one off the ladder.
	for _, level := range []protection.Level{protection.Unspecified, protection.Level(99)} {
		err = s.Mutate(func(st *State) error {
			st.Resources["db"] = &Resource{Name: "db", Protection: level}
			return nil
		})
		var le *LevelError
		if !errors.As(err, &le) || le.Resource != "db" {
			t.Fatalf("Mutate: %v", err)
		}
	}
	if _, err := os.Stat(filepath.Join(s.Dir(), FileName)); !os.IsNotExist(err) {
		t.Fatalf("a refused state was written: %v", err)
	}
}

// The repair an unknown level's error gives names a folder beside a file
// backend's state, and never a path joined onto a remote backend's URL.
func TestLevelErrorNamesWhereTheBackupsAre(t *testing.T) {
	tests := []struct {
		path, want, never string
	}{
		{path: "/srv/stack/.bulwark/web/state.json", want: "/srv/stack/.bulwark/web/backups"},
		{path: "postgres://bulwark@db:5432/infra?sslmode=disable#web", want: "the backups that backend keeps", never: "/backups"},
		{path: "s3://team-state/prod/web", want: "the backups that backend keeps", never: "/backups"},
	}
	for _, tt := range tests {
		msg := (&LevelError{Path: tt.path, Resource: "db", Level: "sacred"}).Error()
		if !strings.Contains(msg, tt.want) {
			t.Errorf("%s: %q does not name %q", tt.path, msg, tt.want)
		}
		if tt.never != "" && strings.Contains(msg, tt.never) {
			t.Errorf("%s: %q names a path joined onto a URL", tt.path, msg)
		}
	}
}
