package tfplugin

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/zclconf/go-cty/cty"

	"github.com/bulwark-iac/bulwark/core/providers"
)

var thingType = cty.Object(map[string]cty.Type{
	"id":   cty.String,
	"size": cty.Number,
	"on":   cty.Bool,
	"tags": cty.Map(cty.String),
	"ips":  cty.Set(cty.String),
	"rule": cty.List(cty.Object(map[string]cty.Type{"port": cty.Number, "proto": cty.String})),
	"any":  cty.DynamicPseudoType,
	"pair": cty.Tuple([]cty.Type{cty.String, cty.Number}),
})

func TestToCtyAndBack(t *testing.T) {
	tests := []struct {
		name string
		in   providers.Attributes
		want cty.Value // of thingType
		back providers.Attributes
	}{{
		name: "every kind",
		in: providers.Attributes{"id": "a", "size": 2.5, "on": true, "tags": map[string]any{"k": "v"}, "ips": []any{"b", "a"},
			"rule": []any{map[string]any{"port": 80}}, "any": map[string]any{"x": []any{1.0, "s"}}, "pair": []any{"p", 1}},
		want: cty.ObjectVal(map[string]cty.Value{
			"id": cty.StringVal("a"), "size": cty.NumberFloatVal(2.5), "on": cty.True,
			"tags": cty.MapVal(map[string]cty.Value{"k": cty.StringVal("v")}),
			"ips":  cty.SetVal([]cty.Value{cty.StringVal("a"), cty.StringVal("b")}),
			"rule": cty.ListVal([]cty.Value{cty.ObjectVal(map[string]cty.Value{"port": cty.NumberIntVal(80), "proto": cty.NullVal(cty.String)})}),
			"any":  cty.ObjectVal(map[string]cty.Value{"x": cty.TupleVal([]cty.Value{cty.NumberIntVal(1), cty.StringVal("s")})}),
			"pair": cty.TupleVal([]cty.Value{cty.StringVal("p"), cty.NumberIntVal(1)}),
		}),
		back: providers.Attributes{"id": "a", "size": 2.5, "on": true, "tags": map[string]any{"k": "v"}, "ips": []any{"a", "b"},
			"rule": []any{map[string]any{"port": 80.0, "proto": nil}}, "any": map[string]any{"x": []any{1.0, "s"}}, "pair": []any{"p", 1.0}},
	}, {
		name: "left out is null; empty collections stay empty",
		in:   providers.Attributes{"tags": map[string]any{}, "rule": []any{}},
		want: cty.ObjectVal(map[string]cty.Value{
			"id": cty.NullVal(cty.String), "size": cty.NullVal(cty.Number), "on": cty.NullVal(cty.Bool),
			"tags": cty.MapValEmpty(cty.String), "ips": cty.NullVal(cty.Set(cty.String)),
			"rule": cty.ListValEmpty(thingType.AttributeType("rule").ElementType()),
			"any":  cty.NullVal(cty.DynamicPseudoType), "pair": cty.NullVal(thingType.AttributeType("pair")),
		}),
		back: providers.Attributes{"id": nil, "size": nil, "on": nil, "tags": map[string]any{}, "ips": nil, "rule": []any{}, "any": nil, "pair": nil},
	}, {
		name: "unknown at any depth",
		in:   providers.Attributes{"id": Unknown{}, "tags": map[string]any{"k": &Unknown{}}, "rule": Unknown{}},
		want: cty.ObjectVal(map[string]cty.Value{
			"id": cty.UnknownVal(cty.String), "size": cty.NullVal(cty.Number), "on": cty.NullVal(cty.Bool),
			"tags": cty.MapVal(map[string]cty.Value{"k": cty.UnknownVal(cty.String)}), "ips": cty.NullVal(cty.Set(cty.String)),
			"rule": cty.UnknownVal(thingType.AttributeType("rule")),
			"any":  cty.NullVal(cty.DynamicPseudoType), "pair": cty.NullVal(thingType.AttributeType("pair")),
		}),
		back: providers.Attributes{"id": Unknown{}, "size": nil, "on": nil, "tags": map[string]any{"k": Unknown{}}, "ips": nil, "rule": Unknown{}, "any": nil, "pair": nil},
	}, {
		name: "primitives converted as Terraform converts a configuration's",
		in:   providers.Attributes{"id": 5, "size": "3", "on": "true"},
		want: cty.ObjectVal(map[string]cty.Value{
			"id": cty.StringVal("5"), "size": cty.NumberIntVal(3), "on": cty.True,
			"tags": cty.NullVal(cty.Map(cty.String)), "ips": cty.NullVal(cty.Set(cty.String)),
			"rule": cty.NullVal(thingType.AttributeType("rule")),
			"any":  cty.NullVal(cty.DynamicPseudoType), "pair": cty.NullVal(thingType.AttributeType("pair")),
		}),
		back: providers.Attributes{"id": "5", "size": 3.0, "on": true, "tags": nil, "ips": nil, "rule": nil, "any": nil, "pair": nil},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ObjectFromAttributes(tt.in, thingType)
			if err != nil {
				t.Fatal(err)
			}
			if !got.RawEquals(tt.want) {
				t.Fatalf("ObjectFromAttributes:\n got %#v\nwant %#v", got, tt.want)
			}
			back, err := AttributesFromObject(got)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.back, back); diff != "" {
				t.Errorf("AttributesFromObject (-want +got):\n%s", diff)
			}
			// Through the wire and back: msgpack keeps unknowns.
			mp, err := EncodeMsgpack(got, thingType)
			if err != nil {
				t.Fatal(err)
			}
			dec, err := DecodeDynamic(mp, nil, thingType)
			if err != nil {
				t.Fatal(err)
			}
			if !dec.RawEquals(got) {
				t.Errorf("msgpack round trip:\n got %#v\nwant %#v", dec, got)
			}
		})
	}
}

