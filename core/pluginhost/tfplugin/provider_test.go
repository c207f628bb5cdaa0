package tfplugin

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/zclconf/go-cty/cty"

	"github.com/bulwark-iac/bulwark/core/providers"
)

// The test provider (testdata/tfprovider, a module of its own on
// terraform-plugin-go) is built once per test binary.
var (
	buildOnce   sync.Once
	providerBin string
	buildErr    error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if providerBin != "" {
		os.RemoveAll(filepath.Dir(providerBin))
	}
	if frameworksDir != "" {
		os.RemoveAll(frameworksDir)
	}
	os.Exit(code)
}

func testProvider(t *testing.T) string {
	t.Helper()
	bin, err := buildProvider()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

func testProviderB(b *testing.B) string {
	b.Helper()
	bin, err := buildProvider()
	if err != nil {
		b.Fatal(err)
	}
	return bin
}

// buildProvider builds the test provider once.
func buildProvider() (string, error) {
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "bulwark-tfplugin-test-")
		if err != nil {
			buildErr = err
			return
		}
		bin := filepath.Join(dir, "terraform-provider-tftest")
		cmd := exec.Command(goBin(), "build", "-o", bin, ".")
		cmd.Dir = filepath.Join("testdata", "tfprovider")
		// Its own module, outside the workspace: core's build list never
		// holds terraform-plugin-go.
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
			return
		}
		providerBin = bin
	})
	return providerBin, buildErr
}

// goBin is the go command.
func goBin() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return filepath.Join(runtime.GOROOT(), "bin", "go")
}

