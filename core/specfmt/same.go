package specfmt

import (
	"fmt"
	"reflect"

	"github.com/bulwark-iac/bulwark/core/spec"
)

// equalSpecs compares two parsed specs, leaving out what only says where
// things are written (positions, ranges, the source text): the path of the
// first difference, or ok.
func equalSpecs(a, b *spec.Spec) (string, bool) {
	c := comparer{seen: map[[2]uintptr]bool{}}
	return c.equal(reflect.ValueOf(a), reflect.ValueOf(b), "spec")
}

// equalData compares two decoded YAML documents.
func equalData(a, b any, path string) (string, bool) {
	if !reflect.DeepEqual(a, b) {
		return path, false
	}
	return "", true
}

type comparer struct{ seen map[[2]uintptr]bool }

// positional reports whether values of type t only say where something is
// written: spec.Pos, an HCL range or position, or maps and lists of them.
func positional(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Map, reflect.Slice, reflect.Array, reflect.Pointer:
		return positional(t.Elem())
	}
	switch t.Name() {
	case "Pos", "Range", "Position":
		return true
	}
	return false
}

func (c comparer) equal(a, b reflect.Value, path string) (string, bool) {
	if a.IsValid() != b.IsValid() {
		return path, false
	}
	if !a.IsValid() {
		return "", true
	}
	if a.Type() != b.Type() {
		return path, false
	}
	switch a.Kind() {
	case reflect.Pointer:
		if a.IsNil() || b.IsNil() {
			return path, a.IsNil() == b.IsNil()
		}
		key := [2]uintptr{a.Pointer(), b.Pointer()}
		if c.seen[key] {
			return "", true
		}
		c.seen[key] = true
		return c.equal(a.Elem(), b.Elem(), path)
	case reflect.Interface:
		if a.IsNil() || b.IsNil() {
			return path, a.IsNil() == b.IsNil()
		}
		return c.equal(a.Elem(), b.Elem(), path)
	case reflect.Struct:
		for i := range a.NumField() {
			f := a.Type().Field(i)
			// Via names the module call a resource came from by its
			// FILE:LINE:COL: a position too.
			if f.Name == "Text" || f.Name == "Via" || positional(f.Type) {
				continue
			}
			if p, ok := c.equal(a.Field(i), b.Field(i), path+"."+f.Name); !ok {
				return p, false
			}
		}
		return "", true
	case reflect.Slice, reflect.Array:
		if a.Kind() == reflect.Slice && a.IsNil() != b.IsNil() && (a.Len() != 0 || b.Len() != 0) {
			return path, false
		}
		if a.Len() != b.Len() {
			return path, false
		}
		for i := range a.Len() {
			if p, ok := c.equal(a.Index(i), b.Index(i), fmt.Sprintf("%s[%d]", path, i)); !ok {
				return p, false
			}
		}
		return "", true
	case reflect.Map:
		if a.Len() != b.Len() {
			return path, false
		}
		for _, k := range a.MapKeys() {
			bv := b.MapIndex(k)
			if !bv.IsValid() {
				return fmt.Sprintf("%s[%v]", path, k), false
			}
			if p, ok := c.equal(a.MapIndex(k), bv, fmt.Sprintf("%s[%v]", path, k)); !ok {
				return p, false
			}
		}
		return "", true
	case reflect.Func, reflect.Chan, reflect.UnsafePointer:
		return path, a.IsNil() == b.IsNil()
	case reflect.Bool:
		return path, a.Bool() == b.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return path, a.Int() == b.Int()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return path, a.Uint() == b.Uint()
	case reflect.Float32, reflect.Float64:
		return path, a.Float() == b.Float() || (a.Float() != a.Float() && b.Float() != b.Float())
	case reflect.Complex64, reflect.Complex128:
		return path, a.Complex() == b.Complex()
	case reflect.String:
		return path, a.String() == b.String()
	}
	return path, false
}
