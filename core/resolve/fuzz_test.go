package resolve

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/bulwark-iac/bulwark/core/spec"
)

// FuzzExpand checks that a spec Parse accepts either expands (with its
// defaults) to a concrete spec that keeps Expand's guarantees, or fails
// with positioned Problems; never a panic. Expanding twice gives the same
// spec, and resolving a config with nothing known leaves every reference
// unknown without error.
func FuzzExpand(f *testing.F) {
	for _, pattern := range []string{"../spec/testdata/good/*.yaml", "../spec/testdata/bad/*.yaml"} {
		files, _ := filepath.Glob(pattern)
		for _, file := range files {
			data, err := os.ReadFile(file)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(data)
		}
	}
	f.Add([]byte(stackText))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := spec.Parse("fuzz.yaml", data)
		if err != nil {
			return
		}
		vals, _, err := Values(s, Inputs{})
		if err != nil {
			return
		}
		c, err := Expand(s, vals)
		if err != nil {
			ps, ok := err.(spec.Problems)
			if !ok || len(ps) == 0 {
				t.Fatalf("Expand error %T %v", err, err)
			}
			for _, p := range ps {
				if p.Pos.Line <= 0 {
					t.Errorf("unpositioned: %v", p)
				}
			}
			return
		}
		again, err := Expand(s, vals)
		if err != nil || !cmp.Equal(c, again) {
			t.Fatalf("Expand is not deterministic: %v\n%s", err, cmp.Diff(c, again))
		}
		checkConcrete(t, c)
	})
}

// checkConcrete checks Expand's guarantees on c: data configs hold only
// data references, and once every data entry has read a string for each
// attribute referenced, SubstituteData leaves only resource references.
func checkConcrete(t *testing.T, c *spec.Spec) {
	t.Helper()
	vals := DataValues{}
	for _, d := range c.Data {
		vals[d.Name] = map[string]any{}
		walkRefs(d.Config, func(ref *spec.Ref) {
			if _, ok := c.DataEntry(ref.Name); ref.Kind != spec.RefData || !ok {
				t.Errorf("data %s: %s left in a concrete spec", d.Name, ref)
			}
		})
	}
	mark := func(v any) {
		walkRefs(v, func(ref *spec.Ref) {
			if ref.Kind == spec.RefData && vals[ref.Name] != nil {
				vals[ref.Name][ref.Attr] = "read"
			}
		})
	}
	for _, r := range c.Resources {
		mark(r.Config)
	}
	for _, o := range c.Outputs {
		mark(o.Value)
	}
	sub, err := SubstituteData(c, vals)
	if err != nil {
		t.Fatalf("SubstituteData: %v", err)
	}
	checkSubstituted(t, sub)
}

func checkSubstituted(t *testing.T, c *spec.Spec) {
	t.Helper()
	names := map[string]bool{}
	for _, r := range c.Resources {
		if names[r.Name] || r.ForEach != nil || r.Address().String() != r.Name {
			t.Errorf("resource %q: duplicate, for_each left or address %v", r.Name, r.Address())
		}
		names[r.Name] = true
	}
	check := func(v any, where string) {
		walkRefs(v, func(ref *spec.Ref) {
			if ref.Kind != spec.RefResource || ref.Key == spec.EachKey || !names[ref.Address()] {
				t.Errorf("%s: %s left in a concrete spec", where, ref)
			}
		})
		got, unknown, err := Config(map[string]any{"v": v}, func(string, string) (any, bool) { return nil, false })
		if err != nil || Known(got) != (len(unknown) == 0) {
			t.Errorf("%s: Config with nothing known: %v, %v, %v", where, got, unknown, err)
		}
	}
	for _, r := range c.Resources {
		check(r.Config, r.Name)
		for _, d := range r.DependsOn {
			if !names[d] || d == r.Name {
				t.Errorf("%s: bad dependency %q", r.Name, d)
			}
		}
		for _, a := range Refs(r.Config) {
			found := false
			for _, d := range r.DependsOn {
				found = found || d == a
			}
			if !found {
				t.Errorf("%s references %s, not among its dependencies %v", r.Name, a, r.DependsOn)
			}
		}
	}
	for _, o := range c.Outputs {
		check(o.Value, "output "+o.Name)
	}
	for n, p := range c.Providers {
		if !Known(p.Config) {
			t.Errorf("provider %s: a reference left", n)
		}
	}
	if _, ok := c.Graph().TopoOrder(); !ok {
		t.Error("the instances' graph has a cycle")
	}
	if !c.Expanded() {
		t.Error("not Expanded")
	}
}

// TestExpandGood expands every good spec of the corpus.
func TestExpandGood(t *testing.T) {
	files, _ := filepath.Glob("../spec/testdata/good/*.yaml")
	if len(files) == 0 {
		t.Fatal("no corpus")
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		c := expand(t, parse(t, string(data)), Inputs{})
		checkConcrete(t, c)
	}
}
