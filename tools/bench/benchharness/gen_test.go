package benchharness

import (
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/bulwark-iac/bulwark/core/resolve"
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
	}{{"flat", Flat, false}, {"chain", Chain, false}, {"layers", Layers, false}, {"tree", "", true}, {"", "", true}} {
		got, err := ParseShape(tt.in)
		if got != tt.want || (err != nil) != tt.wantErr {
			t.Errorf("ParseShape(%q) = %q, %v", tt.in, got, err)
		}
	}
}

func TestDependencies(t *testing.T) {
	tests := []struct {
		shape Shape
		n, i  int
		want  []int
	}{
		{Flat, 200, 150, nil},
		{Chain, 200, 0, nil},
		{Chain, 200, 150, []int{149}},
		// 10 layers of 20: resource j of layer k waits for j and j+1 of
		// layer k-1, the last one wrapping round to 0.
		{Layers, 200, 19, nil},
		{Layers, 200, 20, []int{0, 1}},
		{Layers, 200, 39, []int{19, 0}},
		{Layers, 200, 199, []int{179, 160}},
		{Layers, 200, 185, []int{165, 166}},
		// One per layer: a chain.
		{Layers, 10, 5, []int{4}},
		// 10 layers of 3 (⌈25/10⌉), the last short.
		{Layers, 25, 24, []int{21, 22}},
	}
	for _, tt := range tests {
		if got := Dependencies(tt.shape, tt.n, tt.i); !slices.Equal(got, tt.want) {
			t.Errorf("Dependencies(%s, %d, %d) = %v, want %v", tt.shape, tt.n, tt.i, got, tt.want)
		}
	}
	// Every layer but the first waits for the one before, and only it.
	for i := 20; i < 200; i++ {
		for _, d := range Dependencies(Layers, 200, i) {
			if d/20 != i/20-1 {
				t.Errorf("%d (layer %d) depends on %d (layer %d)", i, i/20, d, d/20)
			}
		}
	}
}

func TestBulwarkSpecWith(t *testing.T) {
	tests := []struct {
		mock MockConfig
		want map[string]any // provider config keys
	}{
		{MockConfig{}, map[string]any{}},
		{MockConfig{LatencyMS: 200}, map[string]any{"latency_ms": 200}},
		{MockConfig{RateLimit: 50}, map[string]any{"rate_limit": 50}},
		{MockConfig{LatencyMS: 50, RateLimit: 50}, map[string]any{"latency_ms": 50, "rate_limit": 50}},
		{MockConfig{LatencyMS: 50, FailCreate: []string{"r000199"}, World: "/dev/shm/w x"},
			map[string]any{"latency_ms": 50, "fail_create": []any{"r000199"}, "world": "/dev/shm/w x"}},
	}
	for _, tt := range tests {
		sp, err := spec.Parse("bench.yaml", BulwarkSpecWith(Layers, 200, tt.mock))
		if err != nil {
			t.Fatalf("%+v: the generated spec does not parse: %v", tt.mock, err)
		}
		cfg := sp.Providers["mock"].Config
		if len(cfg) != len(tt.want) {
			t.Errorf("%+v: mock config %v, want %v", tt.mock, cfg, tt.want)
		}
		for k, v := range tt.want {
			if fmt.Sprint(cfg[k]) != fmt.Sprint(v) {
				t.Errorf("%+v: %s = %v, want %v", tt.mock, k, cfg[k], v)
			}
		}
		byName := map[string][]string{}
		for _, r := range sp.Resources {
			byName[r.Name] = r.DependsOn
		}
		if got := byName["r000039"]; strings.Join(got, ",") != "r000019,r000000" {
			t.Errorf("r000039 depends on %v, want [r000019 r000000]", got)
		}
	}
}

func TestTerraformLatencyConfig(t *testing.T) {
	resource := regexp.MustCompile(`(?m)^resource "terraform_data" "(r\d{6})" \{$`)
	tests := []struct {
		shape      Shape
		n, latency int
		sleep      string // the provisioners' command; "" for none
		deps       int    // depends_on lines
		lastDeps   string
	}{
		{Flat, 20, 0, "", 0, ""},
		{Flat, 20, 200, `command = "sleep 0.2"`, 0, ""},
		{Layers, 200, 50, `command = "sleep 0.05"`, 180, "  depends_on = [terraform_data.r000179, terraform_data.r000160]"},
		{Chain, 5, 1500, `command = "sleep 1.5"`, 4, "  depends_on = [terraform_data.r000003]"},
		{Flat, 3, 1000, `command = "sleep 1"`, 0, ""},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s-%d-%d", tt.shape, tt.n, tt.latency), func(t *testing.T) {
			text := string(TerraformLatencyConfig(tt.shape, tt.n, tt.latency))
			if got := len(resource.FindAllString(text, -1)); got != tt.n {
				t.Errorf("%d resources, want %d", got, tt.n)
			}
			if strings.Count(text, "{") != strings.Count(text, "}") {
				t.Errorf("unbalanced braces:\n%s", text)
			}
			provisioners := strings.Count(text, `provisioner "local-exec"`)
			destroys := strings.Count(text, "when    = destroy")
			if tt.sleep == "" {
				if provisioners != 0 {
					t.Errorf("%d provisioners with no latency", provisioners)
				}
			} else if provisioners != 2*tt.n || destroys != tt.n || strings.Count(text, tt.sleep) != 2*tt.n {
				t.Errorf("%d provisioners (%d at destroy), %d %q: want one at create and one at destroy per resource", provisioners, destroys, strings.Count(text, tt.sleep), tt.sleep)
			}
			var deps []string
			for _, l := range strings.Split(text, "\n") {
				if strings.HasPrefix(l, "  depends_on") {
					deps = append(deps, l)
				}
			}
			if len(deps) != tt.deps || (tt.deps > 0 && deps[len(deps)-1] != tt.lastDeps) {
				t.Errorf("%d depends_on (last %v), want %d (last %q)", len(deps), deps[max(len(deps)-1, 0):], tt.deps, tt.lastDeps)
			}
			if strings.Contains(text, "required_providers") || strings.Contains(text, "provider \"") {
				t.Error("the configuration names a provider: init would download it")
			}
		})
	}
}

