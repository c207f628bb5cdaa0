package spec

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/bulwark-iac/bulwark/core/dag"
	"github.com/bulwark-iac/bulwark/core/protection"
	"github.com/bulwark-iac/bulwark/core/value"
)

// Pos is a position in a spec file, 1-based; a zero Line means the position
// is unknown (the problem concerns the whole file), a zero Col that only the
// line is known.
type Pos struct{ Line, Col int }

// Problem is one thing wrong with a spec, printed as FILE:LINE:COL: message.
type Problem struct {
	File string
	Pos  Pos
	Msg  string
}

// Error returns the problem as FILE:LINE:COL: message, or FILE:LINE: message
// when the column is unknown, or FILE: message when the line is unknown. An
// empty File is left out.
func (p Problem) Error() string {
	var where string
	switch {
	case p.Pos.Line <= 0:
		where = p.File
	case p.Pos.Col <= 0:
		where = fmt.Sprintf("%s:%d", p.File, p.Pos.Line)
	default:
		where = fmt.Sprintf("%s:%d:%d", p.File, p.Pos.Line, p.Pos.Col)
	}
	where = strings.TrimPrefix(where, ":")
	if where == "" {
		return p.Msg
	}
	return where + ": " + p.Msg
}

// Problems is every problem found, sorted by position; it is an error.
type Problems []Problem

// Error returns the problems one per line.
func (ps Problems) Error() string {
	lines := make([]string, len(ps))
	for i, p := range ps {
		lines[i] = p.Error()
	}
	return strings.Join(lines, "\n")
}

// sort orders the problems by line, then column, keeping the order in which
// they were found among problems at the same position.
func (ps Problems) sort() {
	sort.SliceStable(ps, func(i, j int) bool {
		a, b := ps[i].Pos, ps[j].Pos
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Col < b.Col
	})
}

// FailurePolicy says what an apply does when a resource's step fails.
type FailurePolicy string

const (
	// PolicyCompensate undoes the completed steps, newest first (the default).
	PolicyCompensate FailurePolicy = "compensate"
	// PolicyContinue records the failure and goes on with the other steps.
	PolicyContinue FailurePolicy = "continue"
	// PolicyAbort stops the operation.
	PolicyAbort FailurePolicy = "abort"
)

// Provider is one entry under providers: a local name bound to a plugin.
type Provider struct {
	Name   string // local name (the key under providers:)
	Source string // plugin name; defaults to Name. The plugin executable is bulwark-provider-<Source>; with a "/", a Terraform provider's source address (lowercase)
	// Version is a Terraform provider's version constraint ("~> 3.6");
	// empty: any version.
	Version string
	Config  map[string]any // JSON-normalised; nil when absent
	Pos     Pos            // position of the local name
	// FieldPos is the position of each field's value ("source", "config")
	// and of each config key ("config.region"); empty for a provider the
	// spec does not declare.
	FieldPos map[string]Pos
}

// Terraform reports whether the provider is one built for Terraform or
// OpenTofu (its source is a Terraform source address).
func (p *Provider) Terraform() bool { return strings.Contains(p.Source, "/") }

// Resource is one entry under resources:.
type Resource struct {
	Name         string
	Type         string
	Provider     string           // local provider name, with default_provider applied (never empty after Parse succeeds)
	Protection   protection.Level // ephemeral when absent
	DependsOn    []string         // as written, order kept
	Config       map[string]any   // JSON-normalised; empty map (not nil) when absent
	OnFailure    FailurePolicy    // compensate when absent
	Intervention bool
	// Import is the id of an existing resource to take over (`import: ID`):
	// the first apply records it as imported instead of creating it.
	Import   string
	Pos      Pos            // position of the resource's "- name:" mapping
	FieldPos map[string]Pos // position of each field's value, e.g. "type", "config", and each config key as "config.bucket"
	// ExplicitProvider reports that provider: was written on the resource.
	ExplicitProvider bool
	// ForEach is the resource's for_each:, nil when it has none. Parse
	// keeps it; resolve.Expand replaces the resource by one instance per
	// key, each with ForEach nil and Addr keyed.
	ForEach *ForEach
	// File is the module file a resource of a module call is declared in
	// (its positions are there), empty for the spec's own; Via names the
	// call, as a suffix of its problems: " (in module call net at
	// stack.yaml:5:11)".
	File, Via string
	// Addr is set by resolve.Expand: {Name} for a plain resource,
	// {Name, Key, Keyed} for an instance, whose Name field above is then
	// Addr.String() ("web[a]"). Use Address(), which also serves a
	// resource Expand did not make.
	Addr Address
}

