// Package spec parses and validates a bulwark stack spec, the YAML file that
// declares a stack's providers and resources.
//
// Parse (and Load, which reads a file first) guarantees that a *Spec it
// returns without error is structurally sound:
//   - version is 1, the stack and every provider and resource name is
//     well-formed, resource names are unique;
//   - no field is unknown at any level, no mapping repeats a key, every value
//     has the kind its field wants;
//   - every resource has a type, a declared provider (default_provider
//     applied), a known protection level and failure policy;
//   - every dependency names a resource of the spec, none is repeated or
//     points at its own resource, and the dependency graph has no cycle;
//   - every config is a JSON-like value (string, float64, bool, nil, []any,
//     map[string]any) with finite numbers and string keys.
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
// a schema) is checked separately by Spec.CheckSchemas, once the schemas
// have been read from the plugins.
package spec
