package tfplugin

import (
	"github.com/zclconf/go-cty/cty"
)

// ProposedNew is the proposed new state PlanResourceChange is given, as
// Terraform makes it (objchange.ProposedNew): the configuration, where it
// leaves a computed attribute null the prior state's value (so a computed
// value the provider set stays unless the provider plans otherwise), nested
// blocks and nested attributes merged the same way element by element
// (lists by index, maps by key). Set elements are not correlated with the
// prior ones, as Terraform does for those with computed attributes: their
// computed attributes stay null, and the provider plans them again. A null
// config (a destroy) proposes null; a null prior (a create) contributes
// nothing: the config is proposed as it is (merging with nulls everywhere
// gives back an equal value, built anew; TestProposedNewOfNothing).
func ProposedNew(schema *Block, prior, config cty.Value) cty.Value {
	if config.IsNull() || !config.IsKnown() || prior.IsNull() || !prior.IsKnown() {
		return config
	}
	return proposedBlock(schema, prior, config)
}

// proposedBlock merges one block object (config known and not null).
func proposedBlock(b *Block, prior, config cty.Value) cty.Value {
	if len(b.Attributes)+len(b.BlockTypes) == 0 {
		return config
	}
	out := make(map[string]cty.Value, len(b.Attributes)+len(b.BlockTypes))
	for name, a := range b.Attributes {
		out[name] = proposedAttribute(a, attr(prior, name), config.GetAttr(name))
	}
	for name, nb := range b.BlockTypes {
		out[name] = proposedNested(nb, attr(prior, name), config.GetAttr(name))
	}
	return cty.ObjectVal(out)
}

// attr is an attribute of an object that may be null (then null too).
func attr(obj cty.Value, name string) cty.Value {
	if obj.IsNull() || !obj.IsKnown() {
		return cty.NullVal(obj.Type().AttributeType(name))
	}
	return obj.GetAttr(name)
}

func proposedAttribute(a *Attribute, prior, config cty.Value) cty.Value {
	if a.Computed && config.IsNull() {
		return prior
	}
	if a.NestedType == nil || config.IsNull() || !config.IsKnown() || prior.IsNull() || !prior.IsKnown() {
		return config
	}
	inner := &Block{Attributes: a.NestedType.Attributes}
	return proposedCollection(a.NestedType.Nesting, func(p, c cty.Value) cty.Value { return proposedBlock(inner, p, c) }, prior, config)
}

func proposedNested(nb *NestedBlock, prior, config cty.Value) cty.Value {
	if !config.IsKnown() {
		return config
	}
	if config.IsNull() {
		return config // an absent single block
	}
	return proposedCollection(nb.Nesting, func(p, c cty.Value) cty.Value { return proposedBlock(nb.Block, p, c) }, prior, config)
}

// proposedCollection merges config with prior element by element, as
// nesting says, with merge for one element's object.
func proposedCollection(nesting NestingMode, merge func(prior, config cty.Value) cty.Value, prior, config cty.Value) cty.Value {
	switch nesting {
	case NestingSingle, NestingGroup:
		if !config.Type().IsObjectType() {
			return config
		}
		if prior.IsNull() || !prior.Type().IsObjectType() {
			prior = cty.NullVal(config.Type())
		}
		return merge(prior, config)
	case NestingList:
		if !config.Type().IsListType() && !config.Type().IsTupleType() {
			return config
		}
		var priors []cty.Value
		if !prior.IsNull() && prior.IsKnown() && prior.CanIterateElements() {
			priors = prior.AsValueSlice()
		}
		elems := config.AsValueSlice()
		if len(elems) == 0 {
			return config
		}
		out := make([]cty.Value, len(elems))
		for i, c := range elems {
			if !c.IsKnown() || c.IsNull() || !c.Type().IsObjectType() {
				out[i] = c
				continue
			}
			p := cty.NullVal(c.Type())
			if i < len(priors) && priors[i].Type().Equals(c.Type()) {
				p = priors[i]
			}
			out[i] = merge(p, c)
		}
		if config.Type().IsTupleType() {
			return cty.TupleVal(out)
		}
		return cty.ListVal(out)
	case NestingMap:
		if !config.Type().IsMapType() && !config.Type().IsObjectType() {
			return config
		}
		var priors map[string]cty.Value
		if !prior.IsNull() && prior.IsKnown() && prior.CanIterateElements() {
			priors = prior.AsValueMap()
		}
		elems := config.AsValueMap()
		if len(elems) == 0 {
			return config
		}
		out := make(map[string]cty.Value, len(elems))
		for k, c := range elems {
			if !c.IsKnown() || c.IsNull() || !c.Type().IsObjectType() {
				out[k] = c
				continue
			}
			p, ok := priors[k]
			if !ok || !p.Type().Equals(c.Type()) {
				p = cty.NullVal(c.Type())
			}
			out[k] = merge(p, c)
		}
		if config.Type().IsObjectType() {
			return cty.ObjectVal(out)
		}
		return cty.MapVal(out)
	}
	return config // sets: see ProposedNew
}