func TestToCtyErrors(t *testing.T) {
	tests := []struct {
		name string
		in   providers.Attributes
		path []string
		msg  string
	}{
		{"unknown attribute", providers.Attributes{"nope": 1}, []string{"nope"}, "unsupported attribute"},
		{"wrong primitive", providers.Attributes{"size": "big"}, []string{"size"}, "number is needed"},
		{"list for a map", providers.Attributes{"tags": []any{"a"}}, []string{"tags"}, "map of string is needed"},
		{"deep", providers.Attributes{"rule": []any{map[string]any{"port": true}}}, []string{"rule", "0", "port"}, "number is needed"},
		{"tuple length", providers.Attributes{"pair": []any{"a"}}, []string{"pair"}, "2 elements"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ObjectFromAttributes(tt.in, thingType)
			var pe cty.PathError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v is not a cty.PathError", err)
			}
			if !cmp.Equal(PathStrings(pe.Path), tt.path) || !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("error at %v: %v; want at %v, saying %q", PathStrings(pe.Path), err, tt.path, tt.msg)
			}
		})
	}
}

// A caller's own unknown marker goes both ways.
func TestValuesOwnMarker(t *testing.T) {
	type mine struct{}
	c := Values{Unknown: mine{}, IsUnknown: func(v any) bool { _, ok := v.(mine); return ok }}
	v, err := c.ToCty([]any{"a", mine{}}, cty.List(cty.String))
	if err != nil {
		t.Fatal(err)
	}
	if v.Index(cty.NumberIntVal(1)).IsKnown() {
		t.Fatalf("element 1 is known: %#v", v)
	}
	back, err := c.FromCty(v)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]any{"a", mine{}}, back); diff != "" {
		t.Error(diff)
	}
}

func TestUnknownJSON(t *testing.T) {
	b, err := json.Marshal(map[string]any{"id": Unknown{}})
	if err != nil || string(b) != `{"id":"(known after apply)"}` {
		t.Errorf("%s, %v", b, err)
	}
}

