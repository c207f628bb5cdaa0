package main

import (
	"fmt"
	"io"

	"github.com/bulwark-iac/bulwark/cmd/bulwark/internal/jsonview"
	"github.com/bulwark-iac/bulwark/core/printable"
	"github.com/bulwark-iac/bulwark/core/secrets"
)

// ViewType is how a command shows what it found: for a person, or as one
// of package jsonview's documents (--json). Each command's view has a human
// and a JSON implementation behind one interface, chosen once from the
// parsed arguments, as Terraform's internal/command/views are.
type ViewType int

const (
	ViewHuman ViewType = iota
	ViewJSON
)

// viewTypeOf is the view a --json flag asks for.
func viewTypeOf(asJSON bool) ViewType {
	if asJSON {
		return ViewJSON
	}
	return ViewHuman
}

// view is what every command's view writes with: stdout for the result,
// stderr for problems, each through the invocation's Redactor.
type view struct {
	stdout, stderr io.Writer
	red            *secrets.Redactor
	color          bool // stdout may be painted (a terminal, no NO_COLOR)
	showUnchanged  bool // a plan lists its unchanged resources too
}

func (c *cli) view() view {
	return view{stdout: c.stdout, stderr: c.stderr, red: c.red, color: c.color(), showUnchanged: c.showUnchanged}
}

// out is stdout, redacted: a sensitive value this invocation has seen is
// never printed in clear.
func (v view) out() io.Writer { return v.red.Writer(v.stdout) }

// json writes one document, indented, with no HTML escaping.
func (v view) json(doc any) error { return jsonview.Write(v.out(), doc) }

// problem prints one line on stderr, as bulwark says what went wrong.
func (v view) problem(format string, args ...any) {
	// Inert, as bulwark's last error line (cli.fail): a problem quotes
	// what it read.
	fmt.Fprintf(v.stderr, "bulwark: %s\n", printable.Text(v.red.Redact(fmt.Sprintf(format, args...))))
}
