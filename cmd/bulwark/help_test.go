package main

import (
	"bytes"
	"io"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// allCommands returns every command of the tree under root, root first,
// with cobra's own (help, completion) as bulwark sets them up.
func allCommands(root *cobra.Command) []*cobra.Command {
	out := []*cobra.Command{root}
	for _, c := range root.Commands() {
		out = append(out, allCommands(c)...)
	}
	return out
}

// flagLine is a flag's line in a help text: the flag, at most one word
// naming its value, then the usage after two spaces or more. A usage with a
// backquoted phrase made pflag take it as the value's name
// ("--dry-run bulwark plan   … the same as bulwark plan").
var flagLine = regexp.MustCompile(`^\s+(-\w, )?--[\w-]+( [\w.=]+)?\s{2,}\S`)

// valueName is what a flag usage may backquote: the name of its value.
var valueName = regexp.MustCompile("^[A-Z][A-Z_]*(=[A-Z][A-Z_]*)?$")

// Every command's help reads correctly and shows an example of the command
// itself.
func TestHelpTexts(t *testing.T) {
	c := &cli{stdout: io.Discard, stderr: io.Discard}
	root := c.commands()
	cmds := allCommands(root)
	if len(cmds) < 20 {
		t.Fatalf("only %d commands found: %v", len(cmds), cmds)
	}
	for _, cmd := range cmds {
		t.Run(strings.ReplaceAll(cmd.CommandPath(), " ", "_"), func(t *testing.T) {
			if cmd.Short == "" || strings.HasSuffix(cmd.Short, ".") || strings.Contains(cmd.Short, "\n") {
				t.Errorf("Short %q: want one line, no final period", cmd.Short)
			}
			if !strings.HasPrefix(cmd.Use, cmd.Name()) {
				t.Errorf("Use %q does not start with the command's name", cmd.Use)
			}
			// An example of this very command, as it is typed.
			path := strings.Fields(cmd.CommandPath())
			var lines []string
			for _, l := range strings.Split(cmd.Example, "\n") {
				if strings.TrimSpace(l) != "" {
					lines = append(lines, l)
				}
			}
			if len(lines) == 0 {
				t.Errorf("no Example")
			}
			for _, l := range lines {
				if !strings.HasPrefix(l, "  ") {
					t.Errorf("example line %q: indent it by two spaces, as cobra's help shows", l)
				}
				if !runsCommand(strings.Fields(l), path) {
					t.Errorf("example line %q does not run %q", l, cmd.CommandPath())
				}
			}
			check := func(f *pflag.Flag) {
				if strings.Count(f.Usage, "`") > 0 {
					name, _ := pflag.UnquoteUsage(f)
					if strings.Count(f.Usage, "`") != 2 || !valueName.MatchString(name) {
						t.Errorf("--%s usage %q: backquotes only around the value's name (FILE, DIR, N), which pflag shows beside the flag", f.Name, f.Usage)
					}
				}
			}
			cmd.LocalFlags().VisitAll(check)
			cmd.InheritedFlags().VisitAll(check)
			var help bytes.Buffer
			cmd.SetOut(&help)
			if err := cmd.Help(); err != nil {
				t.Fatal(err)
			}
			inFlags := false
			for _, l := range strings.Split(help.String(), "\n") {
				switch {
				case strings.HasSuffix(l, "Flags:"):
					inFlags = true
					continue
				case strings.TrimSpace(l) == "":
					inFlags = false
					continue
				}
				if inFlags && !flagLine.MatchString(l) {
					t.Errorf("garbled flag line in help: %q", l)
				}
				if strings.Contains(l, "`") && inFlags {
					t.Errorf("backquote in a flag's help: %q", l)
				}
			}
			if !strings.Contains(help.String(), "Examples:\n") {
				t.Errorf("help shows no Examples section:\n%s", help.String())
			}
		})
	}
}

// runsCommand reports whether the words of an example line run the command
// path: "bulwark" (perhaps after an environment variable), then each word of
// the path in order, with only flags and their values between them.
func runsCommand(words, path []string) bool {
	i := slices.Index(words, path[0])
	if i < 0 {
		return false
	}
	i++
	for _, p := range path[1:] {
		for i < len(words) && words[i] != p {
			if !strings.HasPrefix(words[i], "-") {
				return false
			}
			if !strings.Contains(words[i], "=") && i+1 < len(words) && words[i+1] != p {
				i++ // the flag's value
			}
			i++
		}
		if i >= len(words) {
			return false
		}
		i++
	}
	return true
}

// Bare bulwark prints its help on stdout and exits 0, as Terraform prints
// its usage.
func TestBareBulwarkPrintsHelp(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run(nil, strings.NewReader(""), &stdout, &stderr); code != 0 {
		t.Errorf("bulwark with no arguments exited %d, want 0; stderr: %s", code, stderr.String())
	}
	for _, want := range []string{"Usage:\n  bulwark [command]", "Available Commands:", "Examples:", "apply ", "completion "} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout.String())
		}
	}
	if stderr.Len() > 0 {
		t.Errorf("stderr: %q", stderr.String())
	}
}
