package main

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"
)

// The README's first stack is a walkthrough a newcomer types in; the script
// readme_first_stack.txtar runs it. These tests keep the two the same: the
// spec files the README shows are the script's files, byte for byte, and the
// commands the README shows are the script's commands, in order.
const (
	readmePath       = "../../README.md"
	firstStackScript = "testdata/script/readme_first_stack.txtar"
	firstStackTitle  = "## A first stack"
)

// readmeSection returns the lines of README.md's section that starts with
// the heading title, up to the next heading of the same level.
func readmeSection(t *testing.T, title string) []string {
	t.Helper()
	data, err := os.ReadFile(readmePath)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	in := false
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "## ") {
			if in {
				break
			}
			in = line == title
		}
		if in {
			lines = append(lines, line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(lines) == 0 {
		t.Fatalf("%s has no section %q", readmePath, title)
	}
	return lines
}

// namedBlocks returns the fenced code blocks whose info string names a file
// ("```yaml shop.yaml"), by that name.
func namedBlocks(t *testing.T, lines []string) map[string]string {
	t.Helper()
	open := regexp.MustCompile("^```[a-z]+ +([^ ]+)$")
	blocks := map[string]string{}
	for i := 0; i < len(lines); i++ {
		m := open.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		var b strings.Builder
		j := i + 1
		for ; j < len(lines) && lines[j] != "```"; j++ {
			b.WriteString(lines[j])
			b.WriteByte('\n')
		}
		if j == len(lines) {
			t.Fatalf("README: the block of %s is not closed", m[1])
		}
		if _, dup := blocks[m[1]]; dup {
			t.Fatalf("README: two blocks name %s", m[1])
		}
		blocks[m[1]] = b.String()
		i = j
	}
	return blocks
}

// scriptCommand turns a script line running bulwark into the command line a
// person types ("exits 11 bulwark apply …" → "bulwark apply …"), or "".
var scriptCommand = regexp.MustCompile(`^(?:exec |! exec |exits [0-9]+ )(bulwark .*)$`)

func TestReadmeFirstStackFiles(t *testing.T) {
	ar, err := txtar.ParseFile(firstStackScript)
	if err != nil {
		t.Fatal(err)
	}
	blocks := namedBlocks(t, readmeSection(t, firstStackTitle))
	if len(blocks) == 0 {
		t.Fatal("README's first stack shows no spec file (a block opened with ```yaml NAME)")
	}
	files := map[string]string{}
	for _, f := range ar.Files {
		files[f.Name] = string(f.Data)
	}
	for name, text := range blocks {
		got, ok := files[name]
		if !ok {
			t.Errorf("README shows %s, the script has no such file", name)
			continue
		}
		if got != text {
			t.Errorf("%s differs between README.md and %s:\nREADME:\n%s\nscript:\n%s", name, filepath.Base(firstStackScript), text, got)
		}
	}
	for name := range files {
		if _, ok := blocks[name]; !ok {
			t.Errorf("the script has %s, which the README does not show", name)
		}
	}
}

func TestReadmeFirstStackCommands(t *testing.T) {
	ar, err := txtar.ParseFile(firstStackScript)
	if err != nil {
		t.Fatal(err)
	}
	var script []string
	for _, line := range strings.Split(string(ar.Comment), "\n") {
		if m := scriptCommand.FindStringSubmatch(strings.TrimSpace(line)); m != nil {
			script = append(script, m[1])
		}
	}
	var readme []string
	for _, line := range readmeSection(t, firstStackTitle) {
		if cmd, ok := strings.CutPrefix(line, "$ "); ok && strings.HasPrefix(cmd, "bulwark ") {
			readme = append(readme, cmd)
		}
	}
	if len(readme) < 5 {
		t.Fatalf("README's first stack shows %d bulwark commands; expected the walkthrough's", len(readme))
	}
	// Every README command, in the README's order, is a command of the
	// script; the script may run more between them (checks of its own).
	i := 0
	for _, cmd := range script {
		if i < len(readme) && cmd == readme[i] {
			i++
		}
	}
	if i < len(readme) {
		t.Errorf("README command %q (and what follows it) is not run by %s in that order;\nthe script runs:\n  %s",
			readme[i], filepath.Base(firstStackScript), strings.Join(script, "\n  "))
	}
}