func TestStateJSON(t *testing.T) {
	v, err := ObjectFromAttributes(providers.Attributes{"id": "a", "any": "s", "ips": []any{"x"}}, thingType)
	if err != nil {
		t.Fatal(err)
	}
	b, err := StateJSON(v, thingType)
	if err != nil {
		t.Fatal(err)
	}
	// A dynamically typed attribute carries its type, as in Terraform's state.
	if !strings.Contains(string(b), `"any":{"value":"s","type":"string"}`) {
		t.Errorf("state JSON %s", b)
	}
	back, err := ParseStateJSON(b, thingType)
	if err != nil || !back.RawEquals(v) {
		t.Errorf("parsed %#v, %v", back, err)
	}
	// JSON content of a DynamicValue decodes too (older providers answer it).
	dec, err := DecodeDynamic(nil, b, thingType)
	if err != nil || !dec.RawEquals(v) {
		t.Errorf("decoded %#v, %v", dec, err)
	}
	if _, err := StateJSON(cty.UnknownVal(thingType), thingType); err == nil {
		t.Error("an unknown state encoded")
	}
}

func TestPathStrings(t *testing.T) {
	p := cty.GetAttrPath("rule").IndexInt(2).GetAttr("tags").IndexString("k").Index(cty.UnknownVal(cty.String))
	if got, want := PathStrings(p), []string{"rule", "2", "tags", "k", "*"}; !cmp.Equal(got, want) {
		t.Errorf("%v, want %v", got, want)
	}
}

func TestImpliedType(t *testing.T) {
	inner := &Block{Attributes: map[string]*Attribute{"a": {Type: cty.String, Optional: true}}}
	dyn := &Block{Attributes: map[string]*Attribute{"d": {Type: cty.DynamicPseudoType, Optional: true}}}
	innerTy := cty.Object(map[string]cty.Type{"a": cty.String})
	b := &Block{
		Attributes: map[string]*Attribute{
			"s": {Type: cty.String, Required: true},
			"n": {NestedType: &Object{Nesting: NestingMap, Attributes: inner.Attributes}},
			"l": {NestedType: &Object{Nesting: NestingList, Attributes: dyn.Attributes}},
		},
		BlockTypes: map[string]*NestedBlock{
			"single": {Nesting: NestingSingle, Block: inner},
			"group":  {Nesting: NestingGroup, Block: inner},
			"list":   {Nesting: NestingList, Block: inner},
			"set":    {Nesting: NestingSet, Block: inner},
			"map":    {Nesting: NestingMap, Block: inner},
			"dlist":  {Nesting: NestingList, Block: dyn},
		},
	}
	want := cty.Object(map[string]cty.Type{
		"s": cty.String, "n": cty.Map(innerTy), "l": cty.DynamicPseudoType,
		"single": innerTy, "group": innerTy, "list": cty.List(innerTy), "set": cty.Set(innerTy), "map": cty.Map(innerTy),
		"dlist": cty.DynamicPseudoType,
	})
	if got := b.ImpliedType(); !got.Equals(want) {
		t.Errorf("implied type\n got %#v\nwant %#v", got, want)
	}
	if got := (*Schema)(nil).ImpliedType(); !got.Equals(cty.EmptyObject) {
		t.Errorf("nil schema: %#v", got)
	}
}

// TestProposedNewOfNothing: from a null prior (a create) the proposal is
// the config as it is, which merging it with a null prior block by block
// gives too (what ProposedNew did before it took the config as it is), for
// every nesting, null and unknown parts included.
func TestProposedNewOfNothing(t *testing.T) {
	inner := &Block{Attributes: map[string]*Attribute{
		"port":  {Type: cty.Number, Required: true},
		"proto": {Type: cty.String, Optional: true, Computed: true},
	}}
	b := &Block{
		Attributes: map[string]*Attribute{
			"id":       {Type: cty.String, Computed: true},
			"name":     {Type: cty.String, Required: true},
			"arn":      {Type: cty.String, Optional: true, Computed: true},
			"any":      {Type: cty.DynamicPseudoType, Optional: true},
			"settings": {Optional: true, NestedType: &Object{Nesting: NestingSingle, Attributes: map[string]*Attribute{"mode": {Type: cty.String, Optional: true, Computed: true}}}},
		},
		BlockTypes: map[string]*NestedBlock{
			"list":   {Nesting: NestingList, Block: inner},
			"set":    {Nesting: NestingSet, Block: inner},
			"map":    {Nesting: NestingMap, Block: inner},
			"single": {Nesting: NestingSingle, Block: inner},
			"group":  {Nesting: NestingGroup, Block: inner},
		},
	}
	ty := b.ImpliedType()
	for _, cfg := range []providers.Attributes{
		{"name": "a"},
		{"name": "a", "arn": "x", "any": map[string]any{"k": 1}, "settings": map[string]any{"mode": "m"},
			"list": []any{map[string]any{"port": 1}, map[string]any{"port": 2, "proto": "tcp"}},
			"set":  []any{map[string]any{"port": 3}}, "map": map[string]any{"k": map[string]any{"port": 4}},
			"single": map[string]any{"port": 5}, "group": map[string]any{"port": 6}},
		{"name": Unknown{}, "list": []any{map[string]any{"port": Unknown{}}}, "single": Unknown{}},
	} {
		config, err := ObjectFromAttributes(cfg, ty)
		if err != nil {
			t.Fatal(err)
		}
		merged := proposedBlock(b, cty.NullVal(ty), config)
		if got := ProposedNew(b, cty.NullVal(ty), config); !got.RawEquals(config) || !merged.RawEquals(config) {
			t.Errorf("from a null prior:\n got %#v\nmerged %#v\nwant the config %#v", got, merged, config)
		}
	}
}

