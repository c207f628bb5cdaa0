package tfplugin

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bulwark-iac/bulwark/core/providers"
)

// adapterFor starts the test provider speaking version, configured with
// prefix "p-", behind an Adapter.
func adapterFor(t *testing.T, version int) (*Adapter, context.Context) {
	t.Helper()
	a := NewAdapter(start(t, version), "tftest", "0.0.1")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	cr, err := a.Configure(ctx, &providers.ConfigureRequest{Config: providers.Attributes{"prefix": "p-"}})
	noErrors(t, "configure", cr.Diagnostics, err)
	return a, ctx
}

// The Adapter offers a provider's data sources and reads them through
// ValidateDataSourceConfig and ReadDataSource: a config the schema
// refuses, a result set in it, or a deferred answer is an error naming it.
func TestAdapterReadData(t *testing.T) {
	for _, version := range []int{Protocol5, Protocol6} {
		t.Run(fmt.Sprintf("protocol%d", version), func(t *testing.T) {
			t.Parallel()
			a, ctx := adapterFor(t, version)
			s, err := a.GetSchema(ctx, &providers.GetSchemaRequest{})
			if err != nil {
				t.Fatal(err)
			}
			if !s.Capabilities.ReadData {
				t.Errorf("capabilities %+v: no ReadData", s.Capabilities)
			}
			dt, ok := s.DataSource("tftest_echo")
			if !ok {
				t.Fatalf("no tftest_echo in %+v", s.DataSources)
			}
			in, _ := dt.Attribute("input")
			out, _ := dt.Attribute("output")
			if !in.Required || in.Computed || !out.Computed || out.Required {
				t.Errorf("input %+v, output %+v", in, out)
			}
			r, err := a.ReadData(ctx, &providers.ReadDataRequest{Type: "tftest_echo", Name: "e", Config: providers.Attributes{"input": "x"}})
			noErrors(t, "read data", r.Diagnostics, err)
			if r.Attributes["output"] != "p-x" || r.Attributes["input"] != "x" {
				t.Errorf("read %v", r.Attributes)
			}
			tests := []struct {
				name string
				cfg  providers.Attributes
				want string
			}{
				{"result set", providers.Attributes{"input": "x", "output": "y"}, `attribute "output" of data source tftest_echo is read from the provider`},
				{"unknown attribute", providers.Attributes{"input": "x", "nope": "y"}, "nope"},
				{"wrong type", providers.Attributes{"input": []any{"x"}}, "input"},
				{"deferred", providers.Attributes{"input": "defer"}, "the provider deferred reading data e (tftest_echo)"},
			}
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					r, err := a.ReadData(ctx, &providers.ReadDataRequest{Type: "tftest_echo", Name: "e", Config: tt.cfg})
					if err != nil {
						t.Fatal(err)
					}
					if !r.Diagnostics.HasError() || !strings.Contains(r.Diagnostics.Err().Error(), tt.want) || r.Attributes != nil {
						t.Errorf("got %v, %v; want an error with %q", r.Attributes, r.Diagnostics, tt.want)
					}
				})
			}
			if _, err := a.ReadData(ctx, &providers.ReadDataRequest{Type: "tftest_none", Name: "n"}); !errors.Is(err, ErrNoSuchType) {
				t.Errorf("an unknown data source: %v, want ErrNoSuchType", err)
			}
		})
	}
}

// The providers on the real frameworks (testproviders: fwtest on
// terraform-plugin-framework, protocol 6; sdktest on
// terraform-plugin-sdk/v2, protocol 5), built from the workspace once.
var (
	frameworksOnce sync.Once
	frameworksDir  string
	frameworksErr  error
)

