package state

import (
	"errors"
	"github.com/bulwark-iac/bulwark/core/protection"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestMutatePersistsAtomicallyWithMode(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "demo")
	s, err := Open(dir, "demo")
	if err != nil {
		t.Fatal(err)
	}
	err = s.Mutate(func(st *State) error {
		st.Resources["net"] = &Resource{Name: "net", Type: "network", ID: "n-1", Protection: protection.Ephemeral, Attributes: map[string]any{"size": 2.0}}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("state mode = %v, want 0600", fi.Mode().Perm())
	}
	di, _ := os.Stat(dir)
	if di.Mode().Perm() != 0o700 {
		t.Errorf("folder mode = %v, want 0700", di.Mode().Perm())
	}
	again, err := Open(dir, "demo")
	if err != nil {
		t.Fatal(err)
	}
	got := again.Snapshot()
	if got.Resources["net"] == nil || got.Resources["net"].ID != "n-1" || got.Serial != 1 {
		t.Fatalf("reloaded state = %+v", got)
	}
}

func TestMutateErrorChangesNothing(t *testing.T) {
	s, err := Open(t.TempDir(), "demo")
	if err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	err = s.Mutate(func(st *State) error {
		st.Resources["x"] = &Resource{Name: "x"}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	if len(s.Snapshot().Resources) != 0 {
		t.Fatal("failed mutation leaked into memory")
	}
}

func TestLoadRefusesTamperedFile(t *testing.T) {
	dir := t.TempDir()
	s, _ := Open(dir, "demo")
	if err := s.Mutate(func(st *State) error {
		st.Resources["db"] = &Resource{Name: "db", Protection: protection.Protected}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, FileName)
	b, _ := os.ReadFile(path)
	os.WriteFile(path, []byte(strings.Replace(string(b), "protected", "ephemeral", 1)), 0o600)
	if _, err := Open(dir, "demo"); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("tampered state loaded: err = %v", err)
	}
}

func TestOpenRefusesOtherStack(t *testing.T) {
	dir := t.TempDir()
	s, _ := Open(dir, "one")
	s.Mutate(func(*State) error { return nil })
	if _, err := Open(dir, "two"); err == nil {
		t.Fatal("opened another stack's state")
	}
}

func TestConcurrentMutations(t *testing.T) {
	s, _ := Open(t.TempDir(), "demo")
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			name := string(rune('a' + i))
			if err := s.Mutate(func(st *State) error {
				st.Resources[name] = &Resource{Name: name, Protection: protection.Ephemeral}
				return nil
			}); err != nil {
				t.Error(err)
			}
		}(i)
	}
	wg.Wait()
	again, err := Open(s.Dir(), "demo")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(again.Snapshot().Resources); n != 20 {
		t.Fatalf("%d resources on disk, want 20", n)
	}
}
