package resolve

import (
	"github.com/bulwark-iac/bulwark/core/spec"
)

// StackName returns the name of s's stack with the variable values vars
// (from Values or StackValues): s.Stack when the stack: field is a plain
// name, else what its expression resolves to, checked against
// spec.StackNamePattern. Only the variables and locals the name uses are
// read. A problem is positioned at the stack: field and names the value
// the expression resolved to.
func StackName(s *spec.Spec, vars map[string]any) (string, error) {
	if s.StackExpr == nil {
		return s.Stack, nil
	}
	c := *s
	c.Locals = s.StackLocals()
	e := &expander{s: &c, vars: vars, sensitive: map[string]bool{}}
	for _, v := range s.Variables {
		if v.Sensitive {
			e.sensitive[v.Name] = true
		}
	}
	for _, n := range s.StackVars() {
		if _, ok := vars[n]; !ok {
			e.add(s.StackPos, "the stack name %s needs variable %q, which has no value: give one with --var %s=VALUE, in a --var-file, or as %s%s", clip(s.StackExpr.String()), n, n, EnvPrefix, n)
		}
	}
	if len(e.probs) > 0 {
		return "", e.sorted()
	}
	e.evalLocals()
	name := e.stackName()
	if len(e.probs) > 0 {
		return "", e.sorted()
	}
	return name, nil
}

// WithStackName returns a copy of s with Stack set to its resolved name
// (StackName), for a command that reads the stack's state but does not
// expand the spec.
func WithStackName(s *spec.Spec, vars map[string]any) (*spec.Spec, error) {
	name, err := StackName(s, vars)
	if err != nil {
		return nil, err
	}
	c := *s
	c.Stack = name
	return &c, nil
}

// stackName evaluates the stack: field's expression with e's variables
// and locals (evalLocals has run) and checks the name; "" and a problem
// when it is not a valid one.
func (e *expander) stackName() string {
	t := e.s.StackExpr
	if t == nil {
		return e.s.Stack
	}
	probs, secrets := len(e.probs), len(e.secrets)
	v := e.template(t, nil)
	switch {
	case len(e.probs) > probs:
		return ""
	case len(e.secrets) > secrets:
		// Parse refuses a sensitive variable in the name; this is the
		// guard for a value that is sensitive some other way.
		e.add(e.s.StackPos, "the stack name %s uses a sensitive value: a stack's name is written in clear in folder names, the state and every output", clip(t.String()))
		return ""
	}
	if len(e.unknown) > 0 && !Known(v) {
		// validate and graph without values (ExpandUnknown): a name
		// over a variable with no value is not known; the spec is
		// checked under the name as written, and nothing opens a state
		// there (no state is read without every value).
		return t.String()
	}
	name, ok := v.(string)
	if !ok {
		e.add(e.s.StackPos, "the stack name %s must be a string, not %s", clip(t.String()), describe(v))
		return ""
	}
	if !spec.ValidStackName(name) {
		e.add(e.s.StackPos, "stack %q (from %s) is not a valid stack name: must match %s", clip(name), clip(t.String()), spec.StackNamePattern)
		return ""
	}
	return name
}
