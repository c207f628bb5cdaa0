package pluginhost

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Prefix is the file name prefix of every provider executable.
const Prefix = "bulwark-provider-"

// LookupDirs returns the folders searched for plugins, in order: the
// --plugin-dir flag, $BULWARK_PLUGIN_DIR, ./bin/plugins, and the folder
// plugins/ beside the running executable. Empty entries are dropped.
func LookupDirs(flagDir, envDir, exe string) []string {
	dirs := []string{flagDir, envDir, filepath.Join("bin", "plugins")}
	if exe != "" {
		dirs = append(dirs, filepath.Join(filepath.Dir(exe), "plugins"))
	}
	var out []string
	seen := map[string]bool{}
	for _, d := range dirs {
		if d == "" || seen[d] {
			continue
		}
		seen[d] = true
		out = append(out, d)
	}
	return out
}

// NotFoundError says a provider's executable is in none of the folders.
type NotFoundError struct {
	Source string
	Dirs   []string
}

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("provider %q not found: no executable %s%s%s in %s (build it with `make build`, or pass --plugin-dir)",
		e.Source, Prefix, e.Source, exeSuffix, strings.Join(e.Dirs, ", "))
}

// Find returns the path of the provider named source in the first folder of
// dirs that holds it.
func Find(dirs []string, source string) (string, error) {
	if source == "" || strings.ContainsAny(source, `/\`) || strings.Contains(source, "..") {
		return "", fmt.Errorf("bad provider source %q", source)
	}
	for _, d := range dirs {
		p := filepath.Join(d, Prefix+source+exeSuffix)
		fi, err := os.Stat(p)
		if err == nil && fi.Mode().IsRegular() && (exeSuffix != "" || fi.Mode().Perm()&0o111 != 0) {
			abs, err := filepath.Abs(p)
			if err != nil {
				return "", err
			}
			return abs, nil
		}
	}
	return "", &NotFoundError{Source: source, Dirs: dirs}
}

// Found is one provider executable found in the lookup folders.
type Found struct {
	Name   string
	Path   string
	SHA256 string
}

// List returns every provider executable in dirs; a name found in several
// folders is listed once, from the first.
func List(dirs []string) ([]Found, error) {
	seen := map[string]bool{}
	var out []Found
	for _, d := range dirs {
		entries, err := os.ReadDir(d)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			name, ok := strings.CutPrefix(e.Name(), Prefix)
			if exeSuffix != "" && ok {
				name, ok = strings.CutSuffix(name, exeSuffix)
			}
			if !ok || seen[name] || e.IsDir() {
				continue
			}
			p, err := Find([]string{d}, name)
			if err != nil {
				continue
			}
			sum, err := FileSHA256(p)
			if err != nil {
				return nil, err
			}
			seen[name] = true
			out = append(out, Found{Name: name, Path: p, SHA256: sum})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// FileSHA256 returns the hex sha256 of a file's bytes.
func FileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
