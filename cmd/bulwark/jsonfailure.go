package main

import (
	"bytes"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/bulwark-iac/bulwark/cmd/bulwark/internal/jsonview"
)

// wantsJSON reports whether the command was given --json: by its flag once
// parsed, else (flags that did not parse) as written before any "--".
func wantsJSON(cmd *cobra.Command, args []string) bool {
	if cmd != nil {
		if f := cmd.Flags().Lookup("json"); f != nil && f.Changed {
			return f.Value.String() == "true"
		}
	}
	if i := slices.Index(args, "--"); i >= 0 {
		args = args[:i]
	}
	return slices.Contains(args, "--json") || slices.Contains(args, "--json=true")
}

// failureJSON prints, for a --json command that failed, its diagnostics as
// JSON on stdout: the one document it prints when it failed before having
// its own (the spec does not parse, a --var names no variable, the lock is
// held), or, for a command that streams JSON lines, the last line. stderr
// says the same for a person, as without --json.
func (c *cli) failureJSON(cmd *cobra.Command, code int, err error) {
	name := ""
	if cmd != nil {
		name = strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" ")
	}
	doc := jsonview.NewFailure(name, code, jsonview.Diagnostics(nil, err, c.red.Redact))
	w := c.red.Writer(c.stdout)
	if c.streaming || streamsJSON(name) {
		doc.Time = time.Now().UTC()
		_ = jsonview.WriteLine(w, doc.Line())
		return
	}
	_ = jsonview.Write(w, doc)
}

// streamsJSON reports whether the command's --json output is a stream of
// JSON lines (the mutating operations): its failure is a line too, even
// when it failed before its stream began.
func streamsJSON(command string) bool {
	switch command {
	case "apply", "resume", "rollback", "teardown", "secrets rotate":
		return true
	}
	return false
}

// endWatch passes a stream of event lines through, noting when one is an
// operation's end line (an operation line whose status is not running).
// Each Write is one line (events.Writer writes a line at a time).
type endWatch struct {
	w     io.Writer
	ended *bool
}

func (e *endWatch) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte(`"kind":"operation"`)) && !bytes.Contains(p, []byte(`"status":"running"`)) {
		*e.ended = true
	}
	return e.w.Write(p)
}
