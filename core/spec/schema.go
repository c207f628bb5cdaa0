package spec

import (
	"fmt"
	"slices"

	"github.com/bulwark-iac/bulwark/sdk"
)

// CheckSchemas checks, after the providers' schemas are read: every resource's type exists in
// its provider's schema ("unknown resource type \"s3_buckt\" for provider mock (has: a, b, c)")
// and its config passes sdk.CheckConfig, each problem positioned at the config key
// (FieldPos["config."+key]) or the field ("type", "config") or the resource. Returns Problems or nil.
// schemas is keyed by local provider name; a provider some resource uses
// that has no schema there is a problem too.
func (s *Spec) CheckSchemas(schemas map[string]*sdk.GetSchemaResponse) error {
	var ps Problems
	add := func(pos Pos, format string, args ...any) {
		ps = append(ps, Problem{File: s.File, Pos: pos, Msg: fmt.Sprintf(format, args...)})
	}
	for _, r := range s.Resources {
		schema := schemas[r.Provider]
		if schema == nil {
			add(r.Pos, "resource %q: no schema was read for provider %q", r.Name, r.Provider)
			continue
		}
		rt, ok := schema.ResourceType(r.Type)
		if !ok {
			names := make([]string, 0, len(schema.ResourceTypes))
			for _, t := range schema.ResourceTypes {
				names = append(names, t.Name)
			}
			slices.Sort(names)
			add(fieldPos(r, "type"), "unknown resource type %s for provider %s (has: %s)", quote(r.Type), r.Provider, nameList(names))
			continue
		}
		for _, d := range sdk.CheckConfig(rt, r.Config) {
			if d.Severity == sdk.SeverityWarning {
				continue
			}
			var keys []string
			if len(d.AttributePath) > 0 {
				keys = append(keys, "config."+d.AttributePath[0])
			}
			msg := d.Summary
			if d.Detail != "" {
				msg += ": " + d.Detail
			}
			add(fieldPos(r, append(keys, "config")...), "resource %q: %s", r.Name, msg)
		}
	}
	if len(ps) == 0 {
		return nil
	}
	ps.sort()
	return ps
}

// fieldPos returns the position of the first of keys r.FieldPos has, else
// the resource's position.
func fieldPos(r *Resource, keys ...string) Pos {
	for _, k := range keys {
		if pos, ok := r.FieldPos[k]; ok {
			return pos
		}
	}
	return r.Pos
}
