package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/bulwark-iac/bulwark/core/secrets"
	"github.com/bulwark-iac/bulwark/core/stack"
)

func (c *cli) secretsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "secrets",
		Short: "Manage the key that seals a stack's sensitive values",
	}
	var asJSON bool
	rotate := &cobra.Command{
		Use:   "rotate SPEC",
		Short: "Re-seal every sealed value of the stack (state, revisions, backups) under a new key, or a new secrets provider",
		Long: "Re-seal every sealed value of the stack's state under a new key: with " + secrets.FlagProvider + " P, under provider P " +
			"(passphrase, awskms://KEY or keyfile); without it, under a new key of the stack's own provider (for a passphrase, the one in $" +
			secrets.EnvNewPassphrase + "). The current key must open the state ($" + secrets.EnvPassphrase + ", the key file, or KMS). " +
			"It is a journaled operation: after a crash, `bulwark resume SPEC` with both the old and the new credentials finishes it. " +
			"Once it ends, the old key opens nothing the stack keeps: its state, revisions and backups are sealed under the new one. " +
			"With --json, the operation's event lines are printed on stdout, as rollback --json prints them.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			sp, opts, done, err := c.load(args[0], "")
			if err != nil {
				return err
			}
			defer done()
			opts.Stop = c.mutating(args[0])
			if asJSON {
				// Nothing asks: the stream needs no --yes.
				c.streamEvents(&opts)
			}
			res, err := stack.RotateSecrets(cmd.Context(), sp, opts)
			if err != nil {
				return err
			}
			if c.streaming {
				// The operation's end line said how it ended; its error
				// goes to stderr as well.
				return c.report(res, args[0])
			}
			return c.stateReport(res, fmt.Sprintf("re-sealed stack %s under secrets provider %s", sp.Stack, res.Secrets))
		},
	}
	rotate.Flags().BoolVar(&asJSON, "json", false, "stream the lifecycle events to stdout, one JSON object a line, as apply --json (docs/json.md); a failure is the stream's last line")
	c.lockTimeoutFlag(rotate)
	cmd.AddCommand(rotate)
	return cmd
}