func TestProposedNew(t *testing.T) {
	rule := &Block{Attributes: map[string]*Attribute{
		"port":  {Type: cty.Number, Required: true},
		"proto": {Type: cty.String, Optional: true, Computed: true},
	}}
	b := &Block{
		Attributes: map[string]*Attribute{
			"id":   {Type: cty.String, Computed: true},
			"name": {Type: cty.String, Required: true},
			"arn":  {Type: cty.String, Optional: true, Computed: true},
		},
		BlockTypes: map[string]*NestedBlock{"rule": {Nesting: NestingList, Block: rule}},
	}
	ty := b.ImpliedType()
	obj := func(a providers.Attributes) cty.Value {
		v, err := ObjectFromAttributes(a, ty)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	prior := obj(providers.Attributes{"id": "i", "name": "a", "arn": "x", "rule": []any{map[string]any{"port": 1, "proto": "udp"}}})
	tests := []struct {
		name          string
		prior, config cty.Value
		want          cty.Value
	}{
		{"create: config as it is", cty.NullVal(ty), obj(providers.Attributes{"name": "a"}), obj(providers.Attributes{"name": "a"})},
		{"update keeps computed values", prior, obj(providers.Attributes{"name": "b", "rule": []any{map[string]any{"port": 2}, map[string]any{"port": 3}}}),
			obj(providers.Attributes{"id": "i", "name": "b", "arn": "x", "rule": []any{map[string]any{"port": 2, "proto": "udp"}, map[string]any{"port": 3}}})},
		{"a set optional+computed wins", prior, obj(providers.Attributes{"name": "a", "arn": "y"}), obj(providers.Attributes{"id": "i", "name": "a", "arn": "y", "rule": nil})},
		{"destroy", prior, cty.NullVal(ty), cty.NullVal(ty)},
		{"unknown in config stays", prior, obj(providers.Attributes{"name": Unknown{}}), obj(providers.Attributes{"id": "i", "name": Unknown{}, "arn": "x"})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ProposedNew(b, tt.prior, tt.config); !got.RawEquals(tt.want) {
				t.Errorf("\n got %#v\nwant %#v", got, tt.want)
			}
		})
	}
}

