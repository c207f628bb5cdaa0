package jsonview

import (
	"bytes"
	"encoding/json"
	"errors"
	"maps"
	"strings"
	"testing"

	"github.com/bulwark-iac/bulwark/core/plan"
	"github.com/bulwark-iac/bulwark/core/protection"
	"github.com/bulwark-iac/bulwark/core/spec"
	"github.com/bulwark-iac/bulwark/core/stack"
	"github.com/bulwark-iac/bulwark/core/state"
)

func TestWriteNoHTMLEscapingOneWrite(t *testing.T) {
	var w countingWriter
	if err := Write(&w, map[string]string{"a": "<b>&"}); err != nil {
		t.Fatal(err)
	}
	if got, want := w.String(), "{\n  \"a\": \"<b>&\"\n}\n"; got != want {
		t.Errorf("Write = %q, want %q", got, want)
	}
	if w.writes != 1 {
		t.Errorf("Write made %d writes, want 1 (a redacting writer must see the document whole)", w.writes)
	}
	w = countingWriter{}
	if err := WriteLine(&w, map[string]string{"a": "<b>"}); err != nil || w.String() != "{\"a\":\"<b>\"}\n" {
		t.Errorf("WriteLine = %q, %v", w.String(), err)
	}
}

type countingWriter struct {
	bytes.Buffer
	writes int
}

func (w *countingWriter) Write(p []byte) (int, error) {
	w.writes++
	return w.Buffer.Write(p)
}

func TestNewPlan(t *testing.T) {
	ch := func(name string, a plan.Action) stack.Planned {
		return stack.Planned{Change: plan.Change{Resource: name, Type: "t", Provider: "p", Action: a, Protection: protection.Durable}}
	}
	secret := ch("db", plan.Update)
	secret.Before = map[string]any{"pw": "old-sekr1t", "size": 1}
	secret.After = map[string]any{"pw": "new-sekr1t", "size": 2}
	secret.Observed = map[string]any{"pw": "old-sekr1t"}
	secret.Sensitive = []string{"pw"}
	pv := &stack.Preview{Stack: "s", Changes: []stack.Planned{
		ch("a", plan.Create), ch("b", plan.Create), ch("c", plan.NoOp), ch("d", plan.Delete),
		ch("e", plan.Replace), ch("f", plan.Import), ch("g", plan.Conflict), secret,
	}, Refused: &plan.RefusedError{Op: "apply", Resources: []string{"d"}}}
	doc := NewPlan(pv)
	want := PlanSummary{Create: 2, Update: 1, Replace: 1, Delete: 1, Import: 1, Conflict: 1, NoOp: 1, HasChanges: true}
	if doc.Summary != want {
		t.Errorf("summary = %+v, want %+v", doc.Summary, want)
	}
	if doc.FormatVersion != FormatVersion || doc.Refused == nil || doc.Refused.Resources[0] != "d" || doc.Conflict != nil {
		t.Errorf("doc = %+v", doc)
	}
	tests := []struct {
		i                 int
		action, ownership string
	}{
		{0, "create", "unknown"}, {2, "no-op", "unknown"}, {6, "conflict", "unknown"},
	}
	for _, tt := range tests {
		rc := doc.ResourceChanges[tt.i]
		if rc.Action != tt.action || rc.Ownership != tt.ownership || rc.Protection != "durable" {
			t.Errorf("change %d = %s, %s, %s", tt.i, rc.Action, rc.Ownership, rc.Protection)
		}
		if rc.ForceNew == nil || rc.Drifted == nil || rc.Sensitive == nil {
			t.Errorf("change %d has a nil list: it must print as []", tt.i)
		}
	}
	var out bytes.Buffer
	if err := Write(&out, doc); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "sekr1t") {
		t.Errorf("a sensitive value is in clear:\n%s", out.String())
	}
	if n := strings.Count(out.String(), `"pw": "(sensitive)"`); n != 3 {
		t.Errorf("%d masked values, want 3 (before, after, observed):\n%s", n, out.String())
	}
	// The input is not changed by masking.
	if secret.After["pw"] != "new-sekr1t" {
		t.Errorf("NewPlan changed the preview: %v", secret.After)
	}
}

