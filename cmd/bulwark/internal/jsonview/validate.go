package jsonview

import (
	"errors"
	"os"

	"github.com/bulwark-iac/bulwark/core/plandoc"
	"github.com/bulwark-iac/bulwark/core/spec"
)

// Validate is `bulwark validate --json`: whether the spec is valid, and
// every problem found, each as a diagnostic.
type Validate struct {
	FormatVersion string `json:"format_version"`
	Valid         bool   `json:"valid"`
	Stack         string `json:"stack"`
	Resources     int    `json:"resources"`
	ErrorCount    int    `json:"error_count"`
	WarningCount  int    `json:"warning_count"`
	// UnknownVariables is how many variables had no value: validate checks
	// them as unknown values of their declared types (0 when the spec did
	// not get that far).
	UnknownVariables int          `json:"unknown_variables"`
	Diagnostics      []Diagnostic `json:"diagnostics"`
}

// Severities of a diagnostic.
const (
	SeverityError   = plandoc.SeverityError
	SeverityWarning = plandoc.SeverityWarning
)

// Diagnostic is one problem (declared in core/plandoc, as the plan
// document that holds them too).
type Diagnostic = plandoc.Diagnostic

// NewValidate is the document of a validation. sp is the spec when it
// parsed (nil when it did not); err is what validation returned: nil,
// spec.Problems (each a diagnostic), or any other error (one diagnostic
// with no place). redact masks sensitive values in messages.
func NewValidate(sp *spec.Spec, err error, redact func(string) string) *Validate {
	out := &Validate{FormatVersion: FormatVersion, Diagnostics: []Diagnostic{}}
	if sp != nil {
		out.Stack, out.Resources = sp.Stack, len(sp.Resources)
	}
	out.Diagnostics = Diagnostics(sp, err, redact)
	out.ErrorCount = len(out.Diagnostics)
	out.Valid = out.ErrorCount == 0
	return out
}

// AddWarnings adds notes as warning diagnostics (what validation could not
// check without the variables' values): they do not make the spec invalid.
func (v *Validate) AddWarnings(sp *spec.Spec, notes spec.Problems, redact func(string) string) {
	if len(notes) == 0 {
		return
	}
	for _, d := range Diagnostics(sp, notes, redact) {
		d.Severity = SeverityWarning
		v.Diagnostics = append(v.Diagnostics, d)
		v.WarningCount++
	}
}

// Diagnostics turns an error into diagnostics: one per spec.Problem, with
// its attribute path, or one with no place for any other error.
func Diagnostics(sp *spec.Spec, err error, redact func(string) string) []Diagnostic {
	out := []Diagnostic{}
	if err == nil {
		return out
	}
	var problems spec.Problems
	if !errors.As(err, &problems) {
		return append(out, Diagnostic{Severity: SeverityError, Message: redact(err.Error())})
	}
	texts := map[string][]byte{}
	text := func(file string) []byte {
		if sp != nil && file == sp.File && sp.Text != nil {
			return sp.Text
		}
		if t, ok := texts[file]; ok {
			return t
		}
		t, _ := os.ReadFile(file) // nil when it cannot be read: no path
		texts[file] = t
		return t
	}
	for _, p := range problems {
		d := Diagnostic{Severity: SeverityError, Message: redact(p.Msg), File: p.File, Line: max(p.Pos.Line, 0), Column: max(p.Pos.Col, 0)}
		if d.Line > 0 && p.File != "" {
			d.Path, d.Resource = spec.PathAt(text(p.File), p.Pos, p.Msg)
		}
		out = append(out, d)
	}
	return out
}
