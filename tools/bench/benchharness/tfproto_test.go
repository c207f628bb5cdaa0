package benchharness

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bulwark-iac/bulwark/core/spec"
)

// TestTFItemStacks: bulwark's spec and Terraform's configuration of the
// Terraform-protocol rows declare the same n items, by the same names.
func TestTFItemStacks(t *testing.T) {
	for _, tc := range []struct {
		provider string
		n        int
	}{{"fwtest", 1}, {"sdktest", 3}} {
		sp, err := spec.Parse("spec.yaml", TFItemSpec(tc.provider, tc.n))
		if err != nil {
			t.Fatalf("%s: %v", tc.provider, err)
		}
		if len(sp.Resources) != tc.n {
			t.Fatalf("%s: %d resources, want %d", tc.provider, len(sp.Resources), tc.n)
		}
		hcl := string(TFItemConfig(tc.provider, tc.n))
		for i, r := range sp.Resources {
			if r.Type != tc.provider+"_item" || r.Name != ResourceName(i) {
				t.Errorf("%s: resource %d is %s %s", tc.provider, i, r.Type, r.Name)
			}
			if !strings.Contains(hcl, `resource "`+r.Type+`" "`+r.Name+`"`) {
				t.Errorf("%s: Terraform's configuration has no %s.%s", tc.provider, r.Type, r.Name)
			}
		}
		if got := strings.Count(hcl, "resource \""); got != tc.n {
			t.Errorf("%s: Terraform's configuration has %d resources, want %d", tc.provider, got, tc.n)
		}
		if !strings.Contains(hcl, `source = "bulwark/`+tc.provider+`"`) {
			t.Errorf("%s: Terraform's configuration does not require bulwark/%s:\n%s", tc.provider, tc.provider, hcl)
		}
	}
	if !strings.Contains(TFCLIConfig("/m"), `path = "/m"`) {
		t.Errorf("CLI configuration: %s", TFCLIConfig("/m"))
	}
}

// TestTFReportCPURatio: a row holds the per-resource ratio past each
// side's start-up (a stack of one) beside the wall-time one, and
// bulwark's CPU with its provider against the mock's without batch calls (their ratio, which load moves
// less than wall time) beside the wall-time verdict, and bulwark's own
// process alone against the same (the host's ratio, 300 ÷ 200 ms here,
// apart from the providers' 300 ÷ 200 ms).
func TestTFReportCPURatio(t *testing.T) {
	res := func(tool string, wall, cpu, self time.Duration) Result {
		return Result{Tool: tool, Measurement: Measurement{Wall: wall, CPU: cpu, CPUSelf: self}}
	}
	rep := &TFReport{N: 1000, Rows: []TFRow{{Provider: "fwtest", Command: CmdNoop, Results: map[string]Result{
		RunnerBulwarkTF:   res(ToolBulwark, 900*time.Millisecond, 800*time.Millisecond, 300*time.Millisecond),
		RunnerMockNoBatch: res(ToolBulwark, 300*time.Millisecond, 400*time.Millisecond, 200*time.Millisecond),
		// Start-up: (900 − 200) ÷ (300 − 100) ms past it, 3.5×.
		RunnerBulwarkTF + StartupSuffix:   res(ToolBulwark, 200*time.Millisecond, 100*time.Millisecond, 50*time.Millisecond),
		RunnerMockNoBatch + StartupSuffix: res(ToolBulwark, 100*time.Millisecond, 80*time.Millisecond, 40*time.Millisecond),
	}}}, World: "/dev/shm"}
	md := rep.Markdown()
	for _, want := range []string{"| **3.0× ✗** | 200 ms / 100 ms | **3.5× ✗** |", "| 300 ms / 800 ms | 200 ms / 400 ms | 2.0× | 1.5× |", "under `/dev/shm` (`-tf-world`)"} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
	// Terraform did not run: no Terraform ÷ bulwark ratio.
	if strings.Contains(md, "0.0×") {
		t.Errorf("report shows a ratio for a tool that did not run:\n%s", md)
	}
}

// TestCountRPCs: the "Received request" lines of both tools' logs (hclog
// text, as bulwark and Terraform write a provider's JSON lines) count by
// RPC; other lines do not.
func TestCountRPCs(t *testing.T) {
	log := []byte(`2026-12-03T15:07:30.209Z [TRACE] bulwark.fwtest.terraform-provider-fwtest_v0.1.0: Received request: @module=sdk.proto tf_rpc=GetProviderSchema tf_proto_version=6.11
2026-12-03T15:07:30.210Z [TRACE] bulwark.fwtest.terraform-provider-fwtest_v0.1.0: Sending request downstream: tf_rpc=GetProviderSchema
2026-12-03T15:07:31.000Z [TRACE] provider.terraform-provider-fwtest_v0.1.0: Received request: tf_rpc=ReadResource @module=sdk.proto
{"@message":"Received request","tf_rpc":"ReadResource"}
`)
	got := countRPCs(log)
	if got["GetProviderSchema"] != 1 || got["ReadResource"] != 2 || len(got) != 2 {
		t.Errorf("counted %v, want GetProviderSchema 1, ReadResource 2", got)
	}
	md := tfCallsMarkdown([]TFCalls{{Tool: RunnerBulwarkTF, Provider: "fwtest", N: 10, Calls: map[string]map[string]int{
		CmdNoop: {"ReadResource": 10, "GetProviderSchema": 1, "PlanResourceChange": 5, "Configure": 2, "PrepareProviderConfig": 2},
	}}})
	if !strings.Contains(md, "| no-op apply | bulwark | 1.50 | PlanResourceChange 0.50, ReadResource 1 |") {
		t.Errorf("calls table:\n%s", md)
	}
}

// TestTFWorldDir: with -tf-world every stack gets a fresh world folder
// under it, removed when the stack is done; without it, the default.
func TestTFWorldDir(t *testing.T) {
	root := t.TempDir()
	cfg := TFConfig{World: root}
	a, doneA, err := cfg.worldDir("/default")
	if err != nil {
		t.Fatal(err)
	}
	b, doneB, err := cfg.worldDir("/default")
	if err != nil {
		t.Fatal(err)
	}
	if a == b || filepath.Dir(a) != root || filepath.Dir(b) != root {
		t.Fatalf("world folders %s and %s, want two fresh ones under %s", a, b, root)
	}
	doneA()
	if _, err := os.Stat(a); !os.IsNotExist(err) {
		t.Errorf("%s left behind: %v", a, err)
	}
	if _, err := os.Stat(b); err != nil {
		t.Errorf("the other stack's world went with it: %v", err)
	}
	doneB()
	if d, _, err := (TFConfig{}).worldDir("/default"); err != nil || d != "/default" {
		t.Errorf("without -tf-world: %q, %v", d, err)
	}
}
