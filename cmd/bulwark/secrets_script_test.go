package main

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"

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
