package spec

import (
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"
)

// Functions returns the functions a ${...} expression can call, by name:
// go-cty's standard library under Terraform's names, and the CIDR
// functions. The map is built once and must not be changed.
func Functions() map[string]function.Function { return functions() }

var functions = sync.OnceValue(func() map[string]function.Function {
	return map[string]function.Function{
		"abs":         stdlib.AbsoluteFunc,
		"ceil":        stdlib.CeilFunc,
		"chomp":       stdlib.ChompFunc,
		"chunklist":   stdlib.ChunklistFunc,
		"cidrhost":    cidrHostFunc,
		"cidrnetmask": cidrNetmaskFunc,
		"cidrsubnet":  cidrSubnetFunc,
		"cidrsubnets": cidrSubnetsFunc,
		"coalesce":    coalesceFunc,
		"compact":     stdlib.CompactFunc,
		"concat":      stdlib.ConcatFunc,
		"contains":    stdlib.ContainsFunc,
		"distinct":    stdlib.DistinctFunc,
		"element":     stdlib.ElementFunc,
		"flatten":     stdlib.FlattenFunc,
		"floor":       stdlib.FloorFunc,
		"format":      stdlib.FormatFunc,
		"formatlist":  stdlib.FormatListFunc,
		"indent":      stdlib.IndentFunc,
		"index":       indexFunc,
		"join":        stdlib.JoinFunc,
		"jsondecode":  stdlib.JSONDecodeFunc,
		"jsonencode":  stdlib.JSONEncodeFunc,
		"keys":        stdlib.KeysFunc,
		"length":      lengthFunc,
		"log":         stdlib.LogFunc,
		"lookup":      stdlib.LookupFunc,
		"lower":       stdlib.LowerFunc,
		"max":         stdlib.MaxFunc,
		"merge":       stdlib.MergeFunc,
		"min":         stdlib.MinFunc,
		"parseint":    stdlib.ParseIntFunc,
		"pow":         stdlib.PowFunc,
		"range":       stdlib.RangeFunc,
		"regex":       stdlib.RegexFunc,
		"regexall":    stdlib.RegexAllFunc,
		"replace":     replaceFunc,
		"reverse":     stdlib.ReverseListFunc,
		"setproduct":  stdlib.SetProductFunc,
		"slice":       stdlib.SliceFunc,
		"sort":        stdlib.SortFunc,
		"split":       stdlib.SplitFunc,
		"strlen":      stdlib.StrlenFunc,
		"substr":      stdlib.SubstrFunc,
		"title":       stdlib.TitleFunc,
		"tobool":      stdlib.MakeToFunc(cty.Bool),
		"tolist":      stdlib.MakeToFunc(cty.List(cty.DynamicPseudoType)),
		"tomap":       stdlib.MakeToFunc(cty.Map(cty.DynamicPseudoType)),
		"tonumber":    stdlib.MakeToFunc(cty.Number),
		"toset":       stdlib.MakeToFunc(cty.Set(cty.DynamicPseudoType)),
		"tostring":    stdlib.MakeToFunc(cty.String),
		"trim":        stdlib.TrimFunc,
		"trimprefix":  stdlib.TrimPrefixFunc,
		"trimspace":   stdlib.TrimSpaceFunc,
		"trimsuffix":  stdlib.TrimSuffixFunc,
		"upper":       stdlib.UpperFunc,
		"values":      stdlib.ValuesFunc,
		"zipmap":      stdlib.ZipmapFunc,
	}
})

// replaceFunc is Terraform's replace: a substring wrapped in slashes is a
// regular expression (RE2, $1 for a group in the replacement), any other
// is replaced literally.
var replaceFunc = function.New(&function.Spec{
	Description: "Replaces each occurrence of substr in str by replace; /substr/ is a regular expression.",
	Params: []function.Parameter{
		{Name: "str", Type: cty.String},
		{Name: "substr", Type: cty.String},
		{Name: "replace", Type: cty.String},
	},
	Type:         function.StaticReturnType(cty.String),
	RefineResult: func(b *cty.RefinementBuilder) *cty.RefinementBuilder { return b.NotNull() },
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		str, substr, repl := args[0].AsString(), args[1].AsString(), args[2].AsString()
		if len(substr) > 1 && strings.HasPrefix(substr, "/") && strings.HasSuffix(substr, "/") {
			re, err := regexp.Compile(substr[1 : len(substr)-1])
			if err != nil {
				return cty.UnknownVal(cty.String), function.NewArgErrorf(1, "invalid regular expression: %s", err)
			}
			return cty.StringVal(re.ReplaceAllString(str, repl)), nil
		}
		return cty.StringVal(strings.ReplaceAll(str, substr, repl)), nil
	},
})