// Problem returns a problem about the resource at pos: in its module file,
// naming the call, when it is a module's; else in file.
func (r *Resource) Problem(pos Pos, msg string) Problem {
	return Problem{File: r.File, Pos: pos, Msg: msg + r.Via}
}

// ProblemIn is Problem for a resource that may be the spec's own (file).
func (r *Resource) ProblemIn(file string, pos Pos, msg string) Problem {
	if r.File != "" {
		file = r.File
	}
	return Problem{File: file, Pos: pos, Msg: msg + r.Via}
}

// Address returns the resource's address: Addr when set, else its Name
// read as an address.
func (r *Resource) Address() Address {
	if r.Addr.Name != "" {
		return r.Addr
	}
	if a, err := ParseAddress(r.Name); err == nil {
		return a
	}
	return Address{Name: r.Name}
}

// Local is one entry under locals: a named value (${local.NAME}) that may
// use variables and other locals, evaluated before any provider starts.
type Local struct {
	Name  string
	Value any // as a config value: *Template where it holds ${...}
	Pos   Pos // of its name
	// Unbound marks a local of a pending module call's one instance
	// (ModuleCall.Pending): each.key, each.value and count.index in it
	// are not known.
	Unbound bool
}

// ForEach is a resource's for_each: either one reference to a variable
// (`for_each: ${var.zones}`, Ref set) or a literal list or mapping (Value a
// []any or map[string]any, whose strings may reference variables), or an
// expression over variables (Value a *Template, `${toset(var.zones)}`). Its keys
// must be known before any provider starts, so nothing else may be used.
type ForEach struct {
	Ref   *Ref
	Value any
	Pos   Pos
	// Count makes it a count: (the value a whole number N, the instances
	// NAME[0] to NAME[N-1], ${count.index} their index) rather than a
	// for_each.
	Count bool
}

// Data is one entry under data:, a data source its provider reads at plan
// time, before anything is applied; resource configs and outputs read its
// attributes as ${data.NAME.ATTR}. Its config may use variables and other
// data entries, never a resource: nothing is applied yet when it is read.
type Data struct {
	Name     string
	Type     string
	Provider string         // local provider name, with default_provider applied
	Config   map[string]any // JSON-normalised; empty map (not nil) when absent
	Pos      Pos            // position of the entry's "- name:" mapping
	FieldPos map[string]Pos // position of each field's value, and of each config key as "config.KEY"
	// ExplicitProvider reports that provider: was written on the entry.
	ExplicitProvider bool
	// DependsOn are the data entries its config references, in the order
	// they first appear.
	DependsOn []string
	// File and Via are a module's data entry's file and call, as a
	// Resource's.
	File, Via string
}

// VarType is a variable's declared type.
type VarType string

const (
	VarString VarType = "string"
	VarNumber VarType = "number"
	VarBool   VarType = "bool"
	VarList   VarType = "list"
	VarMap    VarType = "map"
)

