package stack_test

import (
	"strings"
	"testing"

	"github.com/bulwark-iac/bulwark/core/plan"
	"github.com/bulwark-iac/bulwark/core/stack"
	"github.com/bulwark-iac/bulwark/sdk"
)

func TestRenderDiffMasksSensitiveAndFlagsVanished(t *testing.T) {
	pv := &stack.Preview{Stack: "s", Changes: []stack.Planned{
		{Change: plan.Change{Resource: "db", Type: "generic", Action: plan.Update, Protection: sdk.ProtectionEphemeral,
			Before: map[string]any{"password": "old-secret", "size": 1.0}, After: map[string]any{"password": "new-secret", "size": 2.0}},
			Observed: map[string]any{"password": "old-secret", "size": 1.0}, Sensitive: []string{"password"}},
		{Change: plan.Change{Resource: "web", Type: "compute", Action: plan.Replace, Protection: sdk.ProtectionEphemeral,
			Before: map[string]any{"zone": "a"}, After: map[string]any{"zone": "b"}, ForceNew: []string{"zone"}},
			Observed: map[string]any{"zone": "a"}},
		{Change: plan.Change{Resource: "vault", Type: "s3_bucket", Action: plan.Create, Protection: sdk.ProtectionProtected,
			After: map[string]any{}}, Vanished: true, Drift: "recorded in the state but not found"},
		{Change: plan.Change{Resource: "old", Type: "generic", Action: plan.Delete, Protection: sdk.ProtectionEphemeral,
			Before: map[string]any{"size": 3.0}}},
	}}
	var b strings.Builder
	pv.Render(&b)
	out := b.String()
	for _, want := range []string{
		"~ password: (sensitive) -> (sensitive)",
		"~ size: 1 -> 2",
		`~ zone: "a" -> "b" (forces replacement)`,
		"!!! PROTECTED resource vault has vanished",
		"- size = 3",
		"Plan: 1 to create, 1 to update, 1 to replace, 1 to delete, 0 unchanged.",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("render lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "secret") {
		t.Errorf("a sensitive value was shown:\n%s", out)
	}
}
