package specfmt

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bulwark-iac/bulwark/core/spec"
)

// TestRepositorySpecs formats every spec in the repository's examples/ and
// testdata folders (YAML files, and the files inside testscript archives):
// each is formatted without changing meaning (Format checks it), and
// formatting the result changes nothing.
func TestRepositorySpecs(t *testing.T) {
	root := filepath.Join("..", "..")
	var n int
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == ".git" || d.Name() == "node_modules" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.Contains(path, "examples"+string(filepath.Separator)) && !strings.Contains(path, "testdata"+string(filepath.Separator)) {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var files map[string][]byte
		switch filepath.Ext(path) {
		case ".yaml", ".yml":
			files = map[string][]byte{path: data}
		case ".txtar", ".txt":
			files = archiveFiles(path, data)
		default:
			return nil
		}
		for name, src := range files {
			if _, err := spec.Parse(name, src); err != nil {
				continue // not a spec, or one written to be refused
			}
			n++
			checkFormat(t, name, src)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 50 {
		t.Fatalf("formatted only %d specs from the repository; the walk lost its way", n)
	}
	t.Logf("%d specs formatted", n)
}

// checkFormat formats src and its result, and fails unless the second
// pass changes nothing.
func checkFormat(t *testing.T, name string, src []byte) []byte {
	t.Helper()
	out, err := Format(name, src)
	if err != nil {
		t.Errorf("%s: %v", name, err)
		return nil
	}
	again, err := Format(name, out)
	if err != nil {
		t.Errorf("%s: second pass: %v\n%s", name, err, out)
		return nil
	}
	if !bytes.Equal(out, again) {
		t.Errorf("%s: not idempotent:\n--- first\n%s--- second\n%s", name, out, again)
	}
	return out
}

// archiveFiles splits a txtar archive into its files, named ARCHIVE/NAME.
func archiveFiles(archive string, data []byte) map[string][]byte {
	files := map[string][]byte{}
	var name string
	var cur []byte
	flush := func() {
		if name != "" {
			files[archive+"/"+name] = cur
		}
	}
	for _, line := range strings.SplitAfter(string(data), "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "-- ") && strings.HasSuffix(trimmed, " --") && len(trimmed) > 6 {
			flush()
			name, cur = strings.TrimSpace(trimmed[3:len(trimmed)-3]), nil
			continue
		}
		if name != "" {
			cur = append(cur, line...)
		}
	}
	flush()
	return files
}
