// Package specfmt rewrites a spec file in canonical form (bulwark fmt).
//
// It works on yaml.v3's node tree, so comments (head, line and foot) stay
// with the node they were written beside. Canonical form is:
//
//   - two-space indentation, sequences indented under their key;
//   - the top-level sections, and the fields of each provider, variable,
//     output, resource, data entry, module call, moved and removed block, in
//     the order the design writes them (Orders); a key this package does
//     not know keeps its place relative to the other unknown keys, after
//     the known ones. Names chosen by the user (variables, outputs,
//     providers, config keys, locals) keep the order they were written in;
//   - a flow collection ({a: 1}, [a, b]) stays flow when it has no comment
//     inside and fits on one line of MaxWidth columns, else it becomes
//     block; a block collection stays block; an empty one is {} or [];
//   - a string is plain unless plain would read differently ("true", "3",
//     "null", "a: b", and YAML 1.1's "yes", "off", "1:30" stay quoted); a
//     string holding ${ keeps its quoting as written, and a multi-line,
//     literal or folded string keeps its style; numbers, booleans and nulls
//     are left as written;
//   - one blank line where there were one or more between two entries of
//     a block collection, none above its first entry;
//   - no trailing spaces, one final newline.
//
// Format never changes meaning: it parses its output with core/spec and
// refuses to return it unless the parsed spec is the same as the input's,
// positions aside, and the YAML data are the same.
package specfmt

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/bulwark-iac/bulwark/core/spec"
)

// MaxWidth is the widest a line holding a flow collection may be for the
// collection to stay flow.
const MaxWidth = 80

// ErrMeaningChanged is returned (wrapped) when the canonical text would
// not parse to the same spec: a bug in this package, never written.
var ErrMeaningChanged = errors.New("the canonical form would change the spec's meaning")

// ErrUnstable is returned (wrapped) when passes keep changing the text: a
// bug in this package; nothing is written.
var ErrUnstable = errors.New("no stable canonical form was reached")

// Format returns src, the spec file named file, in canonical form. A spec
// that does not parse is refused with its spec.Problems (FILE:LINE:COL).
// A file named module.yaml is a module's (spec.ParseModule reads it).
func Format(file string, src []byte) ([]byte, error) {
	before, err := Parse(file, src)
	if err != nil {
		return nil, err
	}
	out, err := pass(file, src)
	if err != nil {
		return nil, err
	}
	// yaml.v3 attaches some foot comments to a deeper node when it reads
	// them back (a comment after a block mapping's last key belongs to that
	// key): a second pass puts them where they will stay, so that fmt of
	// fmt's output is unchanged.
	for i := 0; ; i++ {
		next, err := pass(file, out)
		if err != nil {
			return nil, err
		}
		if bytes.Equal(next, out) {
			break
		}
		if i == maxPasses {
			// A form that a pass changes again is no canonical form.
			return nil, fmt.Errorf("%s: %w", file, ErrUnstable)
		}
		out = next
	}
	if err := sameMeaning(file, src, out, before); err != nil {
		return nil, err
	}
	return out, nil
}

// Parse parses the spec or module file named file: a module's when its
// name is spec.ModuleFile.
func Parse(file string, src []byte) (*spec.Spec, error) {
	if IsModule(file) {
		return spec.ParseModule(file, src)
	}
	return spec.Parse(file, src)
}

// IsModule reports whether file is named as a module's file.
func IsModule(file string) bool {
	return filepath.Base(file) == spec.ModuleFile
}

// maxPasses bounds the passes Format makes to reach a text that a pass
// leaves unchanged.
const maxPasses = 4

// pass is one rewrite of src in canonical form.
func pass(file string, src []byte) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil {
		// spec.Parse read it: this cannot happen, but say so plainly.
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	marks := map[*yaml.Node]bool{}
	markBlanks(&doc, strings.Split(string(src), "\n"), marks)
	canonical(&doc)
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return nil, fmt.Errorf("%s: encode: %w", file, err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("%s: encode: %w", file, err)
	}
	return tidy(putBlanks(&doc, buf.Bytes(), marks)), nil
}

// tidy drops trailing spaces and tabs from every line and ends the text
// with exactly one newline.
func tidy(b []byte) []byte {
	lines := strings.Split(string(b), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " \t")
	}
	s := strings.TrimRight(strings.Join(lines, "\n"), "\n")
	return []byte(s + "\n")
}

// sameMeaning checks that out parses to the same spec as src did (before)
// and holds the same YAML data.
func sameMeaning(file string, src, out []byte, before *spec.Spec) error {
	after, err := Parse(file, out)
	if err != nil {
		return fmt.Errorf("%s: %w: it would not parse: %w", file, ErrMeaningChanged, err)
	}
	if path, ok := equalSpecs(before, after); !ok {
		return fmt.Errorf("%s: %w (at %s)", file, ErrMeaningChanged, path)
	}
	var a, b any
	if err := yaml.Unmarshal(src, &a); err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	if err := yaml.Unmarshal(out, &b); err != nil {
		return fmt.Errorf("%s: %w: %w", file, ErrMeaningChanged, err)
	}
	if path, ok := equalData(a, b, "$"); !ok {
		return fmt.Errorf("%s: %w (YAML data at %s)", file, ErrMeaningChanged, path)
	}
	return nil
}
