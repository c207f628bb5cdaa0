// Package jsonview holds the wire types of every document bulwark's --json
// flags print, and the one function that writes them: each document starts
// with FormatVersion, keys are snake_case, enums are strings, every field is
// always present (an empty list is [], an absent object null), and nothing is
// HTML-escaped. docs/json.md documents each type field by field; the golden
// tests in cmd/bulwark/testdata/script/json_*.txtar pin them.
//
// Compatibility: a change that only adds a field (or a new enum value a
// reader is told to expect) bumps FormatVersion's minor number; one that
// removes a field, renames it or changes its meaning bumps the major. A
// reader checks the major.
//
// The types are built from core's (stack.Preview, inspect.StatusReport, …) by
// the New… functions here, never by marshalling core's structs, so a change
// in core cannot change a document by accident. The plan document's types
// (Plan, ResourceChange, …, and Diagnostic) are declared in core/plandoc and
// named here by alias: the web view reads a saved plan's document back into
// them; they are wire types like the rest, under the same rules. Sensitive values are masked
// here (secrets.Mask) as the text views mask them; Write's caller passes the
// bytes through the invocation's Redactor too.
package jsonview