func TestClientConfig(t *testing.T) {
	cmd := exec.Command("/bin/true")
	cmd.Env = []string{"A=1", "PLUGIN_CLIENT_CERT=inherited"}
	cc := ClientConfig(StartOptions{Cmd: cmd})
	if cc.MagicCookieKey != "TF_PLUGIN_MAGIC_COOKIE" || cc.MagicCookieValue != MagicCookieValue {
		t.Errorf("handshake %+v", cc.HandshakeConfig)
	}
	if cc.Managed || len(cc.AllowedProtocols) != 1 || cc.AllowedProtocols[0] != "grpc" {
		t.Errorf("Managed %v, protocols %v", cc.Managed, cc.AllowedProtocols)
	}
	// Mutual TLS with the host's own P-256 certificate, the one handed to
	// the provider (not the inherited one), and no server trusted until
	// one is announced.
	if cc.AutoMTLS || cc.TLSConfig == nil || len(cc.TLSConfig.Certificates) != 1 || cc.TLSConfig.RootCAs == nil || !cc.TLSConfig.RootCAs.Equal(x509.NewCertPool()) {
		t.Fatalf("AutoMTLS %v, TLS config %+v: want the host's own certificate and no server trusted yet", cc.AutoMTLS, cc.TLSConfig)
	}
	var certs []string
	for _, kv := range cmd.Env {
		if v, ok := strings.CutPrefix(kv, "PLUGIN_CLIENT_CERT="); ok {
			certs = append(certs, v)
		}
	}
	if len(certs) != 1 {
		t.Fatalf("PLUGIN_CLIENT_CERT given %d times (%v), want once", len(certs), certs)
	}
	blk, _ := pem.Decode([]byte(certs[0]))
	if blk == nil || !bytes.Equal(blk.Bytes, cc.TLSConfig.Certificates[0].Certificate[0]) {
		t.Errorf("the provider is handed %q, not the host's certificate", certs[0])
	}
	if leaf, err := x509.ParseCertificate(cc.TLSConfig.Certificates[0].Certificate[0]); err != nil || leaf.PublicKey.(*ecdsa.PublicKey).Curve != elliptic.P256() {
		t.Errorf("the host's certificate: %v, want a P-256 key", err)
	}
	if _, ok := cc.VersionedPlugins[5][PluginName]; !ok {
		t.Error("no protocol 5")
	}
	if _, ok := cc.VersionedPlugins[6][PluginName]; !ok {
		t.Error("no protocol 6")
	}
	if len(cmd.Env) == 0 || cmd.Env[0] != "A=1" || slices.Contains(cmd.Env, "PLUGIN_CLIENT_CERT=inherited") || !cc.SkipHostEnv {
		t.Errorf("env %v, SkipHostEnv %v", cmd.Env, cc.SkipHostEnv)
	}
}

// TestContainsMarked: the package's own check says what cty's does, for a
// mark at every depth and in every kind of value.
func TestContainsMarked(t *testing.T) {
	m := func(v cty.Value) cty.Value { return v.Mark("sensitive") }
	s := cty.StringVal("s")
	obj := func(v cty.Value) cty.Value { return cty.ObjectVal(map[string]cty.Value{"a": s, "b": v}) }
	for name, v := range map[string]cty.Value{
		"plain string":           s,
		"marked string":          m(s),
		"null":                   cty.NullVal(cty.String),
		"marked null":            m(cty.NullVal(cty.String)),
		"unknown":                cty.UnknownVal(cty.String),
		"marked unknown":         m(cty.UnknownVal(cty.String)),
		"object":                 obj(s),
		"object, marked inside":  obj(m(s)),
		"marked object":          m(obj(s)),
		"nested object, deep":    obj(obj(obj(m(s)))),
		"unknown object":         cty.UnknownVal(cty.Object(map[string]cty.Type{"a": cty.String})),
		"list":                   cty.ListVal([]cty.Value{s, s}),
		"list, marked inside":    cty.ListVal([]cty.Value{s, m(s)}),
		"empty list":             cty.ListValEmpty(cty.String),
		"map":                    cty.MapVal(map[string]cty.Value{"k": s}),
		"map, marked inside":     cty.MapVal(map[string]cty.Value{"k": s, "l": m(s)}),
		"set":                    cty.SetVal([]cty.Value{s}),
		"marked set":             m(cty.SetVal([]cty.Value{s})),
		"set of objects":         cty.SetVal([]cty.Value{obj(s)}),
		"tuple":                  cty.TupleVal([]cty.Value{s, cty.True}),
		"tuple, marked inside":   cty.TupleVal([]cty.Value{s, m(cty.True)}),
		"list of objects marked": cty.ListVal([]cty.Value{obj(s), obj(m(s))}),
		"object of list marked":  obj(cty.ListVal([]cty.Value{m(s)})),
	} {
		if got, want := containsMarked(v), v.ContainsMarked(); got != want {
			t.Errorf("%s: containsMarked = %v, cty says %v", name, got, want)
		}
	}
}