func frameworkProvider(t *testing.T, typ string) string {
	t.Helper()
	if out, err := exec.Command(goBin(), "env", "GOWORK").Output(); err != nil || strings.TrimSpace(string(out)) == "" {
		t.Skip("the framework test providers are built from bulwark's workspace (go.work), which is off")
	}
	frameworksOnce.Do(func() {
		dir, err := os.MkdirTemp("", "bulwark-tfplugin-frameworks-")
		if err != nil {
			frameworksErr = err
			return
		}
		for _, p := range []string{"fwtest", "sdktest"} {
			// -trimpath, as make builds: the packages compile once a run, shared in the build cache with make vet's and build-demo's.
			cmd := exec.Command(goBin(), "build", "-trimpath", "-o", filepath.Join(dir, "terraform-provider-"+p), "github.com/bulwark-iac/bulwark/testproviders/cmd/terraform-provider-"+p)
			if out, err := cmd.CombinedOutput(); err != nil {
				frameworksErr = fmt.Errorf("build terraform-provider-%s: %v\n%s", p, err, out)
				return
			}
		}
		frameworksDir = dir
	})
	if frameworksErr != nil {
		t.Fatal(frameworksErr)
	}
	return filepath.Join(frameworksDir, "terraform-provider-"+typ)
}

// A data source of a provider on each real framework is read through the
// Adapter: the thing the stack made, by name (with its sensitive secret
// marked in the schema, so the host seals it), and the caller identity;
// a name the world lacks is the provider's error.
func TestAdapterReadDataFrameworks(t *testing.T) {
	for _, tc := range []struct {
		typ      string
		protocol float64
	}{{"fwtest", 6}, {"sdktest", 5}} {
		t.Run(tc.typ, func(t *testing.T) {
			t.Parallel()
			bin := frameworkProvider(t, tc.typ)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			p, err := Start(ctx, StartOptions{Cmd: exec.Command(bin)})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(p.Close)
			a := NewAdapter(p, tc.typ, "0.1.0")
			world := filepath.Join(t.TempDir(), "world")
			cr, err := a.Configure(ctx, &providers.ConfigureRequest{Config: providers.Attributes{"world": world}})
			noErrors(t, "configure", cr.Diagnostics, err)

			s, err := a.GetSchema(ctx, &providers.GetSchemaRequest{})
			if err != nil {
				t.Fatal(err)
			}
			thing, id := tc.typ+"_thing", tc.typ+"_identity"
			dt, ok := s.DataSource(thing)
			if _, ok2 := s.DataSource(id); !ok || !ok2 || !s.Capabilities.ReadData {
				t.Fatalf("data sources %+v, capabilities %+v", s.DataSources, s.Capabilities)
			}
			if a, _ := dt.Attribute("secret"); !a.Sensitive || !a.Computed {
				t.Errorf("%s.secret is %+v, want sensitive and computed", thing, a)
			}
			if a, _ := dt.Attribute("name"); !a.Required {
				t.Errorf("%s.name is %+v, want required", thing, a)
			}

			made, err := a.Create(ctx, &providers.CreateRequest{Type: thing, Name: "t", Config: providers.Attributes{"name": "alpha", "secret": "hush"}})
			noErrors(t, "create", made.Diagnostics, err)

			r, err := a.ReadData(ctx, &providers.ReadDataRequest{Type: thing, Name: "that", Config: providers.Attributes{"name": "alpha"}})
			noErrors(t, "read data "+thing, r.Diagnostics, err)
			if r.Attributes["id"] != made.ID || r.Attributes["secret"] != "hush" || r.Attributes["name"] != "alpha" || r.Attributes["arn"] != made.Attributes["arn"] {
				t.Errorf("read %v, made %s %v", r.Attributes, made.ID, made.Attributes)
			}

			r, err = a.ReadData(ctx, &providers.ReadDataRequest{Type: id, Name: "me", Config: providers.Attributes{}})
			noErrors(t, "read data "+id, r.Diagnostics, err)
			if r.Attributes["world"] != world || r.Attributes["protocol"] != tc.protocol {
				t.Errorf("identity %v, want world %s, protocol %v", r.Attributes, world, tc.protocol)
			}

			r, err = a.ReadData(ctx, &providers.ReadDataRequest{Type: thing, Name: "gone", Config: providers.Attributes{"name": "nobody"}})
			if err != nil || !r.Diagnostics.HasError() || r.Attributes != nil {
				t.Errorf("read of a name the world lacks: %+v, %v", r, err)
			}
		})
	}
}
