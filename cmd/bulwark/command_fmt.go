package main

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/rogpeppe/go-internal/diff"
	"github.com/spf13/cobra"

	"github.com/bulwark-iac/bulwark/cmd/bulwark/internal/jsonview"
	"github.com/bulwark-iac/bulwark/core/spec"
	"github.com/bulwark-iac/bulwark/core/specfmt"
	"github.com/bulwark-iac/bulwark/core/stack"
)

// fmtArgs are fmt's: the files (or folders, or "-") and its flags.
type fmtArgs struct {
	Paths       []string
	Check, Diff bool
	View        ViewType
}

// fmtResult is one file's outcome.
type fmtResult struct {
	file             string
	changed, written bool
	diff             string
	text             []byte // as read, for the diagnostics' attribute paths
	err              error  // what kept it from being formatted or written
}

// stdinName is the argument that reads the spec from stdin and writes its
// canonical form to stdout.
const stdinName = "-"

func (c *cli) fmtCmd() *cobra.Command {
	var a fmtArgs
	var view viewFlag
	cmd := &cobra.Command{
		Use:   "fmt [FILE|DIR|-]...",
		Short: "Rewrite specs in canonical form, comments kept; --check lists the ones that are not",
		Long: `Rewrite each spec in canonical form: two-space indentation, the top-level
sections and each entry's fields in the order the documentation writes them,
flow collections kept on one line only when they fit in 80 columns and hold no
comment, quotes only where a string would otherwise read differently, no
trailing spaces, one final newline. Comments stay with what they are written
beside; ${...} strings are never rewritten inside; the result always parses
to the same spec (fmt refuses to write it otherwise).

With no argument fmt formats the specs in the current folder; a DIR argument,
the specs in that folder (the *.yaml and *.yml files with a top-level version:
and stack:; not its subfolders, and not a symbolic link). A FILE is formatted
whatever its name. "-" reads a spec from stdin and writes its canonical form
to stdout.

A file is replaced atomically, keeping its mode. A symbolic link is refused:
fmt neither writes through it nor replaces it; run it on the link's target.
A file that does not parse is refused with its problems (FILE:LINE:COL) and
left as it is.

Exit codes: 0 when every file is canonical (or was rewritten), 1 when a file
could not be formatted, 2 with --check when a file is not canonical.`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			a.Paths, a.View = args, view.View()
			return c.runFmt(a)
		},
	}
	cmd.Flags().BoolVar(&a.Check, "check", false, "write nothing: list the files that are not in canonical form and exit 2 if there is one")
	cmd.Flags().BoolVar(&a.Diff, "diff", false, "print a unified diff of each file against its canonical form")
	view.register(cmd, "print one document: each file, whether it changed or was written, its diff and its problems")
	return cmd
}

// runFmt formats every file a names and renders what happened.
func (c *cli) runFmt(a fmtArgs) error {
	paths := a.Paths
	if len(paths) == 0 {
		paths = []string{"."}
	}
	if slices.Contains(paths, stdinName) && len(paths) > 1 {
		return errors.New("fmt: - (stdin) cannot be given with other files")
	}
	var results []fmtResult
	for _, p := range paths {
		if p == stdinName {
			results = append(results, c.fmtStdin(a))
			continue
		}
		files, err := specFiles(p)
		if err != nil {
			results = append(results, fmtResult{file: p, err: err})
			continue
		}
		for _, f := range files {
			results = append(results, c.fmtFile(f, a))
		}
	}
	return newFmtView(a.View, c.view()).Fmt(a, results)
}

// versionLine and stackLine tell a spec from the other YAML files of a folder
// (var files): a spec has version: and stack: at its top level.
var (
	versionLine = regexp.MustCompile(`(?m)^version\s*:`)
	stackLine   = regexp.MustCompile(`(?m)^stack\s*:`)
)

// specFiles is path when it is not a folder, else the specs directly in it
// (regular files only: a symbolic link is not followed into).
func specFiles(path string) ([]string, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return []string{path}, nil
	}
	entries, err := os.ReadDir(path)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		ext := filepath.Ext(e.Name())
		if !e.Type().IsRegular() || (ext != ".yaml" && ext != ".yml") {
			continue
		}
		name := filepath.Join(path, e.Name())
		src, err := specfmt.ReadFile(name)
		if err != nil {
			continue
		}
		if specfmt.IsModule(name) || versionLine.Match(src.Text) && stackLine.Match(src.Text) {
			out = append(out, name)
		}
	}
	// The module files the specs call, once each, after the specs: fmt
	// of a stack's folder formats the modules it is built from too, those
	// under the folder only (a shared module beside it is another
	// folder's to format).
	seen := map[string]bool{}
	for _, f := range out {
		seen[filepath.Clean(f)] = true
	}
	var mods []string
	for _, f := range out {
		if specfmt.IsModule(f) {
			continue
		}
		src, err := specfmt.ReadFile(f)
		if err != nil {
			continue
		}
		sp, err := spec.Parse(f, src.Text)
		if err != nil {
			continue // reported when the spec itself is formatted
		}
		for _, rel := range slices.Sorted(maps.Keys(sp.ModuleFiles)) {
			if strings.HasPrefix(rel, "../") {
				continue
			}
			m := filepath.Clean(filepath.Join(path, filepath.FromSlash(rel)))
			if !seen[m] {
				seen[m] = true
				mods = append(mods, m)
			}
		}
	}
	return append(out, mods...), nil
}