// start starts the test provider speaking version.
func start(t *testing.T, version int) *Provider {
	t.Helper()
	cmd := exec.Command(testProvider(t))
	cmd.Env = append(os.Environ(), fmt.Sprintf("TFTEST_PROTOCOL=%d", version))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := Start(ctx, StartOptions{Cmd: cmd})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

func noErrors(t *testing.T, what string, ds providers.Diagnostics, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if ds.HasError() {
		t.Fatalf("%s: %v", what, ds)
	}
}

func attrs(t *testing.T, v cty.Value) providers.Attributes {
	t.Helper()
	a, err := AttributesFromObject(v)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestLifecycle drives a provider through every call the host makes, over
// go-plugin's gRPC with mutual TLS, for both protocols.
func TestLifecycle(t *testing.T) {
	for _, version := range []int{Protocol5, Protocol6} {
		t.Run(fmt.Sprintf("protocol%d", version), func(t *testing.T) {
			t.Parallel()
			lifecycle(t, version)
		})
	}
}

func lifecycle(t *testing.T, version int) {
	ctx := context.Background()
	p := start(t, version)
	if p.Version() != version {
		t.Fatalf("negotiated version %d, want %d", p.Version(), version)
	}
	if p.PID() == 0 {
		t.Fatal("no pid")
	}

	// Schema.
	s, err := p.Schema(ctx)
	noErrors(t, "schema", s.Diagnostics, err)
	thing := s.ResourceTypes["tftest_thing"]
	if thing == nil || s.DataSources["tftest_echo"] == nil {
		t.Fatalf("schema lacks tftest_thing or tftest_echo: %+v", s)
	}
	if thing.Version != 1 {
		t.Errorf("schema version %d, want 1", thing.Version)
	}
	b := thing.Block
	if a := b.Attributes["id"]; a == nil || !a.Computed || a.Optional || a.Type != cty.String {
		t.Errorf("id: %+v", a)
	}
	if a := b.Attributes["name"]; a == nil || !a.Required {
		t.Errorf("name: %+v", a)
	}
	if a := b.Attributes["secret"]; a == nil || !a.Sensitive {
		t.Errorf("secret: %+v", a)
	}
	if a := b.Attributes["old"]; a == nil || !a.Deprecated {
		t.Errorf("old: %+v", a)
	}
	if a := b.Attributes["tags"]; a == nil || !a.Type.Equals(cty.Map(cty.String)) {
		t.Errorf("tags: %+v", a)
	}
	if nb := b.BlockTypes["rule"]; nb == nil || nb.Nesting != NestingList || !nb.Block.Attributes["proto"].Computed {
		t.Errorf("rule: %+v", nb)
	}
	settings := cty.Object(map[string]cty.Type{"mode": cty.String})
	if version == Protocol6 {
		a := b.Attributes["settings"]
		if a == nil || a.NestedType == nil || a.NestedType.Nesting != NestingSingle || !a.ImpliedType().Equals(settings) {
			t.Errorf("settings (nested attribute): %+v", a)
		}
	} else if nb := b.BlockTypes["settings"]; nb == nil || nb.Nesting != NestingSingle {
		t.Errorf("settings (block): %+v", nb)
	}
	ty := thing.ImpliedType()
	if !ty.AttributeType("settings").Equals(settings) || !ty.AttributeType("rule").Equals(cty.List(cty.Object(map[string]cty.Type{"port": cty.Number, "proto": cty.String}))) {
		t.Errorf("implied type %#v", ty)
	}

	// Provider configuration.
	pty := s.Provider.ImpliedType()
	bad, _ := ObjectFromAttributes(providers.Attributes{"prefix": "bad"}, pty)
	vr, err := p.ValidateProviderConfig(ctx, bad)
	if err != nil {
		t.Fatal(err)
	}
	if len(vr.Diagnostics) != 1 || !cmp.Equal(vr.Diagnostics[0].AttributePath, []string{"prefix"}) {
		t.Errorf("validate provider config: %+v", vr.Diagnostics)
	}
	good, _ := ObjectFromAttributes(providers.Attributes{"prefix": "p-"}, pty)
	vr, err = p.ValidateProviderConfig(ctx, good)
	noErrors(t, "validate provider config", vr.Diagnostics, err)
	if !vr.PreparedConfig.RawEquals(good) {
		t.Errorf("prepared config %#v", vr.PreparedConfig)
	}
	ds, err := p.Configure(ctx, "1.11.4", good)
	noErrors(t, "configure", ds, err)

	// Validation, with attribute paths.
	invalid, err := ObjectFromAttributes(providers.Attributes{"name": "a", "size": -1, "secret": "s", "rule": []any{map[string]any{"port": 0}}}, ty)
	if err != nil {
		t.Fatal(err)
	}
	ds, err = p.ValidateResourceConfig(ctx, "tftest_thing", invalid)
	if err != nil {
		t.Fatal(err)
	}
	var paths [][]string
	warnings := 0
	for _, d := range ds {
		if d.Severity == providers.SeverityWarning {
			warnings++
			continue
		}
		paths = append(paths, d.AttributePath)
	}
	if want := [][]string{{"size"}, {"rule", "0", "port"}}; !cmp.Equal(paths, want) || warnings != 1 {
		t.Errorf("validate: paths %v (want %v), %d warnings (want 1): %v", paths, want, warnings, ds)
	}

	// Plan a create: the computed id is unknown, the provider's default is in.
	cfgAttrs := providers.Attributes{"name": "a", "size": 3, "tags": map[string]any{"k": "v"}, "rule": []any{map[string]any{"port": 80}}}
	config, err := ObjectFromAttributes(cfgAttrs, ty)
	if err != nil {
		t.Fatal(err)
	}
	ds, err = p.ValidateResourceConfig(ctx, "tftest_thing", config)
	noErrors(t, "validate", ds, err)
	prior := cty.NullVal(ty)
	plan, err := p.PlanResourceChange(ctx, PlanResourceChangeRequest{TypeName: "tftest_thing", PriorState: prior,
		ProposedNewState: ProposedNew(b, prior, config), Config: config})
	noErrors(t, "plan create", plan.Diagnostics, err)
	planned := attrs(t, plan.PlannedState)
	if planned["id"] != (Unknown{}) {
		t.Errorf("planned id %#v, want unknown", planned["id"])
	}
	if got := planned["rule"].([]any)[0].(map[string]any)["proto"]; got != "tcp" {
		t.Errorf("planned rule proto %v, want the provider's default tcp", got)
	}
	if len(plan.RequiresReplace) != 0 || plan.LegacyTypeSystem {
		t.Errorf("create plan: replace %v, legacy %v", plan.RequiresReplace, plan.LegacyTypeSystem)
	}

	// Apply it.
	applied, err := p.ApplyResourceChange(ctx, ApplyResourceChangeRequest{TypeName: "tftest_thing", PriorState: prior,
		PlannedState: plan.PlannedState, Config: config, PlannedPrivate: plan.PlannedPrivate})
	noErrors(t, "apply create", applied.Diagnostics, err)
	state := attrs(t, applied.NewState)
	id, _ := state["id"].(string)
	if id == "" || state["size"] != 3.0 || !cmp.Equal(state["tags"], map[string]any{"k": "v"}) {
		t.Fatalf("applied state %v", state)
	}
	if string(applied.Private) != "private:"+id {
		t.Errorf("private %q", applied.Private)
	}

	// Read it back.
	read, err := p.ReadResource(ctx, ReadResourceRequest{TypeName: "tftest_thing", CurrentState: applied.NewState, Private: applied.Private})
	noErrors(t, "read", read.Diagnostics, err)
	if !read.NewState.RawEquals(applied.NewState) || string(read.Private) != string(applied.Private) {
		t.Errorf("read %#v / %q, want what apply answered", read.NewState, read.Private)
	}

	// Plan an update in place, apply it.
	cfgAttrs["size"] = 5
	config, _ = ObjectFromAttributes(cfgAttrs, ty)
	plan, err = p.PlanResourceChange(ctx, PlanResourceChangeRequest{TypeName: "tftest_thing", PriorState: read.NewState,
		ProposedNewState: ProposedNew(b, read.NewState, config), Config: config, PriorPrivate: read.Private})
	noErrors(t, "plan update", plan.Diagnostics, err)
	if len(plan.RequiresReplace) != 0 || attrs(t, plan.PlannedState)["id"] != id {
		t.Errorf("update plan: replace %v, state %v", plan.RequiresReplace, attrs(t, plan.PlannedState))
	}
	applied, err = p.ApplyResourceChange(ctx, ApplyResourceChangeRequest{TypeName: "tftest_thing", PriorState: read.NewState,
		PlannedState: plan.PlannedState, Config: config, PlannedPrivate: plan.PlannedPrivate})
	noErrors(t, "apply update", applied.Diagnostics, err)
	if got := attrs(t, applied.NewState); got["size"] != 5.0 || got["id"] != id {
		t.Errorf("updated state %v", got)
	}

	// Plan a change that requires a replacement.
	cfgAttrs["name"] = "b"
	replaced, _ := ObjectFromAttributes(cfgAttrs, ty)
	plan, err = p.PlanResourceChange(ctx, PlanResourceChangeRequest{TypeName: "tftest_thing", PriorState: applied.NewState,
		ProposedNewState: ProposedNew(b, applied.NewState, replaced), Config: replaced, PriorPrivate: applied.Private})
	noErrors(t, "plan replace", plan.Diagnostics, err)
	if len(plan.RequiresReplace) != 1 || !cmp.Equal(PathStrings(plan.RequiresReplace[0]), []string{"name"}) {
		t.Errorf("requires replace %#v, want name", plan.RequiresReplace)
	}

	// Import by id, then read what the import found.
	imp, err := p.ImportResourceState(ctx, "tftest_thing", id)
	noErrors(t, "import", imp.Diagnostics, err)
	if len(imp.Imported) != 1 || imp.Imported[0].TypeName != "tftest_thing" || attrs(t, imp.Imported[0].State)["id"] != id {
		t.Fatalf("imported %+v", imp.Imported)
	}
	read, err = p.ReadResource(ctx, ReadResourceRequest{TypeName: "tftest_thing", CurrentState: imp.Imported[0].State, Private: imp.Imported[0].Private})
	noErrors(t, "read imported", read.Diagnostics, err)
	if !read.NewState.RawEquals(applied.NewState) {
		t.Errorf("imported and read %v, want %v", attrs(t, read.NewState), attrs(t, applied.NewState))
	}
	imp, err = p.ImportResourceState(ctx, "tftest_thing", "nothing")
	if err != nil || !imp.Diagnostics.HasError() {
		t.Errorf("import of nothing: %v, %v", imp, err)
	}

	// Upgrade a state stored under schema version 0 (size a string then).
	up, err := p.UpgradeResourceState(ctx, "tftest_thing", 0, []byte(`{"id":"`+id+`","name":"a","size":"7"}`))
	noErrors(t, "upgrade", up.Diagnostics, err)
	if got := attrs(t, up.UpgradedState); got["size"] != 7.0 || got["id"] != id {
		t.Errorf("upgraded %v", got)
	}
	raw, err := StateJSON(applied.NewState, ty)
	if err != nil {
		t.Fatal(err)
	}
	up, err = p.UpgradeResourceState(ctx, "tftest_thing", 1, raw)
	noErrors(t, "upgrade current", up.Diagnostics, err)
	if !up.UpgradedState.RawEquals(applied.NewState) {
		t.Errorf("upgrade of a current state changed it: %v", attrs(t, up.UpgradedState))
	}

	// A data source.
	ety := s.DataSources["tftest_echo"].ImpliedType()
	dcfg, _ := ObjectFromAttributes(providers.Attributes{"input": "x"}, ety)
	ds, err = p.ValidateDataSourceConfig(ctx, "tftest_echo", dcfg)
	noErrors(t, "validate data source", ds, err)
	data, err := p.ReadDataSource(ctx, "tftest_echo", dcfg)
	noErrors(t, "read data source", data.Diagnostics, err)
	if got := attrs(t, data.State); got["output"] != "p-x" {
		t.Errorf("data source %v", got)
	}

	// Delete: plan to null, apply; then it reads as gone.
	plan, err = p.PlanResourceChange(ctx, PlanResourceChangeRequest{TypeName: "tftest_thing", PriorState: applied.NewState,
		ProposedNewState: cty.NullVal(ty), Config: cty.NullVal(ty), PriorPrivate: applied.Private})
	noErrors(t, "plan delete", plan.Diagnostics, err)
	if !plan.PlannedState.IsNull() {
		t.Errorf("planned delete %#v, want null", plan.PlannedState)
	}
	applied, err = p.ApplyResourceChange(ctx, ApplyResourceChangeRequest{TypeName: "tftest_thing", PriorState: applied.NewState,
		PlannedState: plan.PlannedState, Config: cty.NullVal(ty), PlannedPrivate: plan.PlannedPrivate})
	noErrors(t, "apply delete", applied.Diagnostics, err)
	if !applied.NewState.IsNull() {
		t.Errorf("deleted state %#v, want null", applied.NewState)
	}
	read, err = p.ReadResource(ctx, ReadResourceRequest{TypeName: "tftest_thing", CurrentState: state2(t, id, ty)})
	noErrors(t, "read deleted", read.Diagnostics, err)
	if !read.NewState.IsNull() {
		t.Errorf("read of a deleted resource %#v, want null", read.NewState)
	}

	// A create that fails after making the resource answers its state.
	failing, _ := ObjectFromAttributes(providers.Attributes{"name": "fail-halfway"}, ty)
	plan, err = p.PlanResourceChange(ctx, PlanResourceChangeRequest{TypeName: "tftest_thing", PriorState: cty.NullVal(ty),
		ProposedNewState: ProposedNew(b, cty.NullVal(ty), failing), Config: failing})
	noErrors(t, "plan failing create", plan.Diagnostics, err)
	applied, err = p.ApplyResourceChange(ctx, ApplyResourceChangeRequest{TypeName: "tftest_thing", PriorState: cty.NullVal(ty),
		PlannedState: plan.PlannedState, Config: failing})
	if err != nil || !applied.Diagnostics.HasError() || applied.NewState.IsNull() {
		t.Errorf("failed create: %v, diagnostics %v, state %#v", err, applied.Diagnostics, applied.NewState)
	}

	// A type the schema lacks never reaches the provider.
	if _, err := p.ReadDataSource(ctx, "tftest_none", cty.EmptyObjectVal); !errors.Is(err, ErrNoSuchType) {
		t.Errorf("unknown data source: %v", err)
	}

	if err := p.Stop(ctx); err != nil {
		t.Errorf("stop: %v", err)
	}
	p.Close()
	deadline := time.Now().Add(10 * time.Second)
	for !p.Exited() {
		if time.Now().After(deadline) {
			t.Fatal("the provider process did not exit after Close")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// state2 is a state of ty holding only an id.
func state2(t *testing.T, id string, ty cty.Type) cty.Value {
	t.Helper()
	v, err := ObjectFromAttributes(providers.Attributes{"id": id}, ty)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// BenchmarkCodec is the host's side of one resource's value on the wire
// and back: plain attributes to cty, msgpack, cty, plain attributes.
func BenchmarkCodec(b *testing.B) {
	a := providers.Attributes{"id": "thing-1", "size": 3, "on": true, "tags": map[string]any{"team": "a", "env": "prod"},
		"ips": []any{"10.0.0.1", "10.0.0.2"}, "rule": []any{map[string]any{"port": 80, "proto": "tcp"}, map[string]any{"port": 443}}}
	b.ReportAllocs()
	for b.Loop() {
		v, err := ObjectFromAttributes(a, thingType)
		if err != nil {
			b.Fatal(err)
		}
		mp, err := EncodeMsgpack(v, thingType)
		if err != nil {
			b.Fatal(err)
		}
		back, err := DecodeDynamic(mp, nil, thingType)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := AttributesFromObject(back); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPlanApply is one create through a running provider (protocol
// 6): plan, then apply, each a gRPC call with its values encoded and
// decoded.
func BenchmarkPlanApply(b *testing.B) {
	cmd := exec.Command(testProviderB(b))
	cmd.Env = append(os.Environ(), "TFTEST_PROTOCOL=6")
	ctx := context.Background()
	p, err := Start(ctx, StartOptions{Cmd: cmd})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	s, err := p.Schema(ctx)
	if err != nil {
		b.Fatal(err)
	}
	block := s.ResourceTypes["tftest_thing"].Block
	ty := block.ImpliedType()
	config, err := ObjectFromAttributes(providers.Attributes{"name": "a", "size": 3, "tags": map[string]any{"k": "v"}}, ty)
	if err != nil {
		b.Fatal(err)
	}
	null := cty.NullVal(ty)
	b.ReportAllocs()
	for b.Loop() {
		plan, err := p.PlanResourceChange(ctx, PlanResourceChangeRequest{TypeName: "tftest_thing", PriorState: null,
			ProposedNewState: ProposedNew(block, null, config), Config: config})
		if err != nil || plan.Diagnostics.HasError() {
			b.Fatal(err, plan.Diagnostics)
		}
		applied, err := p.ApplyResourceChange(ctx, ApplyResourceChangeRequest{TypeName: "tftest_thing", PriorState: null,
			PlannedState: plan.PlannedState, Config: config})
		if err != nil || applied.Diagnostics.HasError() {
			b.Fatal(err, applied.Diagnostics)
		}
	}
}
