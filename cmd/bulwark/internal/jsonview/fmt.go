package jsonview

// Fmt is `bulwark fmt --json`: what fmt found in each file it was given
// (or found in a folder) and what it did.
type Fmt struct {
	FormatVersion string `json:"format_version"`
	// Check says --check: nothing was written.
	Check        bool      `json:"check"`
	ChangedCount int       `json:"changed_count"`
	ErrorCount   int       `json:"error_count"`
	Files        []FmtFile `json:"files"`
}

// FmtFile is one file: whether its canonical form differs from it, whether
// fmt wrote it, the unified diff (with --diff, else ""), and the problems
// that kept fmt from formatting it (each a diagnostic, as validate's).
type FmtFile struct {
	File        string       `json:"file"`
	Changed     bool         `json:"changed"`
	Written     bool         `json:"written"`
	Diff        string       `json:"diff"`
	Diagnostics []Diagnostic `json:"diagnostics"`
}
