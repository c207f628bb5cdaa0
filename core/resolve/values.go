package resolve

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/bulwark-iac/bulwark/core/spec"
)

// EnvPrefix starts the name of an environment variable that gives a
// variable its value: BULWARK_VAR_<NAME>, NAME exactly as declared.
const EnvPrefix = "BULWARK_VAR_"

// Inputs are where variable values come from besides the spec's defaults.
type Inputs struct {
	// Vars are the --var NAME=VALUE flags, in command-line order (a later
	// one for the same name wins).
	Vars []string
	// Files are the --var-file paths, in command-line order (a later file
	// wins for a name both give).
	Files []string
	// Env is the environment, as os.Environ returns it; only
	// BULWARK_VAR_<NAME> entries are read, and one for a variable the spec
	// does not declare is ignored (the environment is shared by many
	// stacks).
	Env []string
	// Unknown makes a variable with no value (no --var, --var-file,
	// environment or default) no problem: it is left out of the values
	// and its Source is Unknown, for validate and graph to treat as a
	// value not known yet (ExpandUnknown), as terraform validate does. A
	// value that is given is still checked.
	Unknown bool
}

// Source says where a variable's value came from.
type Source string

const (
	FromFlag    Source = "--var"
	FromFile    Source = "--var-file"
	FromEnv     Source = "environment"
	FromDefault Source = "default"
	// Unknown is a variable with no value, with Inputs.Unknown.
	Unknown Source = "unknown"
)

// Values gives every variable of s its value, from the first of: the last
// --var NAME=VALUE, the last --var-file that names it, BULWARK_VAR_<NAME>,
// the default. It returns the values by name and where each came from.
//
// A value given as text (--var, the environment) is read by the
// variable's type: a string as it is, a number or bool as one, a list or
// map as YAML ("[a, b]", "{env: prod}"). A --var-file value must have the
// variable's type, except that a string variable takes a number or bool as
// written. Every problem is reported at once, each naming the variable and
// where a value can come from: a --var for a variable the spec does not
// declare, a --var-file entry for one (a typo would be lost otherwise), a
// value of the wrong type, a variable with no value and no default. No
// message quotes a value, which may be a secret.
func Values(s *spec.Spec, in Inputs) (map[string]any, map[string]Source, error) {
	return values(s, in, nil)
}

// StackValues is Values for a command that needs only the stack's name
// (status, history, state list...): it gives a value to the variables the
// stack name uses (spec.StackVars) and to no other, so a variable with no
// value is an error only when the name needs it, and that error says so.
// Every value given is still checked (declared, of the variable's type).
// It returns an empty map when the name is plain.
func StackValues(s *spec.Spec, in Inputs) (map[string]any, error) {
	only := map[string]bool{}
	for _, n := range s.StackVars() {
		only[n] = true
	}
	vals, _, err := values(s, in, only)
	return vals, err
}

// values is Values, for the variables in only when it is not nil.
func values(s *spec.Spec, in Inputs, only map[string]bool) (map[string]any, map[string]Source, error) {
	var probs spec.Problems
	add := func(file string, pos spec.Pos, format string, args ...any) {
		probs = append(probs, spec.Problem{File: file, Pos: pos, Msg: fmt.Sprintf(format, args...)})
	}
	decl := make(map[string]*spec.Variable, len(s.Variables))
	for _, v := range s.Variables {
		decl[v.Name] = v
	}
	vals, from := map[string]any{}, map[string]Source{}
	set := func(v *spec.Variable, val any, src Source) {
		if only == nil || only[v.Name] {
			vals[v.Name], from[v.Name] = val, src
		}
	}
	for _, v := range s.Variables {
		if v.HasDefault {
			set(v, clone(v.Default), FromDefault)
		}
	}
	for _, kv := range in.Env {
		k, text, ok := strings.Cut(kv, "=")
		name, isVar := strings.CutPrefix(k, EnvPrefix)
		if !ok || !isVar {
			continue
		}
		v, declared := decl[name]
		if !declared {
			continue
		}
		val, err := fromText(v, text)
		if err != nil {
			add("", spec.Pos{}, "%s%s: variable %q %s", EnvPrefix, name, name, err)
			continue
		}
		set(v, val, FromEnv)
	}
	for _, path := range in.Files {
		entries, err := spec.LoadVarFile(path)
		if err != nil {
			if ps, ok := err.(spec.Problems); ok {
				probs = append(probs, ps...)
				continue
			}
			return nil, nil, err
		}
		for _, name := range sortedKeys(entries) {
			ent := entries[name]
			v, declared := decl[name]
			if !declared {
				add(path, ent.Pos, "variable %q is not declared in %s (declared: %s)", name, s.File, declaredList(s))
				continue
			}
			val, err := fromFile(v, ent)
			if err != nil {
				add(path, ent.Pos, "variable %q %s", name, err)
				continue
			}
			set(v, val, FromFile)
		}
	}
	for _, kv := range in.Vars {
		name, text, ok := strings.Cut(kv, "=")
		if !ok {
			add("", spec.Pos{}, "--var %s: want --var NAME=VALUE", clip(kv))
			continue
		}
		v, declared := decl[name]
		if !declared {
			add("", spec.Pos{}, "--var %s: the spec %s declares no variable %q (declared: %s)", clip(name), s.File, clip(name), declaredList(s))
			continue
		}
		val, err := fromText(v, text)
		if err != nil {
			add("", spec.Pos{}, "--var %s: variable %q %s", name, name, err)
			continue
		}
		set(v, val, FromFlag)
	}
	stackVars := map[string]bool{}
	for _, n := range s.StackVars() {
		stackVars[n] = true
	}
	for _, v := range s.Variables {
		if only != nil && !only[v.Name] {
			continue
		}
		if _, ok := vals[v.Name]; !ok && in.Unknown {
			from[v.Name] = Unknown
		} else if !ok {
			need := ""
			if stackVars[v.Name] {
				need = fmt.Sprintf(", and the stack name %s needs it to say which stack this is", clip(s.StackExpr.String()))
			}
			add(s.File, v.Pos, "variable %q has no value%s: give one with --var %s=VALUE, in a --var-file, or as %s%s (or declare a default)", v.Name, need, v.Name, EnvPrefix, v.Name)
		}
	}
	if len(probs) > 0 {
		return nil, nil, probs
	}
	return vals, from, nil
}

