package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

// examples are the Examples section of each command's help, by command path.
// Every command has one (help_test.go walks the tree): the line a person
// types, with a spec named stack.yaml.
var examples = map[string]string{
	"bulwark": `  bulwark validate stack.yaml
  bulwark plan stack.yaml
  bulwark apply stack.yaml
  bulwark status stack.yaml`,
	"bulwark validate": `  bulwark validate stack.yaml
  bulwark validate stack.yaml --provider local
  bulwark validate stack.yaml --json    # each problem with file, line, column, attribute path`,
	"bulwark plan": `  bulwark plan stack.yaml
  bulwark plan stack.yaml --json
  bulwark plan stack.yaml --detailed-exitcode    # exit 2 when there are changes
  bulwark plan stack.yaml --out stack.plan       # then: bulwark apply stack.plan`,
	"bulwark show": `  bulwark show stack.plan
  bulwark show stack.plan --json
  bulwark show stack.plan --html > plan.html`,
	"bulwark apply": `  bulwark apply stack.yaml
  bulwark apply stack.yaml --dry-run
  bulwark apply stack.yaml --yes                 # on a terminal, do not ask
  bulwark apply stack.plan                       # exactly what bulwark plan --out saved
  bulwark apply stack.yaml --parallelism 4
  bulwark apply stack.yaml --json | jq -c 'select(.kind == "operation")'    # the event stream
  bulwark --events events.jsonl apply stack.yaml`,
	"bulwark teardown": `  bulwark teardown stack.yaml --dry-run
  bulwark teardown stack.yaml --yes`,
	"bulwark rollback": `  bulwark rollback stack.yaml
  bulwark rollback stack.yaml --to 3    # a revision bulwark history lists
  bulwark rollback stack.yaml --yes`,
	"bulwark resume": `  bulwark resume stack.yaml`,
	"bulwark status": `  bulwark status stack.yaml
  bulwark status stack.yaml --json`,
	"bulwark doctor": `  bulwark doctor
  bulwark doctor stack.yaml
  BULWARK_LOG=debug bulwark doctor stack.yaml    # with each plugin's own log`,
	"bulwark history": `  bulwark history stack.yaml
  bulwark history stack.yaml --json`,
	"bulwark ui": `  bulwark ui                                     # http://127.0.0.1:8080/, the stacks under .bulwark
  bulwark --state postgres://bulwark@db:5432/infra ui
  bulwark ui --listen 0.0.0.0:8080               # beyond loopback: prints the token every request needs`,
	"bulwark ack":   `  bulwark ack op_01JD3V8W2X7K4Q9M5N6P0R1S2T    # the operation bulwark status names`,
	"bulwark graph": `  bulwark graph stack.yaml | dot -Tsvg > stack.svg`,
	"bulwark providers": `  bulwark providers
  bulwark providers --json
  bulwark --plugin-dir ./bin/plugins providers`,
	"bulwark providers lock": `  bulwark providers lock stack.yaml
  bulwark providers lock stack.yaml --provider local`,
	"bulwark providers install": `  bulwark providers install hashicorp/random@"~> 3.6"
  bulwark providers install registry.example.com/acme/widget@"= 1.2.0" --key acme.asc
  bulwark providers install hashicorp/random --lock infra/bulwark.lock
  bulwark providers install hashicorp/random@"~> 3.6" --local    # pin the package a mirror or the plugin cache holds`,
	"bulwark import": `  bulwark import stack.yaml data my-existing-bucket
  bulwark import stack.yaml data my-existing-bucket --from other-stack`,
	"bulwark output": `  bulwark output stack.yaml
  bulwark output stack.yaml db_url    # one value alone, a sensitive one included
  bulwark output stack.yaml --json`,
	"bulwark fmt": `  bulwark fmt                          # the specs in this folder
  bulwark fmt stack.yaml --diff
  bulwark fmt --check .                # in CI: exit 2 when a spec is not canonical
  bulwark fmt - < stack.yaml           # canonical form on stdout`,
	"bulwark state":        `  bulwark state list stack.yaml`,
	"bulwark state list":   `  bulwark state list stack.yaml --json`,
	"bulwark state show":   `  bulwark state show stack.yaml data`,
	"bulwark state forget": `  bulwark state forget stack.yaml data`,
	"bulwark state mv":     `  bulwark state mv stack.yaml data archive`,
	"bulwark state migrate": `  bulwark state migrate stack.yaml --to 'postgres://ci@db.internal:5432/infra?sslmode=require'
  bulwark --state postgres://ci@db.internal:5432/infra state migrate stack.yaml --to file://./.bulwark`,
	"bulwark secrets": `  BULWARK_SECRETS_NEW_PASSPHRASE=… bulwark secrets rotate stack.yaml`,
	"bulwark secrets rotate": `  BULWARK_SECRETS_NEW_PASSPHRASE=… bulwark secrets rotate stack.yaml
  bulwark secrets rotate stack.yaml --secrets-provider 'awskms://alias/team?region=eu-west-1'`,
	"bulwark help":                  `  bulwark help apply`,
	"bulwark completion":            `  bulwark completion bash > ~/.local/share/bash-completion/completions/bulwark`,
	"bulwark completion bash":       `  bulwark completion bash > /etc/bash_completion.d/bulwark`,
	"bulwark completion zsh":        `  bulwark completion zsh > "${fpath[1]}/_bulwark"`,
	"bulwark completion fish":       `  bulwark completion fish > ~/.config/fish/completions/bulwark.fish`,
	"bulwark completion powershell": `  bulwark completion powershell | Out-String | Invoke-Expression`,
}

// setExamples adds cobra's own commands (help, completion) now, so they get
// examples too, and sets every command's Example from examples. A command
// with none set keeps the one it declares (version).
func setExamples(root *cobra.Command) {
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		if ex, ok := examples[c.CommandPath()]; ok {
			if c.Example != "" {
				panic(fmt.Sprintf("%s declares an Example and has one in examples", c.CommandPath()))
			}
			c.Example = ex
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}
