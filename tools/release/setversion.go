package release

import (
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/semver"
)

// SetVersion makes every module require its siblings at version, and go.work
// replace that version of each required sibling with its folder: the edit a
// release commit makes before every module is tagged at version (tags
// sdk/VERSION, core/VERSION, cmd/bulwark/VERSION, plugins/NAME/VERSION).
func SetVersion(root string, mods []Module, version string) error {
	if !semver.IsValid(version) || semver.Build(version) != "" {
		return fmt.Errorf("version %q: want a semantic version such as v0.2.0", version)
	}
	required := map[string]string{} // sibling path -> its old version
	for _, m := range mods {
		changed := false
		for _, r := range m.File.Require {
			if !Sibling(mods, r.Mod.Path) {
				continue
			}
			required[r.Mod.Path] = r.Mod.Version
			if r.Mod.Version != version {
				if err := m.File.AddRequire(r.Mod.Path, version); err != nil {
					return err
				}
				changed = true
			}
		}
		if !changed {
			continue
		}
		m.File.Cleanup()
		data, err := m.File.Format()
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(root, filepath.FromSlash(m.Dir), "go.mod"), data, 0o644); err != nil {
			return err
		}
	}
	workPath := filepath.Join(root, "go.work")
	data, err := os.ReadFile(workPath)
	if err != nil {
		return err
	}
	w, err := modfile.ParseWork(workPath, data, nil)
	if err != nil {
		return err
	}
	// Each sibling's replace line gets the new version in place (its
	// comments stay); a required sibling with none gets one.
	have := map[string]bool{}
	for _, r := range w.Replace {
		if !Sibling(mods, r.Old.Path) || r.Old.Version == "" {
			continue
		}
		for i, tok := range r.Syntax.Token {
			if tok == r.Old.Version {
				r.Syntax.Token[i] = version
			}
		}
		r.Old.Version = version
		have[r.Old.Path] = true
	}
	for _, m := range mods {
		if _, ok := required[m.Path]; ok && !have[m.Path] {
			if err := w.AddReplace(m.Path, version, "./"+m.Dir, ""); err != nil {
				return err
			}
		}
	}
	w.Cleanup()
	return os.WriteFile(workPath, modfile.Format(w.Syntax), 0o644)
}