// fromText reads a --var or environment value for v.
func fromText(v *spec.Variable, text string) (any, error) {
	switch v.Type {
	case spec.VarString:
		return text, nil
	case spec.VarNumber:
		f, err := strconv.ParseFloat(strings.TrimSpace(text), 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, fmt.Errorf("is a number: the value is not one")
		}
		return f, nil
	case spec.VarBool:
		switch strings.TrimSpace(text) {
		case "true":
			return true, nil
		case "false":
			return false, nil
		}
		return nil, fmt.Errorf("is a bool: the value must be true or false")
	}
	val, err := spec.ParseValue("value", text)
	if err != nil && v.Sensitive {
		// The parser's message may quote part of the value.
		return nil, fmt.Errorf("is a %s: the value must be YAML, as %s", v.Type, example(v.Type))
	}
	if err != nil {
		return nil, fmt.Errorf("is a %s: the value must be YAML, as %s (%w)", v.Type, example(v.Type), err)
	}
	if msg := spec.TypeMismatch(v.Type, val); msg != "" {
		return nil, fmt.Errorf("is a %s: the value %s (write it as %s)", v.Type, msg, example(v.Type))
	}
	return val, nil
}

// fromFile checks a --var-file value for v.
func fromFile(v *spec.Variable, ent spec.VarValue) (any, error) {
	if v.Type == spec.VarString && ent.Text != "" {
		switch ent.Value.(type) {
		case float64, bool:
			return ent.Text, nil
		}
	}
	if msg := spec.TypeMismatch(v.Type, ent.Value); msg != "" {
		return nil, fmt.Errorf("is a %s: the value %s", v.Type, msg)
	}
	return ent.Value, nil
}

func example(t spec.VarType) string {
	if t == spec.VarMap {
		return "{key: value}"
	}
	return "[a, b]"
}

func declaredList(s *spec.Spec) string {
	names := make([]string, 0, len(s.Variables))
	for _, v := range s.Variables {
		names = append(names, v.Name)
	}
	return quoteList(names)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// Reload parses a spec's text recorded earlier (a revision's, a saved
// plan's) under the name file, applies the --provider it was run with
// ("" for none) and expands it with the variable values recorded with it.
// No --var, --var-file or environment is read: the result is exactly what
// was applied. A variable the record lacks takes its default (a record from
// before the variable was declared); one with neither, or a recorded value
// of the wrong type, is an error naming it. Values recorded for variables
// the text does not declare are ignored.
func Reload(file string, text []byte, provider string, values map[string]any) (*spec.Spec, error) {
	sp, err := spec.Parse(file, text)
	if err != nil {
		return nil, err
	}
	if provider != "" {
		sp = sp.WithDefaultProvider(provider)
	}
	vals := make(map[string]any, len(sp.Variables))
	var probs spec.Problems
	for _, v := range sp.Variables {
		val, ok := values[v.Name]
		switch {
		case ok:
			if msg := spec.TypeMismatch(v.Type, val); msg != "" {
				probs = append(probs, spec.Problem{File: file, Pos: v.Pos, Msg: fmt.Sprintf("variable %q: the recorded value %s", v.Name, msg)})
				continue
			}
			vals[v.Name] = clone(val)
		case v.HasDefault:
			vals[v.Name] = clone(v.Default)
		default:
			probs = append(probs, spec.Problem{File: file, Pos: v.Pos, Msg: fmt.Sprintf("variable %q has no recorded value and no default", v.Name)})
		}
	}
	if len(probs) > 0 {
		return nil, probs
	}
	return Expand(sp, vals)
}
