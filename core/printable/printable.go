// Package printable writes text that comes from elsewhere (what a plugin
// said, what a teammate's command recorded in a shared state) so that it
// cannot drive the terminal it is shown on: its control characters (an
// escape sequence, a bell, a carriage return) become Go escapes.
package printable

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// Text is s with its control characters written as Go escapes; newlines
// and tabs stay, for a message of several lines.
func Text(s string) string { return escape(s, true) }

// Line is s as one field of one line: newlines and tabs are escaped too,
// so that a field cannot add a line of its own to a table or a listing.
func Line(s string) string { return escape(s, false) }

func escape(s string, keepLines bool) string {
	unprintable := func(r rune) bool {
		if keepLines && (r == '\n' || r == '\t') {
			return false
		}
		return r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == utf8.RuneError
	}
	if !strings.ContainsFunc(s, unprintable) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if !unprintable(r) {
			b.WriteRune(r)
			continue
		}
		q := strconv.QuoteRune(r)
		b.WriteString(q[1 : len(q)-1])
	}
	return b.String()
}
