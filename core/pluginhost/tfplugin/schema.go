package tfplugin

import (
	"crypto/sha256"
	"encoding/base64"
	"sort"
	"sync"

	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"

	"github.com/bulwark-iac/bulwark/core/providers"
)

// ProviderSchema is what GetProviderSchema answers, in the host's terms.
type ProviderSchema struct {
	// Provider is the schema of the provider's own configuration.
	Provider *Schema
	// ProviderMeta is the schema of the provider_meta block modules may
	// set (nil: the provider has none).
	ProviderMeta *Schema
	// ResourceTypes and DataSources are keyed by type name.
	ResourceTypes map[string]*Schema
	DataSources   map[string]*Schema
	Capabilities  ServerCapabilities
	Diagnostics   providers.Diagnostics

	// meta is providerMeta's answer, worked out once when the Provider
	// keeps the schema (metaSet): sent on every call that takes it.
	meta    []byte
	metaSet bool
}

// ServerCapabilities are the optional protocol features a provider says it
// offers.
type ServerCapabilities struct {
	// PlanDestroy: the provider expects a PlanResourceChange for a destroy
	// (proposed new state null) before the ApplyResourceChange that does it.
	PlanDestroy bool
	// GetProviderSchemaOptional: the provider works without a
	// GetProviderSchema call on each start (a cached schema will do).
	GetProviderSchemaOptional bool
	// MoveResourceState: the provider implements MoveResourceState (not
	// spoken by this package).
	MoveResourceState bool
}

// Schema is a versioned block: a resource type's, a data source's or the
// provider's configuration. Version is what UpgradeResourceState is told a
// stored state was written under.
type Schema struct {
	Version int64
	Block   *Block
}

// Block is a configuration block: attributes and nested blocks. Its
// ImpliedType is the object type of every value of it on the wire.
type Block struct {
	Attributes map[string]*Attribute
	BlockTypes map[string]*NestedBlock

	Description        string
	DescriptionKind    StringKind
	Deprecated         bool
	DeprecationMessage string

	// implied is ImpliedType, worked out on its first call: every call
	// of the host and the adapter needs it, some several times, and a
	// schema does not change once read. A Block is not to be changed
	// after its ImpliedType is asked.
	implied struct {
		once sync.Once
		ty   cty.Type
		// names are ty's attribute names, sorted: what every plan
		// compares, once per attribute.
		names []string
		// null is the msgpack encoding of ty's null value: a create's
		// prior state and a destroy's planned state and config, sent
		// on every one of them.
		null []byte
		// digest names ty: a short digest of its JSON (see typeDigest).
		digest string
	}
}

// StringKind says how a description is written.
type StringKind int

const (
	StringPlain StringKind = iota
	StringMarkdown
)

// Attribute is one attribute of a block or of a nested attribute's object.
// Exactly one of Type and NestedType is set: Type for a plain attribute
// (cty.NilType otherwise), NestedType for a nested attribute (protocol 6
// only).
type Attribute struct {
	Type       cty.Type
	NestedType *Object

	Description        string
	DescriptionKind    StringKind
	Required           bool // must be set in the configuration
	Optional           bool // may be set in the configuration
	Computed           bool // set by the provider (when Optional too: when the configuration leaves it null)
	Sensitive          bool // never shown
	Deprecated         bool
	DeprecationMessage string
	// WriteOnly: given in the configuration, never stored in a state. The
	// host tells providers it does not support them (ClientCapabilities),
	// so a provider that has some refuses their resources at validation.
	WriteOnly bool
}

// Object is the value type of a nested attribute: an object of attributes,
// nested as Nesting says.
type Object struct {
	Attributes map[string]*Attribute
	Nesting    NestingMode
}

// NestedBlock is a block type nested in a block.
type NestedBlock struct {
	Block    *Block
	Nesting  NestingMode
	MinItems int64
	MaxItems int64
}

// NestingMode is how a nested block (or a nested attribute's object) is
// repeated.
type NestingMode int

const (
	NestingInvalid NestingMode = iota
	// NestingSingle: at most one; its value is the object itself (null when
	// absent).
	NestingSingle
	// NestingGroup: exactly one, never null; absent in the configuration,
	// it is an object of null attributes. Blocks only.
	NestingGroup
	// NestingList: a list of objects, in order.
	NestingList
	// NestingSet: a set of objects.
	NestingSet
	// NestingMap: a map of objects, by label.
	NestingMap
)

func (n NestingMode) String() string {
	switch n {
	case NestingSingle:
		return "single"
	case NestingGroup:
		return "group"
	case NestingList:
		return "list"
	case NestingSet:
		return "set"
	case NestingMap:
		return "map"
	}
	return "invalid"
}

