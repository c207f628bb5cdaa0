package jsonview

import (
	"github.com/bulwark-iac/bulwark/core/secrets"
	"github.com/bulwark-iac/bulwark/core/stack"
)

// Outputs is `bulwark output SPEC --json`: every output the state records
// (those of the last successful apply), by name.
type Outputs struct {
	FormatVersion string                 `json:"format_version"`
	Stack         string                 `json:"stack"`
	Outputs       map[string]OutputValue `json:"outputs"`
}

// Output is `bulwark output SPEC NAME --json`: one output, its value in
// clear even when sensitive (asked for by name, as Terraform prints it).
type Output struct {
	FormatVersion string `json:"format_version"`
	Name          string `json:"name"`
	OutputValue
}

// OutputValue is one output's value; a sensitive one's is secrets.Mask in
// Outputs.
type OutputValue struct {
	Value       any    `json:"value"`
	Sensitive   bool   `json:"sensitive"`
	Description string `json:"description"`
}

// NewOutputs is the document of every output.
func NewOutputs(stackName string, outs []stack.OutputValue) *Outputs {
	out := &Outputs{FormatVersion: FormatVersion, Stack: stackName, Outputs: map[string]OutputValue{}}
	for _, o := range outs {
		v := o.Value
		if o.Sensitive {
			v = secrets.Mask
		}
		out.Outputs[o.Name] = OutputValue{Value: v, Sensitive: o.Sensitive, Description: o.Description}
	}
	return out
}

// NewOutput is the document of one output asked for by name.
func NewOutput(o stack.OutputValue) *Output {
	return &Output{FormatVersion: FormatVersion, Name: o.Name, OutputValue: OutputValue{Value: o.Value, Sensitive: o.Sensitive, Description: o.Description}}
}
