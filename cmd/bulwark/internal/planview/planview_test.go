package planview_test

import (
	"strings"
	"testing"

	"github.com/bulwark-iac/bulwark/cmd/bulwark/internal/planview"
	"github.com/bulwark-iac/bulwark/core/plan"
	"github.com/bulwark-iac/bulwark/core/protection"
	"github.com/bulwark-iac/bulwark/core/stack"
)

func TestRenderDiffMasksSensitiveAndFlagsVanished(t *testing.T) {
	pv := &stack.Preview{Stack: "s", Changes: []stack.Planned{
		{Change: plan.Change{Resource: "db", Type: "generic", Action: plan.Update, Protection: protection.Ephemeral,
			Before: map[string]any{"password": "old-secret", "size": 1.0}, After: map[string]any{"password": "new-secret", "size": 2.0}},
			Observed: map[string]any{"password": "old-secret", "size": 1.0}, Sensitive: []string{"password"}},
		{Change: plan.Change{Resource: "web", Type: "compute", Action: plan.Replace, Protection: protection.Ephemeral,
			Before: map[string]any{"zone": "a"}, After: map[string]any{"zone": "b"}, ForceNew: []string{"zone"}},
			Observed: map[string]any{"zone": "a"}},
		{Change: plan.Change{Resource: "vault", Type: "s3_bucket", Action: plan.Create, Protection: protection.Protected,
			After: map[string]any{}}, Vanished: true, Drift: "recorded in the state but not found"},
		{Change: plan.Change{Resource: "old", Type: "generic", Action: plan.Delete, Protection: protection.Ephemeral,
			Before: map[string]any{"size": 3.0}}},
	}}
	var b strings.Builder
	planview.Render(&b, pv, false)
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

// countingWriter counts the Write calls it is given.
type countingWriter struct {
	strings.Builder
	writes int
}

func (w *countingWriter) Write(p []byte) (int, error) {
	w.writes++
	return w.Builder.Write(p)
}

// A plan of many resources is one Write, colour or not: the caller's
// writer (a redacting one, on stdout) sees the whole text at once, and an
// apply of N does not start with N system calls.
func TestRenderIsOneWrite(t *testing.T) {
	var changes []stack.Planned
	for _, name := range []string{"a", "b", "c", "d"} {
		changes = append(changes, stack.Planned{Change: plan.Change{Resource: name, Type: "generic", Action: plan.Create,
			Protection: protection.Ephemeral, After: map[string]any{"size": 1.0}}})
	}
	pv := &stack.Preview{Stack: "s", Changes: changes}
	for _, color := range []bool{false, true} {
		var w countingWriter
		planview.Render(&w, pv, color)
		if w.writes != 1 {
			t.Errorf("color %v: %d writes, want 1", color, w.writes)
		}
		if !strings.Contains(w.String(), "Plan: 4 to create") || strings.Count(w.String(), "create") < 4 {
			t.Errorf("color %v: render lacks the plan:\n%s", color, w.String())
		}
	}
}

// The lines the plan shows for a refusal and a conflict: the words core
// puts in the Preview, under the view's headings and marks.
func TestRenderRefusalAndConflict(t *testing.T) {
	conflict := plan.Change{Resource: "database", Type: "dynamodb_table", Action: plan.Conflict, Protection: protection.Ephemeral,
		Reason: "belongs to stack alpha (lineage l1)"}
	for _, tc := range []struct {
		name string
		pv   *stack.Preview
		want []string
	}{
		{"refused by the ladder", &stack.Preview{Stack: "s", Changes: []stack.Planned{{Change: plan.Change{Resource: "db", Type: "dynamodb_table",
			Action: plan.Replace, Protection: protection.Protected, ForceNew: []string{"zone"}}}},
			Refused: &plan.RefusedError{Op: "apply", Resources: []string{"db"}}},
			[]string{"-/+ replace    db (dynamodb_table, protected)", "\nREFUSED: apply refused: it would delete protected resource(s) db"}},
		{"a conflict", &stack.Preview{Stack: "beta", Changes: []stack.Planned{{Change: conflict}},
			Conflict: &plan.ConflictError{Op: "apply", Conflicts: []plan.Change{conflict}}},
			[]string{"!   conflict   database (dynamodb_table, ephemeral)", "\nCONFLICT: apply refused: 1 resource(s)", "belongs to stack alpha"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			if err := planview.Render(&b, tc.pv, false); err != nil {
				t.Fatal(err)
			}
			for _, want := range tc.want {
				if !strings.Contains(b.String(), want) {
					t.Errorf("render lacks %q:\n%s", want, b.String())
				}
			}
		})
	}
}

func TestRenderDataReadsFirst(t *testing.T) {
	pv := &stack.Preview{Stack: "s", DataReads: []stack.DataRead{
		{Name: "net", Type: "lookup", Provider: "mock", Attributes: map[string]any{"secret": "s3cr3t-value"}, Sensitive: []string{"secret"}},
		{Name: "saved", Type: "lookup", Provider: "mock", Saved: true},
	}, Changes: []stack.Planned{
		{Change: plan.Change{Resource: "app", Type: "compute", Action: plan.Create, Protection: protection.Ephemeral, After: map[string]any{"size": 3.0}}},
	}}
	var b strings.Builder
	planview.Render(&b, pv, false)
	out := b.String()
	lines := strings.Split(out, "\n")
	if len(lines) < 3 || lines[0] != "<=  read data.net (lookup)" || lines[1] != "<=  read data.saved (lookup)" {
		t.Errorf("data reads not first:\n%s", out)
	}
	if !strings.Contains(lines[2], "as read when the plan was made") {
		t.Errorf("a saved read is not said so:\n%s", out)
	}
	if strings.Contains(out, "s3cr3t") {
		t.Errorf("the render shows a sensitive value:\n%s", out)
	}
}

// Unchanged resources are counted, not listed, unless ShowUnchanged; what
// has something to say (drift, retained) is listed anyway; a change of
// protection shows the old and the new level.
func TestRenderQuietAndProtectionChange(t *testing.T) {
	var changes []stack.Planned
	for _, n := range []string{"a", "b", "c"} {
		changes = append(changes, stack.Planned{Change: plan.Change{Resource: n, Type: "generic", Action: plan.NoOp, Protection: protection.Ephemeral}})
	}
	changes = append(changes,
		stack.Planned{Change: plan.Change{Resource: "kept", Type: "generic", Action: plan.NoOp, Protection: protection.Durable, Retained: true}},
		stack.Planned{Change: plan.Change{Resource: "db", Type: "generic", Action: plan.Update, Protection: protection.Protected,
			Before: map[string]any{"size": 1.0}, After: map[string]any{"size": 1.0},
			ProtectionFrom: protection.Durable, ProtectionTo: protection.Protected}})
	pv := &stack.Preview{Stack: "s", Changes: changes}

	var quiet strings.Builder
	planview.Render(&quiet, pv, false)
	out := quiet.String()
	for _, want := range []string{"~   update     db (generic, protected)", "    ~ protection durable → protected", "retained   kept", "… and 3 unchanged (--show-unchanged lists them)", "1 to update, 0 to replace, 0 to delete, 3 unchanged, 1 retained."} {
		if !strings.Contains(out, want) {
			t.Errorf("quiet render lacks %q:\n%s", want, out)
		}
	}
	for _, n := range []string{" a (", " b (", " c ("} {
		if strings.Contains(out, n) {
			t.Errorf("quiet render lists an unchanged resource (%q):\n%s", n, out)
		}
	}

	var all strings.Builder
	planview.RenderWith(&all, pv, planview.Options{ShowUnchanged: true})
	out = all.String()
	for _, want := range []string{"=   no change  a (generic, ephemeral)", "=   no change  c (generic, ephemeral)", "3 unchanged"} {
		if !strings.Contains(out, want) {
			t.Errorf("--show-unchanged render lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "… and") {
		t.Errorf("--show-unchanged still counts some as hidden:\n%s", out)
	}
}
