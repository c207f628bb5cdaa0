package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/bulwark-iac/bulwark/cmd/bulwark/internal/jsonview"
)

// TestSchemaPrintedInert: a provider's schema is a third party's words
// (any plugin's, any Terraform provider's); `providers schema` prints
// every name, type, version and description of it with its control
// characters written as escapes, each on its own line.
func TestSchemaPrintedInert(t *testing.T) {
	evil := "x\x1b[2K\r\nop_fake apply succeeded\u009b\a"
	attr := jsonview.SchemaAttribute{Name: "a" + evil, Type: "string" + evil, Description: "d" + evil}
	for _, doc := range []*jsonview.ProvidersSchema{
		{Providers: []jsonview.SchemaProvider{{Name: "evil", Version: "1.0" + evil, Protocol: 1,
			Config:        []jsonview.SchemaAttribute{attr},
			ResourceTypes: []jsonview.SchemaType{{Name: "t" + evil, Description: "r" + evil, Attributes: []jsonview.SchemaAttribute{attr}, Coexistence: jsonview.SchemaCoexistence{WhenDiffers: []string{"z" + evil}}}},
			DataSources:   []jsonview.SchemaDataSource{{Name: "ds" + evil, Description: "dd" + evil, Attributes: []jsonview.SchemaAttribute{attr}}}}}},
		{Providers: []jsonview.SchemaProvider{{Name: "broken", Error: "does not start" + evil}}},
	} {
		var b bytes.Buffer
		if err := renderSchemas(&b, doc); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		if strings.ContainsAny(out, "\x1b\r\a\u009b") {
			t.Errorf("providers schema printed a control character:\n%q", out)
		}
		for _, line := range strings.Split(out, "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "op_fake") && doc.Providers[0].Error == "" {
				t.Errorf("a schema's text added a line of its own: %q\n%s", line, out)
			}
		}
	}
}

// TestInertWriter: the report's writer keeps newlines and tabs, writes
// every other control character as an escape, and says it wrote what it
// was given.
func TestInertWriter(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"Apply complete: 2 changed.\n", "Apply complete: 2 changed.\n"},
		{"Kept: a\tb\n", "Kept: a\tb\n"},
		{"failed at x\x1b[2K\r\u009b\a.\n", `failed at x\x1b[2K\r\u009b\a.` + "\n"},
	} {
		var b bytes.Buffer
		n, err := inertWriter{&b}.Write([]byte(tc.in))
		if err != nil || n != len(tc.in) {
			t.Errorf("Write(%q) = %d, %v; want %d, nil", tc.in, n, err, len(tc.in))
		}
		if b.String() != tc.want {
			t.Errorf("Write(%q) wrote %q, want %q", tc.in, b.String(), tc.want)
		}
	}
}
