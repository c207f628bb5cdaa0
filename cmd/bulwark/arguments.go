package main

import "github.com/spf13/cobra"

// The typed arguments of the commands that read and render, parsed from
// their flags and positional arguments before anything runs, the view they
// render through among them (after Terraform's internal/command/arguments):
// a command's body reads one struct, not loose flag variables.

// viewFlag is --json: which view a command renders through.
type viewFlag struct{ json bool }

// register adds --json to cmd; what says what the JSON is.
func (f *viewFlag) register(cmd *cobra.Command, what string) {
	cmd.Flags().BoolVar(&f.json, "json", false, what+" (docs/json.md)")
}

// View is the view the flag asks for.
func (f viewFlag) View() ViewType { return viewTypeOf(f.json) }

// specArgs are the arguments of a command that reads one spec and renders
// what it finds: status, history, state list, validate.
type specArgs struct {
	Spec string
	View ViewType
}

func parseSpecArgs(args []string, v viewFlag) specArgs {
	return specArgs{Spec: args[0], View: v.View()}
}

// addressArgs are state show's: a spec, a resource address in it, the view.
type addressArgs struct {
	Spec, Address string
	View          ViewType
}

func parseAddressArgs(args []string, v viewFlag) addressArgs {
	return addressArgs{Spec: args[0], Address: args[1], View: v.View()}
}

// doctorArgs are doctor's: an optional spec and the view.
type doctorArgs struct {
	Spec string // "": check every plugin found and every stack
	View ViewType
}

func parseDoctorArgs(args []string, v viewFlag) doctorArgs {
	a := doctorArgs{View: v.View()}
	if len(args) == 1 {
		a.Spec = args[0]
	}
	return a
}