// TestModulesShape: the modules shape makes the same N generic resources as
// flat, as calls of one module (addresses CALL.rNNN) plus the remainder at
// the top level, and its files parse with the module beside the spec.
func TestModulesShape(t *testing.T) {
	for _, tt := range []struct{ n, calls, top int }{{1, 1, 0}, {100, 1, 0}, {250, 2, 50}, {10000, 100, 0}} {
		t.Run(fmt.Sprint(tt.n), func(t *testing.T) {
			dir := t.TempDir()
			if err := WriteFiles(dir, BulwarkFiles(Modules, tt.n, MockConfig{})); err != nil {
				t.Fatal(err)
			}
			text := BulwarkSpec(Modules, tt.n, 0)
			sp, err := spec.Parse(filepath.Join(dir, "spec.yaml"), text)
			if err != nil {
				t.Fatalf("the generated spec does not parse: %v", err)
			}
			if len(sp.Modules) != tt.calls {
				t.Errorf("%d module calls, want %d", len(sp.Modules), tt.calls)
			}
			names := map[string]bool{}
			top := 0
			for _, r := range sp.Resources {
				if r.Type != "generic" || r.Provider != "mock" || len(r.DependsOn) > 0 || len(r.Config) > 0 {
					t.Errorf("%s: type %q provider %q depends_on %v config %v, want a bare generic on mock", r.Name, r.Type, r.Provider, r.DependsOn, r.Config)
				}
				if !strings.Contains(r.Name, ".") {
					top++
				}
				names[r.Name] = true
			}
			if len(names) != tt.n || top != tt.top {
				t.Errorf("%d distinct resources (%d top-level), want %d (%d)", len(names), top, tt.n, tt.top)
			}
			if !names[CallName(tt.calls-1)+".r"+fmt.Sprintf("%03d", min(tt.n, ModuleSize)-1)] {
				t.Errorf("no resource %s.r%03d among %d", CallName(tt.calls-1), min(tt.n, ModuleSize)-1, len(names))
			}
			tf := TerraformFiles(Modules, tt.n, 0)
			if got := strings.Count(string(tf["main.tf"]), "module \""); got != tt.calls {
				t.Errorf("main.tf has %d module blocks, want %d", got, tt.calls)
			}
			if got := strings.Count(string(tf["main.tf"]), "resource \"terraform_data\"") + tt.calls*strings.Count(string(tf[ModuleDir+"/main.tf"]), "resource \"terraform_data\""); got != tt.n {
				t.Errorf("the Terraform files make %d resources, want %d", got, tt.n)
			}
		})
	}
	if _, err := ParseShape("modules"); err != nil {
		t.Errorf("ParseShape(modules): %v", err)
	}
}

// BenchmarkParseModules: reading N resources written as module calls
// against the same N written flat, in process (spec.Parse reads and
// instantiates the module; resolve.Expand gives every resource its final
// config). go test -run '^$' -bench ParseModules ./benchharness: the
// whole commands are bulwark-bench -modules.
func BenchmarkParseModules(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		for _, shape := range []Shape{Flat, Modules} {
			b.Run(fmt.Sprintf("%s-%d", shape, n), func(b *testing.B) {
				dir := b.TempDir()
				if err := WriteFiles(dir, BulwarkFiles(shape, n, MockConfig{})); err != nil {
					b.Fatal(err)
				}
				file := filepath.Join(dir, "spec.yaml")
				text := BulwarkSpec(shape, n, 0)
				for b.Loop() {
					sp, err := spec.Parse(file, text)
					if err != nil {
						b.Fatal(err)
					}
					ex, err := resolve.Expand(sp, nil)
					if err != nil {
						b.Fatal(err)
					}
					if len(ex.Resources) != n {
						b.Fatalf("%d resources, want %d", len(ex.Resources), n)
					}
				}
			})
		}
	}
}
