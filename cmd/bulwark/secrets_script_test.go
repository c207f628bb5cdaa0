package main

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"
)

// absent VALUE PATH... fails when VALUE appears in any file at or under the
// paths (folders are walked), naming the file: a sensitive value must be in
// clear nowhere bulwark writes. A path that does not exist fails too, so a
// typo cannot make the check vacuous. Write the value as $NAME: the script
// expands it, and the failure never prints it.
func cmdAbsent(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: absent VALUE PATH...")
	}
	value := args[0]
	if value == "" {
		ts.Fatalf("absent: empty value")
	}
	files := 0
	for _, p := range args[1:] {
		root := ts.MkAbs(p)
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.Type().IsRegular() {
				return nil
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			files++
			if i := bytes.Index(b, []byte(value)); i >= 0 {
				rel, _ := filepath.Rel(ts.MkAbs("."), path)
				ts.Fatalf("%s holds a sensitive value in clear (byte %d)", rel, i)
			}
			return nil
		})
		ts.Check(err)
	}
	ts.Logf("absent: %d file(s) checked", files)
}

// sealedValueRE matches a sealed value, its key id the first group.
var sealedValueRE = regexp.MustCompile(`sealed:v1:([A-Za-z0-9_-]+):[A-Za-z0-9_-]+`)

// sealed-in KEYID DUMP SECTION... succeeds when a value sealed under key
// KEYID is in a section of DUMP (a backend-dump file: "== NAME" headers)
// whose name holds one of the SECTION words ("backups", "revisions"); with
// "!", fails when one is. Either way every SECTION word must find sealed
// values, so the check cannot pass for want of anything to check; a word
// ending in "?" ("journal?": a journal compacted to summaries holds none)
// need only name a section of DUMP.
func cmdSealedIn(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 3 || args[0] == "" {
		ts.Fatalf("usage: sealed-in KEYID DUMP SECTION...")
	}
	id := args[0]
	b, err := os.ReadFile(ts.MkAbs(args[1]))
	ts.Check(err)
	words := args[2:]
	maybeNone := map[string]bool{}
	for i, w := range words {
		if c, ok := strings.CutSuffix(w, "?"); ok {
			words[i] = c
			maybeNone[c] = true
		}
	}
	sections := map[string]int{} // by word: sections named
	sealed := map[string]int{}   // by word: sealed values seen
	under := map[string]int{}    // by word: those under id
	section := ""
	for _, line := range strings.Split(string(b), "\n") {
		if name, ok := strings.CutPrefix(line, "== "); ok {
			section = name
			for _, w := range words {
				if strings.Contains(section, w) {
					sections[w]++
				}
			}
			continue
		}
		for _, w := range words {
			if !strings.Contains(section, w) {
				continue
			}
			for _, m := range sealedValueRE.FindAllStringSubmatch(line, -1) {
				sealed[w]++
				if m[1] == id {
					under[w]++
				}
			}
		}
	}
	found := 0
	for _, w := range words {
		if sections[w] == 0 {
			ts.Fatalf("sealed-in: no section of %s is named for %q: nothing to check", args[1], w)
		}
		if sealed[w] == 0 && !maybeNone[w] {
			ts.Fatalf("sealed-in: no sealed value in the %s of %s: nothing to check", w, args[1])
		}
		ts.Logf("sealed-in: %s: %d sealed value(s), %d under key %s", w, sealed[w], under[w], id)
		found += under[w]
	}
	if neg && found > 0 {
		ts.Fatalf("%d value(s) in %s are still sealed under key %s", found, args[1], id)
	}
	if !neg && found == 0 {
		ts.Fatalf("no value in %s is sealed under key %s", args[1], id)
	}
}