// Variable is one entry under variables:, an input of the stack.
//
// Its value comes from, in this order of precedence: --var NAME=VALUE,
// --var-file FILE.yaml, the environment variable BULWARK_VAR_<NAME>, then
// Default (package core/resolve, resolve.Values).
type Variable struct {
	Name string
	// Type is as declared; when type: is absent, the type of the default,
	// else string (as Terraform reads an untyped variable from the command
	// line).
	Type VarType
	// Default is JSON-normalised, meaningful when HasDefault (a default of
	// null is a default: the variable is optional and its value null). A
	// default never holds a reference.
	Default     any
	HasDefault  bool
	Description string
	// Sensitive marks the value, and everything derived from it, as a
	// secret: sealed in the state, masked in every output.
	Sensitive bool
	Pos       Pos            // position of the name under variables:
	FieldPos  map[string]Pos // position of each field's value ("type", "default", ...)
}

// Output is one entry under outputs:, a value the stack exports.
type Output struct {
	Name string
	// Value is JSON-normalised and may hold *Template values (references
	// to variables and resources, never to each).
	Value       any
	Description string
	Sensitive   bool
	Pos         Pos            // position of the name under outputs:
	FieldPos    map[string]Pos // position of each field's value ("value", ...)
}

// Spec is a parsed stack spec.
type Spec struct {
	File    string // the name given to Parse or Load
	Version int    // the spec format version, 1
	// Stack is the stack's name. When the stack: field uses variables or
	// locals (StackExpr), it is empty as parsed and set by package resolve
	// (Expand, or StackName for a command that needs only the name).
	Stack string
	// StackExpr is the stack: field when it uses variables or locals
	// ("app-${var.env}"): one spec, one stack per environment. Nil for a
	// plain name.
	StackExpr *Template
	// StackPos is the position of the stack: field's value.
	StackPos Pos
	// Providers maps each declared local name to its provider.
	Providers map[string]*Provider
	// DefaultProvider is default_provider as written or, when it is absent
	// and exactly one provider is declared, that provider; else empty.
	DefaultProvider string
	Resources       []*Resource // in file order
	// Data are the data: entries, in file order.
	Data []*Data
	// Variables are the declared inputs, in file order.
	Variables []*Variable
	// Outputs are the declared outputs, in file order.
	Outputs []*Output
	// Moved are the moved: entries, in file order: renames the state's
	// records follow.
	Moved []*Moved
	// Removed are the removed: entries, in file order: resources that left
	// the spec, kept (destroy: false) or deleted.
	Removed []*Removed
	// Values holds the value of every variable once resolve.Expand has
	// run (nil before): the inputs of this run, to be recorded with its
	// revision.
	Values map[string]any
	// Locals in the order written (resolve.Expand substitutes them).
	Locals []*Local
	// Secrets are the values expressions computed from sensitive values
	// (${upper(var.token)}) once resolve.Expand or resolve.SubstituteData
	// has run: each is sensitive as a sensitive variable's value is,
	// sealed in the state and masked everywhere, though its text differs.
	Secrets []any
	// Text is the spec's source, kept so an applied spec can be recorded as a
	// revision and parsed again by rollback.
	Text []byte
	// Override is the provider WithDefaultProvider swapped in ("" if none).
	Override string
	// ModuleFiles are the texts of the module files the calls read, by
	// name relative to the spec's folder (modules/network/module.yaml):
	// what Recorded records beside Text.
	ModuleFiles map[string]string
	// NestedCalls are the pending calls of the modules instantiated in
	// the spec, named under their instance (w["eu"].in), their for_each
	// or count renamed as the module's entries are (PendingCalls returns
	// them after the spec's own).
	NestedCalls []*ModuleCall
	// PerInstance reports that a call of the spec, or of a module it
	// calls, takes its instances from an expression: a module file
	// holding one is read again for each instance of its caller, whose
	// decided keys differ from one to the next (loadModule).
	PerInstance bool
	// Modules are the modules: calls, in file order. Parse has already
	// instantiated each: its resources, data and locals are in the fields
	// above under names prefixed "CALL." (see module.go).
	Modules []*ModuleCall
}

