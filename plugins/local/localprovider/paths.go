package localprovider

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/bulwark-iac/bulwark/sdk"
)

// relPath returns the folder of a resource relative to the root, slash
// separated, checked lexically: the configured path when there is one, else
// <type>/<name>. A diagnostic about the configured path has the attribute
// path ["path"].
func relPath(typ, name string, cfg sdk.Attributes) (string, *sdk.Diagnostic) {
	if v, ok := cfg[attrPath]; ok && v != nil {
		s, ok := v.(string)
		if !ok {
			d := sdk.AttributeErrorf([]string{attrPath}, "path must be a string, not %T", v)
			return "", &d
		}
		rel, msg := checkRel(s)
		if msg != "" {
			d := sdk.AttributeErrorf([]string{attrPath}, "%s", msg)
			return "", &d
		}
		return rel, nil
	}
	for _, c := range []string{typ, name} {
		if msg := checkComponent(c); msg != "" {
			d := sdk.Errorf("resource %s (%s) cannot be a folder: %s", name, typ, msg)
			return "", &d
		}
	}
	return typ + "/" + name, nil
}

// checkRel checks a configured path and returns it cleaned, or why not.
func checkRel(s string) (string, string) {
	switch {
	case s == "":
		return "", "path must not be empty"
	case filepath.IsAbs(s) || strings.HasPrefix(s, "/") || filepath.VolumeName(s) != "":
		return "", fmt.Sprintf("path %q is absolute: it must be relative to the root", s)
	case strings.Contains(s, `\`):
		return "", fmt.Sprintf("path %q contains a backslash: separate folders with /", s)
	}
	var parts []string
	for p := range strings.SplitSeq(s, "/") {
		switch {
		case p == "" || p == ".":
			continue
		case p == "..":
			return "", fmt.Sprintf("path %q escapes the root: it must not contain ..", s)
		}
		if msg := checkComponent(p); msg != "" {
			return "", fmt.Sprintf("path %q: %s", s, msg)
		}
		parts = append(parts, p)
	}
	if len(parts) == 0 {
		return "", fmt.Sprintf("path %q names the root itself", s)
	}
	return strings.Join(parts, "/"), ""
}

// checkComponent says why c cannot be one folder name, or "".
func checkComponent(c string) string {
	switch {
	case c == "":
		return "empty folder name"
	case c == "." || c == "..":
		return fmt.Sprintf("%q is not a folder name", c)
	case strings.ContainsAny(c, `/\`) || strings.ContainsRune(c, 0):
		return fmt.Sprintf("folder name %q contains a separator", c)
	case strings.HasPrefix(c, "."):
		return fmt.Sprintf("folder name %q starts with '.', which is reserved for the provider", c)
	}
	return ""
}

// inside reports whether p is root or below it (root itself only when
// allowRoot). Both must be absolute and clean.
func inside(root, p string, allowRoot bool) bool {
	rel, err := filepath.Rel(root, p)
	if err != nil || filepath.IsAbs(rel) {
		return false
	}
	if rel == "." {
		return allowRoot
	}
	return rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// resolve returns the absolute folder of rel under root, following the
// symlinks on the way: one that leads outside the root, or that cannot be
// followed, is refused. The components that do not exist yet are appended
// as they are (they are plain names, checked by relPath).
func resolve(root, rel string) (string, error) {
	cur := root
	parts := strings.Split(rel, "/")
	for i, part := range parts {
		next := filepath.Join(cur, part)
		fi, err := os.Lstat(next)
		if errors.Is(err, fs.ErrNotExist) {
			return filepath.Join(append([]string{next}, parts[i+1:]...)...), nil
		}
		if err != nil {
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			real, err := filepath.EvalSymlinks(next)
			if err != nil {
				return "", fmt.Errorf("%s is a symlink that cannot be followed: %w", next, err)
			}
			if !inside(root, real, true) {
				return "", fmt.Errorf("%s is a symlink to %s, outside the root %s", next, real, root)
			}
			next = real
			if fi, err = os.Stat(real); err != nil {
				return "", err
			}
		}
		if i < len(parts)-1 && !fi.IsDir() {
			return "", fmt.Errorf("%s is not a folder", next)
		}
		cur = next
	}
	if !inside(root, cur, false) {
		return "", fmt.Errorf("%s is not below the root %s", cur, root)
	}
	return cur, nil
}

// location returns a resource's folder: relative to the root (slash
// separated) and absolute, symlinks resolved. root may be "" (not
// configured yet): then only the lexical checks run. Both ValidateResource
// and Create call it.
func location(root, typ, name string, cfg sdk.Attributes) (string, string, sdk.Diagnostics) {
	rel, d := relPath(typ, name, cfg)
	if d != nil {
		return "", "", sdk.Diagnostics{*d}
	}
	if root == "" {
		return rel, "", nil
	}
	abs, err := resolve(root, rel)
	if err != nil {
		var path []string
		if v, ok := cfg[attrPath]; ok && v != nil {
			path = []string{attrPath}
		}
		return "", "", sdk.Diagnostics{sdk.AttributeErrorf(path, "folder %s escapes the root or cannot be used: %v", rel, err)}
	}
	r, err := filepath.Rel(root, abs)
	if err != nil {
		return "", "", sdk.DiagnosticsFromError(err)
	}
	return filepath.ToSlash(r), abs, nil
}

// mkdirAll makes dir and its missing parents below root with mode 0700,
// making each new entry durable in its parent.
func mkdirAll(root, dir string) error {
	if dir == root {
		return nil
	}
	if !inside(root, dir, false) {
		return fmt.Errorf("refusing to make %s outside the root %s", dir, root)
	}
	fi, err := os.Stat(dir)
	if err == nil {
		if !fi.IsDir() {
			return fmt.Errorf("%s is not a folder", dir)
		}
		return nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	parent := filepath.Dir(dir)
	if err := mkdirAll(root, parent); err != nil {
		return err
	}
	return mkdir(dir)
}

// mkdir makes one folder with mode 0700 (whatever the umask) and makes it
// durable in its parent.
func mkdir(dir string) error {
	if err := os.Mkdir(dir, dirMode); err != nil {
		return err
	}
	if err := os.Chmod(dir, dirMode); err != nil {
		return err
	}
	return syncDir(filepath.Dir(dir))
}
