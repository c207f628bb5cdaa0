package jsonview

import "time"

// KindFailure is a Failure's kind.
const KindFailure = "failure"

// Failure is what a command given --json prints when it fails before it
// has its own document (the spec does not parse, a --var names no
// variable, the state cannot be read, the lock is held), and, as a last
// line, what a streaming command (apply --json) prints when it fails:
// the command, its exit code and its diagnostics, as `validate --json`
// gives them.
type Failure struct {
	FormatVersion string       `json:"format_version"`
	Kind          string       `json:"kind"`
	Command       string       `json:"command"`
	Exit          int          `json:"exit"`
	ErrorCount    int          `json:"error_count"`
	Diagnostics   []Diagnostic `json:"diagnostics"`
	// Time is set on the streamed line only (see Line).
	Time time.Time `json:"-"`
}

// NewFailure is the failure of command with exit code exit.
func NewFailure(command string, exit int, diags []Diagnostic) *Failure {
	diags = list(diags)
	return &Failure{FormatVersion: FormatVersion, Kind: KindFailure, Command: command, Exit: exit, ErrorCount: len(diags), Diagnostics: diags}
}

// FailureLine is a Failure as the last line of a stream: with the "ts"
// every line of one carries, first.
type FailureLine struct {
	Time time.Time `json:"ts"`
	*Failure
}

// Line is f as a streamed line.
func (f *Failure) Line() FailureLine { return FailureLine{Time: f.Time, Failure: f} }