func TestNewValidate(t *testing.T) {
	sp := &spec.Spec{File: "s.yaml", Stack: "st", Text: []byte("version: 1\nstack: st\nresources:\n  - name: a\n    type: t\n    bogus: 1\n")}
	red := func(s string) string { return strings.ReplaceAll(s, "hunter2", "(sensitive)") }
	tests := []struct {
		name string
		sp   *spec.Spec
		err  error
		want []Diagnostic
	}{
		{"valid", sp, nil, []Diagnostic{}},
		{"a problem gets its path", sp, spec.Problems{{File: "s.yaml", Pos: spec.Pos{Line: 6, Col: 5}, Msg: `unknown field "bogus"`}},
			[]Diagnostic{{Severity: "error", Message: `unknown field "bogus"`, File: "s.yaml", Line: 6, Column: 5, Path: "resources[0].bogus", Resource: "a"}}},
		{"a problem with no place", sp, spec.Problems{{File: "s.yaml", Msg: "too large"}},
			[]Diagnostic{{Severity: "error", Message: "too large", File: "s.yaml"}}},
		{"another error, redacted", nil, errors.New("plugin said hunter2"),
			[]Diagnostic{{Severity: "error", Message: "plugin said (sensitive)"}}},
		{"a wrapped problem", sp, errors.Join(errors.New("x"), spec.Problems{{File: "s.yaml", Pos: spec.Pos{Line: 2, Col: 8}, Msg: "bad name"}}),
			[]Diagnostic{{Severity: "error", Message: "bad name", File: "s.yaml", Line: 2, Column: 8, Path: "stack"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := NewValidate(tt.sp, tt.err, red)
			if doc.Valid != (len(tt.want) == 0) || doc.ErrorCount != len(tt.want) || len(doc.Diagnostics) != len(tt.want) {
				t.Fatalf("doc = %+v", doc)
			}
			for i, d := range doc.Diagnostics {
				if d != tt.want[i] {
					t.Errorf("diagnostic %d = %+v, want %+v", i, d, tt.want[i])
				}
			}
		})
	}
}

func TestNewStateResourceMasksAndFillsLists(t *testing.T) {
	r := &state.Resource{Name: "db", Config: map[string]any{"pw": "sekr1t"}, Sensitive: []string{"pw"}}
	got := NewStateResource(r)
	if got.Config["pw"] != "(sensitive)" || got.Attributes == nil || got.DependsOn == nil {
		t.Errorf("got %+v", got)
	}
	if r.Config["pw"] != "sekr1t" {
		t.Errorf("the record was changed")
	}
}

func TestNewPlanDataReads(t *testing.T) {
	doc := NewPlan(&stack.Preview{Stack: "s"})
	if doc.DataReads == nil {
		t.Error("data_reads is nil: it must print as []")
	}
	pv := &stack.Preview{Stack: "s", DataReads: []stack.DataRead{
		{Name: "net", Type: "lookup", Provider: "mock", Attributes: map[string]any{"token": "sekr1t-data", "size": 3.0}, Sensitive: []string{"token"}},
	}}
	doc = NewPlan(pv)
	if len(doc.DataReads) != 1 || doc.DataReads[0].Address != "data.net" || doc.DataReads[0].Attributes["size"] != 3.0 {
		t.Fatalf("data reads = %+v", doc.DataReads)
	}
	var out bytes.Buffer
	if err := Write(&out, doc); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "sekr1t") || !strings.Contains(out.String(), `"token": "(sensitive)"`) {
		t.Errorf("data read not masked:\n%s", out.String())
	}
	if pv.DataReads[0].Attributes["token"] != "sekr1t-data" {
		t.Error("NewPlan changed the preview")
	}
}

func TestNewPlanStackReads(t *testing.T) {
	if doc := NewPlan(&stack.Preview{Stack: "app"}); doc.StackReads == nil {
		t.Error("stack_reads is nil: it must print as []")
	}
	pv := &stack.Preview{Stack: "app", StackReads: []stack.StackRead{
		{Stack: "network", Revision: 3, Outputs: map[string]any{"pw": "sekr1t-out", "zone": "eu"}, Sensitive: []string{"pw"}},
	}}
	doc := NewPlan(pv)
	if len(doc.StackReads) != 1 || doc.StackReads[0].Stack != "network" || doc.StackReads[0].Revision != 3 || doc.StackReads[0].Outputs["zone"] != "eu" {
		t.Fatalf("stack reads = %+v", doc.StackReads)
	}
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "sekr1t-out") || !strings.Contains(string(b), `"pw":"(sensitive)"`) {
		t.Errorf("the sensitive output is not masked: %s", b)
	}
	if pv.StackReads[0].Outputs["pw"] != "sekr1t-out" {
		t.Error("NewPlan changed the preview's values")
	}
}

// The plan's moves and forgets are copied field by field into the
// document's own types: every field the operations hand over is written.
func TestNewPlanMovesAndForgets(t *testing.T) {
	doc := NewPlan(&stack.Preview{Stack: "s"})
	if doc.Moves == nil || doc.Forgets == nil {
		t.Error("moves or forgets is nil: each must print as []")
	}
	pv := &stack.Preview{Stack: "s",
		Moves:   []stack.Move{{From: "web[a]", To: "site[a]", ID: "i-1", Type: "server"}},
		Forgets: []stack.Forget{{Address: "old", ID: "i-2", Type: "bucket", Protection: "durable"}},
	}
	var out bytes.Buffer
	if err := Write(&out, NewPlan(pv)); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Moves   []map[string]string `json:"moves"`
		Forgets []map[string]string `json:"forgets"`
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	wantMove := map[string]string{"from": "web[a]", "to": "site[a]", "id": "i-1", "type": "server"}
	wantForget := map[string]string{"address": "old", "id": "i-2", "type": "bucket", "protection": "durable"}
	if len(got.Moves) != 1 || !maps.Equal(got.Moves[0], wantMove) {
		t.Errorf("moves = %v, want [%v]", got.Moves, wantMove)
	}
	if len(got.Forgets) != 1 || !maps.Equal(got.Forgets[0], wantForget) {
		t.Errorf("forgets = %v, want [%v]", got.Forgets, wantForget)
	}
}
