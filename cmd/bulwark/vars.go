package main

import (
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/bulwark-iac/bulwark/core/resolve"
	"github.com/bulwark-iac/bulwark/core/spec"
	"github.com/bulwark-iac/bulwark/core/stack"
)

// varInputs are the --var and --var-file flags of one invocation.
type varInputs struct {
	vars, files []string
}

// addVarFlags gives every command that reads a spec (its Use names SPEC)
// --var and --var-file.
func (c *cli) addVarFlags(root *cobra.Command) {
	var walk func(*cobra.Command)
	walk = func(cmd *cobra.Command) {
		if strings.Contains(cmd.Use, "SPEC") {
			cmd.Flags().StringArrayVar(&c.varIn.vars, "var", nil, "give the spec's variable NAME the value VALUE (`NAME=VALUE`; repeatable; a list or map as YAML: zones=[a,b]); wins over --var-file, "+resolve.EnvPrefix+"NAME and the default")
			cmd.Flags().StringArrayVar(&c.varIn.files, "var-file", nil, "read variable values from `FILE`, a YAML mapping of names to values (repeatable; a later file wins)")
		}
		for _, sub := range cmd.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

func (c *cli) inputs() resolve.Inputs {
	return resolve.Inputs{Vars: c.varIn.vars, Files: c.varIn.files, Env: os.Environ()}
}

// loadSpec reads the spec at path, applies --provider, gives every
// variable its value and expands it (for_each instances, variables
// substituted): what every command that plans or changes works on. A
// missing or ill-typed value is an error before any provider starts.
func (c *cli) loadSpec(path, provider string) (*spec.Spec, error) {
	sp, err := spec.Load(path)
	if err != nil {
		return nil, notASpec(path, err)
	}
	if provider != "" {
		sp = sp.WithDefaultProvider(provider)
	}
	vals, _, err := resolve.Values(sp, c.inputs())
	if err != nil {
		return nil, err
	}
	c.learnSensitive(sp, vals)
	return resolve.Expand(sp, vals)
}

// loadUnknown is loadSpec for validate and graph, which need no value: a
// variable with no value is a value not known yet (as in terraform
// validate), and everything else is checked as loadSpec checks it. It
// also returns notes on what could not be checked without the values (a
// for_each over an unknown collection, checked once as a template).
func (c *cli) loadUnknown(path, provider string) (*spec.Spec, spec.Problems, error) {
	sp, err := spec.Load(path)
	if err != nil {
		return nil, nil, notASpec(path, err)
	}
	if provider != "" {
		sp = sp.WithDefaultProvider(provider)
	}
	in := c.inputs()
	in.Unknown = true
	vals, _, err := resolve.Values(sp, in)
	if err != nil {
		return nil, nil, err
	}
	c.learnSensitive(sp, vals)
	return resolve.ExpandUnknown(sp, vals)
}

// unknownVariables is how many of an expanded spec's variables have no
// value (loadUnknown).
func unknownVariables(sp *spec.Spec) int {
	n := 0
	for _, v := range sp.Variables {
		if _, ok := sp.Values[v.Name]; !ok {
			n++
		}
	}
	return n
}

// learnSensitive teaches the Redactor the values of the sensitive
// variables, before anything can print them or a string made from them.
func (c *cli) learnSensitive(sp *spec.Spec, vals map[string]any) {
	for _, v := range sp.Variables {
		if val, ok := vals[v.Name]; ok && v.Sensitive {
			c.red.Add(val)
		}
	}
}

// peekSpec is loadSpec for a command that reads only the recorded state
// (status, history, state list/show, providers lock): a variable with no
// value is no error there unless the stack's name uses it (a value given
// with --var or --var-file must still be declared and well typed), and
// the spec is then returned as parsed, not expanded, with its stack's name
// resolved.
func (c *cli) peekSpec(path, provider string) (*spec.Spec, error) {
	return c.peek(path, provider, true)
}

// peekProviders is peekSpec for a command that reads only the spec's
// providers (providers lock, list, install): it opens no stack, so a
// variable with no value is no error unless --var or --var-file was given,
// even one the stack's name uses (Stack is then empty).
func (c *cli) peekProviders(path, provider string) (*spec.Spec, error) {
	return c.peek(path, provider, false)
}

func (c *cli) peek(path, provider string, needStack bool) (*spec.Spec, error) {
	sp, err := spec.Load(path)
	if err != nil {
		return nil, err
	}
	if provider != "" {
		sp = sp.WithDefaultProvider(provider)
	}
	vals, _, err := resolve.Values(sp, c.inputs())
	if err != nil && !needStack {
		if len(c.varIn.vars)+len(c.varIn.files) == 0 {
			return sp, nil
		}
		return nil, err
	}
	if err != nil {
		// The stack's name is still needed: a name that uses variables
		// is an error here when they have no value, never another stack;
		// a value given that is wrong (undeclared, ill-typed) is one too.
		svals, serr := resolve.StackValues(sp, c.inputs())
		if serr != nil {
			return nil, serr
		}
		return resolve.WithStackName(sp, svals)
	}
	c.learnSensitive(sp, vals)
	return resolve.Expand(sp, vals)
}

// loadResume is load for resume: the operation resumed staged its variable
// values, and core goes on with them when the spec's text is the one it
// staged, so a variable with no value here is no error unless the stack's
// name needs it (as peekSpec); core refuses a spec it cannot use.
func (c *cli) loadResume(path string) (*spec.Spec, stack.Options, func(), error) {
	sp, err := c.peekSpec(path, "")
	if err != nil {
		return nil, stack.Options{}, nil, err
	}
	opts, done, err := c.options(sp)
	if err != nil {
		return nil, stack.Options{}, nil, err
	}
	return sp, opts, done, nil
}
