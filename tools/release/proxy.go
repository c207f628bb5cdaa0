package release

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/mod/module"
	"golang.org/x/mod/zip"
)

// BuildProxy writes a module proxy into the folder out (use it as
// GOPROXY=file://OUT) that serves each published module of the working tree
// at version: its @v/list, .info, .mod (the go.mod as it is) and .zip (made
// with golang.org/x/mod/zip from the files git knows in the module's folder,
// uncommitted edits included, nested modules left out). It is what a tag of
// every module at version would publish.
func BuildProxy(ctx context.Context, root string, mods []Module, version, out string, now time.Time) error {
	if err := module.Check(Prefix+"sdk", version); err != nil {
		return fmt.Errorf("version %q: %w", version, err)
	}
	for _, m := range mods {
		if !m.Published {
			continue
		}
		files, err := moduleFiles(ctx, root, mods, m)
		if err != nil {
			return err
		}
		esc, err := module.EscapePath(m.Path)
		if err != nil {
			return err
		}
		ev, err := module.EscapeVersion(version)
		if err != nil {
			return err
		}
		dir := filepath.Join(out, filepath.FromSlash(esc), "@v")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		mv := module.Version{Path: m.Path, Version: version}
		zf, err := os.Create(filepath.Join(dir, ev+".zip"))
		if err != nil {
			return err
		}
		if err := zip.Create(zf, mv, files); err != nil {
			zf.Close()
			return fmt.Errorf("zip %s: %w", mv, err)
		}
		if err := zf.Close(); err != nil {
			return err
		}
		gomod, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(m.Dir), "go.mod"))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, ev+".mod"), gomod, 0o644); err != nil {
			return err
		}
		info, err := json.Marshal(struct {
			Version string
			Time    time.Time
		}{version, now.UTC().Truncate(time.Second)})
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, ev+".info"), info, 0o644); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, "list"), []byte(version+"\n"), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// moduleFiles lists the files of m that a tag would publish: those git
// tracks or would track (new, not ignored) under m's folder, minus nested
// modules' folders and files deleted in the working tree.
func moduleFiles(ctx context.Context, root string, mods []Module, m Module) ([]zip.File, error) {
	out, err := git(ctx, root, "ls-files", "-z", "-co", "--exclude-standard", "--", m.Dir)
	if err != nil {
		return nil, err
	}
	var files []zip.File
	for _, rel := range strings.Split(out, "\x00") {
		if rel == "" {
			continue
		}
		nested := false
		for _, o := range mods {
			if o.Dir != m.Dir && strings.HasPrefix(rel, o.Dir+"/") && strings.HasPrefix(o.Dir, m.Dir+"/") {
				nested = true
			}
		}
		if nested {
			continue
		}
		abs := filepath.Join(root, filepath.FromSlash(rel))
		fi, err := os.Lstat(abs)
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if !fi.Mode().IsRegular() {
			continue // x/mod/zip refuses symbolic links; a tag's zip has none either
		}
		inMod := strings.TrimPrefix(rel, m.Dir+"/")
		files = append(files, diskFile{path: path.Clean(inMod), abs: abs, info: fi})
	}
	return files, nil
}

type diskFile struct {
	path string
	abs  string
	info os.FileInfo
}

func (f diskFile) Path() string                 { return f.path }
func (f diskFile) Lstat() (os.FileInfo, error)  { return f.info, nil }
func (f diskFile) Open() (io.ReadCloser, error) { return os.Open(f.abs) }
