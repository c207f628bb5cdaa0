package benchharness

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/bulwark-iac/bulwark/core/spec"
)

func TestBulwarkSpec(t *testing.T) {
	tests := []struct {
		shape   Shape
		n       int
		latency int
		deps    map[string][]string // resource -> depends_on, for the resources listed
	}{
		{Flat, 1, 0, map[string][]string{"r000000": nil}},
		{Flat, 3, 0, map[string][]string{"r000000": nil, "r000001": nil, "r000002": nil}},
		{Chain, 1, 0, map[string][]string{"r000000": nil}},
		{Chain, 3, 0, map[string][]string{"r000000": nil, "r000001": {"r000000"}, "r000002": {"r000001"}}},
		{Chain, 1000, 0, map[string][]string{"r000000": nil, "r000999": {"r000998"}}},
		{Flat, 10000, 0, map[string][]string{"r009999": nil}},
		{Flat, 100, 100, map[string][]string{"r000099": nil}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s-latency-%d", StackName(tt.shape, tt.n), tt.latency), func(t *testing.T) {
			sp, err := spec.Parse("bench.yaml", BulwarkSpec(tt.shape, tt.n, tt.latency))
			if err != nil {
				t.Fatalf("the generated spec does not parse: %v", err)
			}
			var latency any
			if tt.latency > 0 {
				latency = tt.latency
			}
			if got := sp.Providers["mock"].Config["latency_ms"]; fmt.Sprint(got) != fmt.Sprint(latency) {
				t.Errorf("mock latency_ms = %v, want %v", got, latency)
			}
			if sp.Stack != StackName(tt.shape, tt.n) {
				t.Errorf("stack = %q, want %q", sp.Stack, StackName(tt.shape, tt.n))
			}
			if len(sp.Resources) != tt.n {
				t.Fatalf("%d resources, want %d", len(sp.Resources), tt.n)
			}
			byName := map[string]*spec.Resource{}
			for _, r := range sp.Resources {
				if r.Type != "generic" || r.Provider != "mock" {
					t.Errorf("%s: type %q provider %q, want generic on mock", r.Name, r.Type, r.Provider)
				}
				byName[r.Name] = r
			}
			if len(byName) != tt.n {
				t.Errorf("%d distinct names, want %d", len(byName), tt.n)
			}
			for name, want := range tt.deps {
				r, ok := byName[name]
				if !ok {
					t.Errorf("no resource %s", name)
					continue
				}
				if strings.Join(r.DependsOn, ",") != strings.Join(want, ",") {
					t.Errorf("%s depends on %v, want %v", name, r.DependsOn, want)
				}
			}
		})
	}
}

func TestTerraformConfig(t *testing.T) {
	resource := regexp.MustCompile(`(?m)^resource "terraform_data" "(r\d{6})" \{$`)
	dependsOn := regexp.MustCompile(`(?m)^  depends_on = \[terraform_data\.(r\d{6})\]$`)
	tests := []struct {
		shape     Shape
		n         int
		wantDeps  int
		lastDepOn string
	}{
		{Flat, 1, 0, ""},
		{Flat, 100, 0, ""},
		{Chain, 1, 0, ""},
		{Chain, 100, 99, "r000098"},
	}
	for _, tt := range tests {
		t.Run(StackName(tt.shape, tt.n), func(t *testing.T) {
			text := string(TerraformConfig(tt.shape, tt.n))
			if got := len(resource.FindAllString(text, -1)); got != tt.n {
				t.Errorf("%d resources, want %d", got, tt.n)
			}
			if strings.Count(text, "{") != strings.Count(text, "}") {
				t.Errorf("unbalanced braces:\n%s", text)
			}
			deps := dependsOn.FindAllStringSubmatch(text, -1)
			if len(deps) != tt.wantDeps {
				t.Fatalf("%d depends_on, want %d", len(deps), tt.wantDeps)
			}
			if tt.wantDeps > 0 && deps[len(deps)-1][1] != tt.lastDepOn {
				t.Errorf("last resource depends on %s, want %s", deps[len(deps)-1][1], tt.lastDepOn)
			}
		})
	}
}

func TestParseShape(t *testing.T) {
	for _, tt := range []struct {
		in      string
		want    Shape
		wantErr bool
	}{{"flat", Flat, false}, {"chain", Chain, false}, {"tree", "", true}, {"", "", true}} {
		got, err := ParseShape(tt.in)
		if got != tt.want || (err != nil) != tt.wantErr {
			t.Errorf("ParseShape(%q) = %q, %v", tt.in, got, err)
		}
	}
}
