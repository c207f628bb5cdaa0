package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An --events file that is another name (a hard link) of a file, such as a
// stack's journal kept in another state folder, is refused before anything
// runs, and nothing is appended to it.
func TestEventsFileWithHardLinksRefused(t *testing.T) {
	dir := t.TempDir()
	journal := filepath.Join(dir, "journal.jsonl")
	if err := os.WriteFile(journal, []byte("{\"kind\":\"op\"}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "events.jsonl")
	if err := os.Link(journal, link); err != nil {
		t.Skipf("no hard links here: %v", err)
	}
	spec := filepath.Join(dir, "s.yaml")
	os.WriteFile(spec, []byte("version: 1\nstack: s\nproviders:\n  mock: {}\nresources: []\n"), 0o600)
	var out, errb bytes.Buffer
	code := run([]string{"--state-dir", filepath.Join(dir, "state"), "--events", link, "plan", spec}, strings.NewReader(""), &out, &errb)
	if code != 1 || !strings.Contains(errb.String(), "hard links") {
		t.Fatalf("exit %d, stderr %q: want exit 1 naming the hard links", code, errb.String())
	}
	if b, _ := os.ReadFile(journal); string(b) != "{\"kind\":\"op\"}\n" {
		t.Errorf("the linked file was written: %q", b)
	}
}

// The state folder is found behind any spelling of the events path: a
// link to it (also one that dangles, to a folder not made yet), "..", a
// link inside a link.
func TestEventsPathResolvedToTheStateFolder(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	os.Symlink(state, filepath.Join(dir, "dangling")) // state does not exist yet
	os.Mkdir(filepath.Join(dir, "sub"), 0o700)
	os.Symlink("../dangling", filepath.Join(dir, "sub", "up"))
	want, _ := resolvedPath(state)
	for _, p := range []string{"dangling/s/journal.jsonl", "sub/../state/x", "sub/up/s/x", "dangling"} {
		got, err := resolvedPath(filepath.Join(dir, p))
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		if rel, err := filepath.Rel(want, got); err != nil || strings.HasPrefix(rel, "..") {
			t.Errorf("%s resolves to %s, not under %s", p, got, want)
		}
	}
}
