package spec

import (
	"fmt"
	"slices"

	"github.com/bulwark-iac/bulwark/core/providers"
)

// CheckSchemas checks, after the providers' schemas are read: every resource's type exists in
// its provider's schema ("unknown resource type \"s3_buckt\" for provider mock (has: a, b, c)")
// and its config passes providers.CheckConfig, each problem positioned at the config key
// (FieldPos["config."+key]) or the field ("type", "config") or the resource. Returns Problems or nil.
// Every data entry is checked the same way against its provider's data
// sources (a provider without Capabilities.ReadData offers none), and so
// is every ${data.NAME.ATTR}.
// schemas is keyed by local provider name; a provider some resource uses
// that has no schema there is a problem too.
//
// On an expanded spec (resolve.Expand) it also checks every resource
// reference in configs and outputs: the attribute must be id or one the
// referenced resource's type declares (computed ones included), else a
// problem at the reference's ${, reported once however many for_each
// instances share it. A value that is one reference is type-checked as the
// referenced attribute's type (so ${net.cidr} cannot be given to a number),
// one that interpolates references as a string.
func (s *Spec) CheckSchemas(schemas map[string]*providers.GetSchemaResponse) error {
	var ps Problems
	add := func(pos Pos, format string, args ...any) {
		ps = append(ps, Problem{File: s.File, Pos: pos, Msg: fmt.Sprintf(format, args...)})
	}
	rc := &refChecker{s: s, schemas: schemas, reported: map[refProblem]bool{}, add: add}
	for _, o := range s.Outputs {
		rc.shape(o.Value)
	}
	for _, name := range s.sortedProviders() {
		if schema := schemas[name]; schema != nil {
			ps = append(ps, s.providerConfigProblems(name, schema)...)
		}
	}
	top := add
	for _, r := range s.Resources {
		add := top
		if r.File != "" {
			// A module's resource: at the module file, naming the call.
			add = func(pos Pos, format string, args ...any) {
				ps = append(ps, r.Problem(pos, fmt.Sprintf(format, args...)))
			}
		}
		rc.add = add
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
		shaped := rc.shapeConfig(r.Config)
		for _, d := range providers.CheckConfig(rt, shaped) {
			if d.Severity == providers.SeverityWarning {
				continue
			}
			if len(d.AttributePath) > 0 && dropped(r.Config, shaped, d.AttributePath[0]) {
				// An expression still to evaluate: its type cannot be
				// told yet, and it is not missing.
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
			if len(d.AttributePath) > 0 {
				if t, ok := r.Config[d.AttributePath[0]].(*Template); ok {
					msg += " (the value of " + clip(t.String()) + ")"
				}
			}
			pos := fieldPos(r, append(keys, "config")...)
			if a := r.Address(); a.Keyed {
				// Every instance of a for_each resource shares its config's
				// positions: one problem, named by the first instance.
				k := refProblem{pos, a.Name + "\x00" + msg}
				if rc.reported[k] {
					continue
				}
				rc.reported[k] = true
			}
			add(pos, "resource %q: %s", r.Name, msg)
		}
	}
	rc.add = top
	for _, d := range s.Data {
		add := top
		if d.File != "" {
			add = func(pos Pos, format string, args ...any) {
				ps = append(ps, Problem{File: d.File, Pos: pos, Msg: fmt.Sprintf(format, args...) + d.Via})
			}
		}
		rc.add = add
		s.checkData(d, schemas[d.Provider], rc, add)
	}
	if len(ps) == 0 {
		return nil
	}
	ps.sort()
	return ps
}

// checkData checks a data entry against its provider's schema: the
// provider reads data sources, offers the entry's type, and the config
// passes providers.CheckConfig against the type's attributes.
func (s *Spec) checkData(d *Data, schema *providers.GetSchemaResponse, rc *refChecker, add func(Pos, string, ...any)) {
	pos := func(keys ...string) Pos {
		for _, k := range keys {
			if p, ok := d.FieldPos[k]; ok {
				return p
			}
		}
		return d.Pos
	}
	if schema == nil {
		add(d.Pos, "data %q: no schema was read for provider %q", d.Name, d.Provider)
		return
	}
	source := d.Provider
	if p := s.Providers[d.Provider]; p != nil && p.Source != d.Provider {
		source += " (" + p.Source + ")"
	}
	if !schema.Capabilities.ReadData {
		add(pos("provider", "type"), "data %q: provider %s reads no data sources (its plugin does not offer ReadData)", d.Name, source)
		return
	}
	dt, ok := schema.DataSource(d.Type)
	if !ok {
		names := make([]string, 0, len(schema.DataSources))
		for _, t := range schema.DataSources {
			names = append(names, t.Name)
		}
		slices.Sort(names)
		add(pos("type"), "data %q: unknown data source type %s for provider %s (has: %s)", d.Name, quote(d.Type), source, nameList(names))
		return
	}
	for _, dg := range providers.CheckConfig(providers.ResourceType{Name: dt.Name, Attributes: dt.Attributes}, rc.shapeConfig(d.Config)) {
		if dg.Severity == providers.SeverityWarning {
			continue
		}
		var keys []string
		if len(dg.AttributePath) > 0 {
			keys = append(keys, "config."+dg.AttributePath[0])
		}
		msg := dg.Summary
		if dg.Detail != "" {
			msg += ": " + dg.Detail
		}
		add(pos(append(keys, "config")...), "data %q: %s", d.Name, msg)
	}
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

// CheckProviderConfig checks the config of local provider name against the
// provider's config schema (schema.ProviderConfig): unknown keys, values of
// the wrong type and missing required keys, each positioned at the key (or
// the provider's config, or its name). A provider whose schema describes no
// config (one written before config schemas existed) is not checked, nor is
// a provider the spec does not declare. Messages never quote a value.
// Returns Problems or nil.
func (s *Spec) CheckProviderConfig(name string, schema *providers.GetSchemaResponse) error {
	if ps := s.providerConfigProblems(name, schema); len(ps) > 0 {
		ps.sort()
		return ps
	}
	return nil
}

func (s *Spec) providerConfigProblems(name string, schema *providers.GetSchemaResponse) Problems {
	p, ok := s.Providers[name]
	if !ok || schema == nil || len(schema.ProviderConfig) == 0 || (p.Pos == Pos{} && len(p.FieldPos) == 0) {
		return nil
	}
	var ps Problems
	add := func(key, format string, args ...any) {
		pos := p.Pos
		if fp, ok := p.FieldPos["config"]; ok {
			pos = fp
		}
		if fp, ok := p.FieldPos["config."+key]; ok && key != "" {
			pos = fp
		}
		ps = append(ps, Problem{File: s.File, Pos: pos, Msg: fmt.Sprintf("provider %s: ", quote(name)) + fmt.Sprintf(format, args...)})
	}
	rt := providers.ResourceType{Name: "provider " + p.Source, Attributes: schema.ProviderConfig}
	names := make([]string, 0, len(schema.ProviderConfig))
	for _, a := range schema.ProviderConfig {
		names = append(names, a.Name)
	}
	slices.Sort(names)
	keys := make([]string, 0, len(p.Config))
	for k := range p.Config {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		a, ok := rt.Attribute(k)
		if !ok {
			add(k, "unknown config key %s (has: %s)", quote(k), nameList(names))
			continue
		}
		// The type rules of a resource's config, for this one key.
		a.Required, a.Computed = false, false
		v := p.Config[k]
		if t, ok := v.(*Template); ok {
			// A value not known without the variables' values
			// (resolve.ExpandUnknown): checked by its type, if known.
			ref := t.Single()
			if ref == nil {
				continue
			}
			at, ok := s.unknownType(ref)
			if !ok {
				continue
			}
			v = placeholder(at)
		}
		for _, d := range providers.CheckConfig(providers.ResourceType{Name: rt.Name, Attributes: []providers.Attribute{a}}, map[string]any{k: v}) {
			if d.Severity != providers.SeverityWarning {
				add(k, "config key %s: %s", quote(k), d.Summary)
			}
		}
	}
	for _, a := range schema.ProviderConfig {
		if v, ok := p.Config[a.Name]; a.Required && (!ok || v == nil) {
			add("", "missing required config key %s", quote(a.Name))
		}
	}
	return ps
}

// sortedProviders returns the declared local provider names, sorted.
func (s *Spec) sortedProviders() []string {
	out := make([]string, 0, len(s.Providers))
	for n := range s.Providers {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// refChecker checks resource references against the schemas.
type refChecker struct {
	s        *Spec
	schemas  map[string]*providers.GetSchemaResponse
	byAddr   map[string]*Resource // built when first needed
	reported map[refProblem]bool
	add      func(pos Pos, format string, args ...any)
}

type refProblem struct {
	pos Pos
	ref string
}

// attrType returns the type of the attribute ref names, and false when
// that cannot be told (reported here when the attribute does not exist).
func (c *refChecker) attrType(ref *Ref) (providers.AttributeType, bool) {
	switch ref.Kind {
	case RefData:
		return c.dataAttrType(ref)
	case RefStack:
		return 0, false // whatever the other stack's output holds
	case RefVar, RefEachKey, RefEachValue, RefLocal:
		// Left by resolve.ExpandUnknown: a value not known without the
		// variables' values, of the declared type where there is one.
		return c.s.unknownType(ref)
	}
	if c.byAddr == nil {
		c.byAddr = make(map[string]*Resource, len(c.s.Resources))
		for _, r := range c.s.Resources {
			c.byAddr[r.Name] = r
		}
	}
	t, ok := c.byAddr[ref.Address()]
	if !ok {
		return 0, false // not expanded, or a key Expand reported
	}
	if ref.Attr == "id" {
		return providers.TypeString, true
	}
	schema := c.schemas[t.Provider]
	if schema == nil {
		return 0, false
	}
	rt, ok := schema.ResourceType(t.Type)
	if !ok {
		return 0, false // reported as an unknown type
	}
	if a, ok := rt.Attribute(ref.Attr); ok {
		return a.Type, true
	}
	if k := (refProblem{ref.Pos, ref.String()}); !c.reported[k] {
		c.reported[k] = true
		names := []string{"id"}
		for _, a := range rt.Attributes {
			names = append(names, a.Name)
		}
		c.add(ref.Pos, "unknown attribute %s in %s: type %s of provider %s has %s", quote(ref.Attr), ref, t.Type, t.Provider, nameList(names))
	}
	return 0, false
}

// dataAttrType is attrType for ${data.NAME.ATTR}: the attribute must be
// one the entry's data source type declares.
func (c *refChecker) dataAttrType(ref *Ref) (providers.AttributeType, bool) {
	d, ok := c.s.DataEntry(ref.Name)
	if !ok {
		return 0, false // reported by Parse
	}
	schema := c.schemas[d.Provider]
	if schema == nil {
		return 0, false
	}
	dt, ok := schema.DataSource(d.Type)
	if !ok {
		return 0, false // reported as an unknown type
	}
	if a, ok := dt.Attribute(ref.Attr); ok {
		return a.Type, true
	}
	if k := (refProblem{ref.Pos, ref.String()}); !c.reported[k] {
		c.reported[k] = true
		names := make([]string, 0, len(dt.Attributes))
		for _, a := range dt.Attributes {
			names = append(names, a.Name)
		}
		c.add(ref.Pos, "unknown attribute %s in %s: data source %s of provider %s has %s", quote(ref.Attr), ref, d.Type, d.Provider, nameList(names))
	}
	return 0, false
}

// shapeConfig returns cfg with each reference replaced by a value of its
// type, for providers.CheckConfig; a key whose reference could not be checked
// is left out (its problem is already reported).
func (c *refChecker) shapeConfig(cfg map[string]any) map[string]any {
	var out map[string]any
	for k, v := range cfg {
		if _, isTmpl := v.(*Template); !isTmpl && !hasTemplate(v) {
			continue
		}
		if out == nil {
			out = make(map[string]any, len(cfg))
			for k2, v2 := range cfg {
				out[k2] = v2
			}
		}
		sv, ok := c.shape(v)
		if !ok {
			delete(out, k)
			continue
		}
		out[k] = sv
	}
	if out == nil {
		return cfg
	}
	return out
}

// dropped reports whether shapeConfig left key out of shaped though cfg
// has it as an expression, whose type is known once it is evaluated.
func dropped(cfg, shaped map[string]any, key string) bool {
	t, isTmpl := cfg[key].(*Template)
	_, kept := shaped[key]
	return isTmpl && t.Whole() != nil && !kept
}

func hasTemplate(v any) bool {
	switch v := v.(type) {
	case *Template:
		return true
	case map[string]any:
		for _, e := range v {
			if hasTemplate(e) {
				return true
			}
		}
	case []any:
		for _, e := range v {
			if hasTemplate(e) {
				return true
			}
		}
	}
	return false
}

// shape returns v with its references replaced by placeholders of their
// types, checking each; false when a single reference's type is unknown.
func (c *refChecker) shape(v any) (any, bool) {
	switch v := v.(type) {
	case *Template:
		if ref := v.Single(); ref != nil {
			t, ok := c.attrType(ref)
			if !ok {
				return nil, false
			}
			return placeholder(t), true
		}
		for _, r := range v.Refs() {
			c.attrType(r)
		}
		if x := v.Whole(); x != nil {
			// An expression's type is known once evaluated, or when all
			// it uses is bound and only a value is unknown (a variable
			// with no value, resolve.ExpandUnknown).
			if t, ok := x.unknownType(); ok {
				return placeholder(t), true
			}
			return nil, false
		}
		return "", true
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k], _ = c.shape(e)
		}
		return out, true
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i], _ = c.shape(e)
		}
		return out, true
	}
	return v, true
}

// unknownType is the type of a reference resolve.ExpandUnknown leaves
// because its value is not known: a variable's declared type, a string for
// each.key; false for each.value and a local (any type).
func (s *Spec) unknownType(ref *Ref) (providers.AttributeType, bool) {
	switch ref.Kind {
	case RefEachKey:
		return providers.TypeString, true
	case RefVar:
		if v, ok := s.Variable(ref.Name); ok {
			switch v.Type {
			case VarString:
				return providers.TypeString, true
			case VarNumber:
				return providers.TypeNumber, true
			case VarBool:
				return providers.TypeBool, true
			case VarList:
				return providers.TypeList, true
			case VarMap:
				return providers.TypeMap, true
			}
		}
	}
	return 0, false
}

// placeholder is a value of type t, standing for a reference's value.
func placeholder(t providers.AttributeType) any {
	switch t {
	case providers.TypeNumber:
		return 0.0
	case providers.TypeBool:
		return false
	case providers.TypeList:
		return []any{}
	case providers.TypeMap:
		return map[string]any{}
	}
	return ""
}