// Resource returns the resource named name, or false.
func (s *Spec) Resource(name string) (*Resource, bool) {
	for _, r := range s.Resources {
		if r.Name == name {
			return r, true
		}
	}
	return nil, false
}

// DataEntry returns the data entry named name, or false.
func (s *Spec) DataEntry(name string) (*Data, bool) {
	for _, d := range s.Data {
		if d.Name == name {
			return d, true
		}
	}
	return nil, false
}

// Variable returns the variable named name, or false.
func (s *Spec) Variable(name string) (*Variable, bool) {
	for _, v := range s.Variables {
		if v.Name == name {
			return v, true
		}
	}
	return nil, false
}

// Output returns the output named name, or false.
func (s *Spec) Output(name string) (*Output, bool) {
	for _, o := range s.Outputs {
		if o.Name == name {
			return o, true
		}
	}
	return nil, false
}

// Expanded reports whether the spec is concrete: no resource has a
// for_each left and no variable reference is left anywhere (a spec with
// no variables and no for_each is concrete as parsed). Only resource
// references, resolved at apply time, remain in a concrete spec's configs.
func (s *Spec) Expanded() bool {
	if s.Values != nil {
		return true
	}
	if len(s.Variables) > 0 || len(s.Locals) > 0 || s.StackExpr != nil || len(s.PendingCalls()) > 0 {
		return false
	}
	for _, r := range s.Resources {
		if r.ForEach != nil {
			return false
		}
	}
	return true
}

// Graph returns the dependency graph: every resource a node, an edge from
// each resource to each resource it depends on.
func (s *Spec) Graph() *dag.Graph {
	g := dag.New()
	for _, r := range s.Resources {
		g.Add(r.Name)
		for _, d := range r.DependsOn {
			g.Connect(r.Name, d)
		}
	}
	return g
}

// WithDefaultProvider returns a copy in which every resource that did not name its provider
// explicitly uses the provider `name`; if the spec does not declare `name` it is added with
// Source=name and nil config ("a provider the spec does not declare runs with its default config").
// The copy's DefaultProvider is name. The receiver is not changed. The
// caller is responsible for name being a valid provider name.
func (s *Spec) WithDefaultProvider(name string) *Spec {
	c := *s
	c.DefaultProvider, c.Override = name, name
	c.Providers = make(map[string]*Provider, len(s.Providers)+1)
	for k, p := range s.Providers {
		cp := *p
		cp.Config = value.CloneMap(p.Config)
		c.Providers[k] = &cp
	}
	if _, ok := c.Providers[name]; !ok {
		c.Providers[name] = &Provider{Name: name, Source: name}
	}
	c.Resources = make([]*Resource, len(s.Resources))
	for i, r := range s.Resources {
		cr := *r
		cr.DependsOn = slices.Clone(r.DependsOn)
		cr.Config = value.CloneMap(r.Config)
		cr.FieldPos = maps.Clone(r.FieldPos)
		if !cr.ExplicitProvider {
			cr.Provider = name
		}
		c.Resources[i] = &cr
	}
	c.Data = make([]*Data, len(s.Data))
	for i, d := range s.Data {
		cd := *d
		cd.Config = value.CloneMap(d.Config)
		cd.FieldPos = maps.Clone(d.FieldPos)
		if !cd.ExplicitProvider {
			cd.Provider = name
		}
		c.Data[i] = &cd
	}
	return &c
}

// ProvidersUsed returns the local names of providers some resource or data
// entry uses, sorted.
func (s *Spec) ProvidersUsed() []string {
	seen := map[string]bool{}
	var out []string
	for _, r := range s.Resources {
		if r.Provider != "" && !seen[r.Provider] {
			seen[r.Provider] = true
			out = append(out, r.Provider)
		}
	}
	for _, d := range s.Data {
		if d.Provider != "" && !seen[d.Provider] {
			seen[d.Provider] = true
			out = append(out, d.Provider)
		}
	}
	sort.Strings(out)
	return out
}