// coalesceFunc is Terraform's coalesce: the first argument that is
// neither null nor an empty string.
var coalesceFunc = function.New(&function.Spec{
	Description: "Returns the first argument that is neither null nor an empty string.",
	VarParam:    &function.Parameter{Name: "vals", Type: cty.DynamicPseudoType, AllowNull: true, AllowDynamicType: true},
	Type: func(args []cty.Value) (cty.Type, error) {
		return stdlib.CoalesceFunc.ReturnType(typesOf(args))
	},
	Impl: func(args []cty.Value, retType cty.Type) (cty.Value, error) {
		for _, a := range args {
			if a.IsNull() {
				continue
			}
			v, err := convert.Convert(a, retType)
			if err != nil {
				return cty.UnknownVal(retType), err
			}
			if v.Type() == cty.String && v.AsString() == "" {
				continue
			}
			return v, nil
		}
		return cty.NilVal, fmt.Errorf("no argument is neither null nor an empty string")
	},
})

func typesOf(args []cty.Value) []cty.Type {
	out := make([]cty.Type, len(args))
	for i, a := range args {
		out[i] = a.Type()
	}
	return out
}

// lengthFunc is Terraform's length: the elements of a collection, or the
// characters of a string.
var lengthFunc = function.New(&function.Spec{
	Description: "Returns the number of elements of a collection or of characters of a string.",
	Params:      []function.Parameter{{Name: "value", Type: cty.DynamicPseudoType, AllowDynamicType: true, AllowUnknown: true, AllowMarked: true}},
	Type: func(args []cty.Value) (cty.Type, error) {
		t := args[0].Type()
		if t == cty.String || t == cty.DynamicPseudoType || t.IsCollectionType() || t.IsTupleType() || t.IsObjectType() {
			return cty.Number, nil
		}
		return cty.Number, function.NewArgErrorf(0, "argument must be a string, a collection or a structural type")
	},
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		v, marks := args[0].Unmark()
		if v.Type() == cty.String {
			n, err := stdlib.Strlen(v)
			return n.WithMarks(marks), err
		}
		if !v.IsKnown() {
			return cty.UnknownVal(cty.Number).WithMarks(marks), nil
		}
		if v.Type().IsObjectType() {
			return cty.NumberIntVal(int64(len(v.Type().AttributeTypes()))).WithMarks(marks), nil
		}
		return v.Length().WithMarks(marks), nil
	},
})

// indexFunc is Terraform's index: the position of the first element of a
// list equal to value.
var indexFunc = function.New(&function.Spec{
	Description: "Returns the index of the first element of list equal to value.",
	Params: []function.Parameter{
		{Name: "list", Type: cty.DynamicPseudoType},
		{Name: "value", Type: cty.DynamicPseudoType},
	},
	Type: function.StaticReturnType(cty.Number),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		t := args[0].Type()
		if !(t.IsListType() || t.IsTupleType()) {
			return cty.NilVal, function.NewArgErrorf(0, "argument must be a list or tuple")
		}
		if !args[0].IsKnown() {
			return cty.UnknownVal(cty.Number), nil
		}
		for it := args[0].ElementIterator(); it.Next(); {
			i, v := it.Element()
			eq, err := stdlib.Equal(v, args[1])
			if err != nil {
				return cty.NilVal, err
			}
			if !eq.IsKnown() {
				return cty.UnknownVal(cty.Number), nil
			}
			if eq.True() {
				return i, nil
			}
		}
		return cty.NilVal, function.NewArgErrorf(1, "the list has no such element")
	},
})
