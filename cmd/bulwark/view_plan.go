package main

import (
	"fmt"

	"github.com/bulwark-iac/bulwark/cmd/bulwark/internal/jsonview"
	"github.com/bulwark-iac/bulwark/cmd/bulwark/internal/planview"
	"github.com/bulwark-iac/bulwark/core/spec"
	"github.com/bulwark-iac/bulwark/core/stack"
)

// PlanView renders a dry run: `bulwark plan`, `apply --dry-run` and a saved
// plan's `show`. It returns plan's exit code: the refusal's (3 for the
// ladder, 1 for a conflict), or 2 for changes when detailed.
type PlanView interface {
	Plan(pv *stack.Preview, detailed bool) error
}

func newPlanView(t ViewType, v view) PlanView {
	if t == ViewJSON {
		return planJSON{v}
	}
	return planHuman{v}
}

type planHuman struct{ view }

func (v planHuman) Plan(pv *stack.Preview, detailed bool) error {
	if err := planview.RenderWith(v.out(), pv, planview.Options{Color: v.color, ShowUnchanged: v.showUnchanged}); err != nil {
		return err
	}
	return planExit(pv, detailed)
}

type planJSON struct{ view }

func (v planJSON) Plan(pv *stack.Preview, detailed bool) error {
	if err := v.json(jsonview.NewPlan(pv)); err != nil {
		return err
	}
	return planExit(pv, detailed)
}

func planExit(pv *stack.Preview, detailed bool) error {
	if err := pv.Err(); err != nil {
		// What the apply would be refused with, and its exit code.
		return withExit(stack.ExitCode(nil, err))
	}
	if detailed && pv.HasChanges() {
		return withExit(stack.ExitChanges)
	}
	return nil
}

// ValidateView renders `bulwark validate`: err is what validation returned
// (nil when valid), sp the spec when it parsed, notes what could not be
// checked without the variables' values (warnings).
type ValidateView interface {
	Validate(path string, sp *spec.Spec, notes spec.Problems, err error) error
}

func newValidateView(t ViewType, v view) ValidateView {
	if t == ViewJSON {
		return validateJSON{v}
	}
	return validateHuman{v}
}

// validateHuman prints "valid" on stdout; problems are returned, for run to
// print one a line on stderr with their count.
type validateHuman struct{ view }

func (v validateHuman) Validate(path string, sp *spec.Spec, notes spec.Problems, err error) error {
	for _, n := range notes {
		fmt.Fprintln(v.stderr, v.red.Redact("warning: "+n.Error()))
	}
	if err != nil {
		return err
	}
	data := ""
	if len(sp.Data) > 0 {
		// Checked against the schemas; nothing is read.
		data = fmt.Sprintf(", %d data entries", len(sp.Data))
	}
	if n := unknownVariables(sp); n > 0 {
		// Checked as unknown values of their types, as terraform
		// validate does; plan and apply need them.
		data += fmt.Sprintf(", %d variable(s) with no value checked as unknown", n)
	}
	_, werr := fmt.Fprintf(v.out(), "%s: valid (stack %s, %d resources%s)\n", path, sp.Stack, len(sp.Resources), data)
	return werr
}

// validateJSON prints the document: whatever stopped the validation is a
// diagnostic in it, not a line on stderr, and the exit code is 1.
type validateJSON struct{ view }

func (v validateJSON) Validate(_ string, sp *spec.Spec, notes spec.Problems, err error) error {
	doc := jsonview.NewValidate(sp, err, v.red.Redact)
	doc.AddWarnings(sp, notes, v.red.Redact)
	if sp != nil {
		doc.UnknownVariables = unknownVariables(sp)
	}
	if perr := v.json(doc); perr != nil {
		return perr
	}
	if err != nil {
		return withExit(stack.ExitCode(nil, err))
	}
	return nil
}