// ImpliedType is the cty type of a value of the block, as Terraform derives
// it (configschema.Block.ImpliedType): an object with one attribute per
// attribute and per nested block type. A list or map of blocks whose type
// has a dynamic part is cty.DynamicPseudoType (Terraform decodes those as
// a tuple or object whose element types may differ).
func (b *Block) ImpliedType() cty.Type {
	if b == nil {
		return cty.EmptyObject
	}
	b.implied.once.Do(b.imply)
	return b.implied.ty
}

// attributeNames are ImpliedType's attribute names, sorted; not to be
// changed by the caller.
func (b *Block) attributeNames() []string {
	if b == nil {
		return nil
	}
	b.implied.once.Do(b.imply)
	return b.implied.names
}

func (b *Block) imply() {
	b.implied.ty = b.impliedType()
	b.implied.names = sortedKeys(b.implied.ty.AttributeTypes())
	b.implied.null, _ = EncodeMsgpack(cty.NullVal(b.implied.ty), b.implied.ty)
	if tj, err := ctyjson.MarshalType(b.implied.ty); err == nil {
		sum := sha256.Sum256(tj)
		b.implied.digest = base64.RawURLEncoding.EncodeToString(sum[:12])
	}
}

// typeDigest names ImpliedType: the base64 of the first 12 bytes of the
// SHA-256 of its JSON (cty's, whose attributes are sorted), "" when it has
// none. An envelope keeps it beside its msgpack, whose bytes are sent back
// as they are only to a provider whose type is still exactly that one (a
// provider may add an attribute without moving its schema version).
func (b *Block) typeDigest() string {
	if b == nil {
		return ""
	}
	b.implied.once.Do(b.imply)
	return b.implied.digest
}

// nullMsgpack is the msgpack encoding of the null value of ImpliedType
// (nil when it could not be encoded: the caller encodes it then); not to
// be changed by the caller.
func (b *Block) nullMsgpack() []byte {
	if b == nil {
		return nil
	}
	b.implied.once.Do(b.imply)
	return b.implied.null
}

func (b *Block) impliedType() cty.Type {
	atys := make(map[string]cty.Type, len(b.Attributes)+len(b.BlockTypes))
	for name, a := range b.Attributes {
		atys[name] = a.ImpliedType()
	}
	for name, nb := range b.BlockTypes {
		atys[name] = nb.ImpliedType()
	}
	return cty.Object(atys)
}

// ImpliedType is the cty type of the nested block's value in its parent.
func (nb *NestedBlock) ImpliedType() cty.Type {
	ety := nb.Block.ImpliedType()
	switch nb.Nesting {
	case NestingList:
		if ety.HasDynamicTypes() {
			return cty.DynamicPseudoType
		}
		return cty.List(ety)
	case NestingMap:
		if ety.HasDynamicTypes() {
			return cty.DynamicPseudoType
		}
		return cty.Map(ety)
	case NestingSet:
		return cty.Set(ety)
	}
	return ety // single, group
}

// ImpliedType is the attribute's cty type: Type, or the type its
// NestedType implies.
func (a *Attribute) ImpliedType() cty.Type {
	if a.NestedType != nil {
		return a.NestedType.ImpliedType()
	}
	return a.Type
}

// ImpliedType is the cty type of a nested attribute's value
// (configschema.Object.ImpliedType, without its optional-attribute marks:
// on the wire every attribute is present).
func (o *Object) ImpliedType() cty.Type {
	atys := make(map[string]cty.Type, len(o.Attributes))
	for name, a := range o.Attributes {
		atys[name] = a.ImpliedType()
	}
	ety := cty.Object(atys)
	switch o.Nesting {
	case NestingList:
		if ety.HasDynamicTypes() {
			return cty.DynamicPseudoType
		}
		return cty.List(ety)
	case NestingMap:
		if ety.HasDynamicTypes() {
			return cty.DynamicPseudoType
		}
		return cty.Map(ety)
	case NestingSet:
		return cty.Set(ety)
	}
	return ety
}

// AttributeNames returns the block's attribute names, sorted.
func (b *Block) AttributeNames() []string {
	return sortedKeys(b.Attributes)
}

// BlockTypeNames returns the block's nested block type names, sorted.
func (b *Block) BlockTypeNames() []string {
	return sortedKeys(b.BlockTypes)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// ImpliedType is the type of the schema's block (cty.EmptyObject for a nil
// schema: a provider without configuration).
func (s *Schema) ImpliedType() cty.Type {
	if s == nil {
		return cty.EmptyObject
	}
	return s.Block.ImpliedType()
}