// fmtFile formats one file, writing it unless --check.
func (c *cli) fmtFile(path string, a fmtArgs) fmtResult {
	r := fmtResult{file: path}
	src, err := specfmt.ReadFile(path)
	if err != nil {
		r.err = err
		return r
	}
	r.text = src.Text
	out, err := c.canonical(path, src.Text, a, &r)
	if err != nil || !r.changed || a.Check {
		return r
	}
	if err := specfmt.WriteFile(src, out); err != nil {
		r.err = err
		return r
	}
	r.written = true
	return r
}

// fmtStdin formats stdin; its canonical form goes to stdout unless --check,
// --diff or --json asks for something else there.
func (c *cli) fmtStdin(a fmtArgs) fmtResult {
	r := fmtResult{file: stdinName}
	text, err := io.ReadAll(io.LimitReader(c.stdin, specfmt.MaxSize+1))
	if err != nil {
		r.err = fmt.Errorf("read stdin: %w", err)
		return r
	}
	if len(text) > specfmt.MaxSize {
		r.err = fmt.Errorf("stdin: spec is larger than %d bytes (1 MiB); refusing to read it", specfmt.MaxSize)
		return r
	}
	r.text = text
	out, err := c.canonical(stdinName, text, a, &r)
	if err != nil || a.Check || a.Diff || a.View == ViewJSON {
		return r
	}
	// The spec's own text, back to whoever piped it in: not redacted.
	if _, err := c.stdout.Write(out); err != nil {
		r.err = err
	}
	return r
}

// canonical is text's canonical form; it fills r's changed, diff and err.
func (c *cli) canonical(name string, text []byte, a fmtArgs, r *fmtResult) ([]byte, error) {
	if sp, err := specfmt.Parse(name, text); err == nil {
		// A default of a sensitive variable is masked in a diff.
		for _, v := range sp.Variables {
			if v.Sensitive && v.HasDefault {
				c.red.Add(v.Default)
			}
		}
	}
	out, err := specfmt.Format(name, text)
	if err != nil {
		r.err = err
		return nil, err
	}
	r.changed = string(out) != string(text)
	if a.Diff && r.changed {
		r.diff = string(diff.Diff(name, text, name+" (canonical)", out))
	}
	return out, nil
}

// FmtView renders fmt's results and returns the command's exit.
type FmtView interface {
	Fmt(a fmtArgs, results []fmtResult) error
}

func newFmtView(t ViewType, v view) FmtView {
	if t == ViewJSON {
		return fmtJSON{v}
	}
	return fmtHuman{v}
}

// fmtExit is fmt's exit: 1 when a file could not be formatted, else 2 when
// --check found a file that is not canonical, else 0.
func fmtExit(a fmtArgs, results []fmtResult) error {
	changed := false
	for _, r := range results {
		if r.err != nil {
			return exitCode(stack.ExitError)
		}
		changed = changed || r.changed
	}
	if a.Check && changed {
		return exitCode(stack.ExitChanges)
	}
	return nil
}

// fmtHuman lists the files changed (written, or with --check that would
// be) on stdout, with their diffs when --diff; each file's problems go to
// stderr, FILE:LINE:COL, and the file is left as it is.
type fmtHuman struct{ view }

func (v fmtHuman) Fmt(a fmtArgs, results []fmtResult) error {
	out := v.out()
	for _, r := range results {
		if r.err != nil {
			var problems spec.Problems
			if errors.As(r.err, &problems) {
				for _, p := range problems {
					fmt.Fprintln(v.stderr, v.red.Redact(p.Error()))
				}
				v.problem("%s: %d problem(s); the file is left as it is", r.file, len(problems))
			} else {
				v.problem("%v", r.err)
			}
			continue
		}
		if !r.changed {
			continue
		}
		if r.file != stdinName || a.Check {
			fmt.Fprintln(out, r.file)
		}
		if r.diff != "" {
			fmt.Fprint(out, r.diff)
		}
	}
	return fmtExit(a, results)
}

// fmtJSON prints the document; problems are in it, not on stderr.
type fmtJSON struct{ view }

func (v fmtJSON) Fmt(a fmtArgs, results []fmtResult) error {
	doc := jsonview.Fmt{FormatVersion: jsonview.FormatVersion, Check: a.Check, Files: []jsonview.FmtFile{}}
	for _, r := range results {
		f := jsonview.FmtFile{File: r.file, Changed: r.changed, Written: r.written, Diff: r.diff,
			Diagnostics: jsonview.Diagnostics(&spec.Spec{File: r.file, Text: r.text}, r.err, v.red.Redact)}
		if r.err != nil {
			doc.ErrorCount++
		}
		if r.changed {
			doc.ChangedCount++
		}
		doc.Files = append(doc.Files, f)
	}
	if err := v.json(doc); err != nil {
		return err
	}
	return fmtExit(a, results)
}
