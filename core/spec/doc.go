// Package spec parses and validates a bulwark stack spec, the YAML file that
// declares a stack's providers and resources.
//
// Parse (and Load, which reads a file first) guarantees that a *Spec it
// returns without error is structurally sound:
//   - version is 1, the stack and every provider and resource name is
//     well-formed, resource names are unique; a stack name that uses
//     variables or locals (StackExpr) uses nothing else and nothing
//     sensitive, and is checked once resolved (package core/resolve);
//   - no field is unknown at any level, no mapping repeats a key, every value
//     has the kind its field wants;
//   - every resource has a type, a declared provider (default_provider
//     applied), a known protection level and failure policy;
//   - every dependency names a resource of the spec, none is repeated or
//     points at its own resource, and the dependency graph has no cycle;
//   - every config is a JSON-like value (string, float64, bool, nil, []any,
//     map[string]any) with finite numbers and string keys, in which a string
//     that holds a ${...} reference is a *Template (see below);
//   - every variable has a known type and a default of that type (or none),
//     every output a value;
//   - every reference is well-formed and names a declared variable, or a
//     resource of the spec other than its own (with [KEY] exactly when that
//     resource has for_each); each.key and each.value appear only in the
//     config of a resource with for_each; for_each and provider configs use
//     only variables; references count as dependencies in the cycle check;
//   - a data: entry (a data source read at plan time) uses only variables
//     and other data entries in its config, never a resource (nothing is
//     applied when it is read); ${data.NAME.ATTR} names a declared entry.
//
// References. A config, output, for_each or provider-config string holding
// ${var.NAME}, ${RESOURCE.ATTR}, ${RESOURCE[KEY].ATTR}, ${data.NAME.ATTR},
// ${each.key} or ${each.value} is kept as a *Template of literal and *Ref parts, each Ref
// with the FILE:LINE:COL of its ${; $${ is a literal ${. Parse does not
// evaluate anything: package core/resolve gives the variables their values
// and expands for_each into instances addressed NAME[KEY] (Address) before
// any provider starts, then resolves resource references at apply time.
// A spec with no variables and no for_each is concrete as parsed.
//
// The lists above are the core of the language, not all of it: a ${...}
// that is not one of those plain references is an *Expr, HCL's expression
// syntax (operators, conditionals, for expressions, the Functions), a Part
// of its Template beside the Refs; locals: (${local.X}) and count:
// (${count.index}) are checked like variables and for_each; modules: calls
// are expanded by Parse itself into resources addressed CALL.NAME
// (module.go, moduleeach.go; docs/architecture.md's entry for core/spec
// walks through it); ${stack.NAME.outputs.X} names another stack's output;
// and moved: and removed: entries are parsed here too.
//
// When a spec is not sound, Parse reports every problem it finds at once, as
// Problems sorted by position, each printed as FILE:LINE:COL: message. It
// never stops at the first problem. A dependency cycle is reported once per
// set of resources that depend on each other, as a path: a -> b -> a.
//
// Hostile input is bounded: a spec larger than 1 MiB is refused by Load,
// YAML anchors and aliases are rejected (so an alias bomb costs nothing),
// nesting deeper than 64 levels is rejected, the YAML parser's panics, if
// any, become problems, and a message quotes at most 64 bytes of a value and
// lists at most 10 names, so the problems grow no faster than the spec.
//
// What depends on the providers (resource types and config checked against
// a schema, referenced attributes) is checked separately by
// Spec.CheckSchemas, once the schemas have been read from the plugins.
package spec
