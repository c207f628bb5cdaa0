package main

import (
	"fmt"
	"net"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/bulwark-iac/bulwark/backends"
	"github.com/bulwark-iac/bulwark/core/graphsvg"
	"github.com/bulwark-iac/bulwark/core/webview"
)

// envUIToken gives bulwark ui its token without putting it on the command
// line (where every user of the machine sees it).
const envUIToken = "BULWARK_UI_TOKEN"

func (c *cli) uiCmd() *cobra.Command {
	var listen, token string
	var planFiles []string
	cmd := &cobra.Command{
		Use:   "ui",
		Short: "Serve a read-only web view of the stacks on the backend (--state): resources, history, operation timelines",
		Long: "Serve a read-only web view of the stacks on the backend --state names: each stack's resources with their\n" +
			"protection and ownership, its history (operations with their outcome and exit code, revisions with their\n" +
			"variables masked), and each operation's steps as a timeline; with --plan FILE (repeatable), a saved plan\n" +
			"as the review page show FILE --html writes. Every page is also JSON under /api/.\n" +
			"It never takes a lock and never writes. It listens on 127.0.0.1 by default; any other address needs a\n" +
			"token (--token, or one is made and printed), which every request must carry: the header\n" +
			"`Authorization: Bearer TOKEN` or `?token=TOKEN`. Ctrl-C stops it.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if token == "" {
				// Kept out of the process list, where --token shows.
				token = os.Getenv(envUIToken)
			}
			loopback := webview.LoopbackAddr(listen)
			made := false
			if !loopback && token == "" {
				var err error
				if token, err = webview.NewToken(); err != nil {
					return err
				}
				made = true
			}
			// Each saved plan is opened once, before anything is served,
			// as show FILE --json opens it: one that cannot be is refused.
			var plans []webview.SavedPlan
			for _, p := range planFiles {
				sp, err := openSavedPlan(p)
				if err != nil {
					return fmt.Errorf("--plan: %w", err) // its errors name the file
				}
				plans = append(plans, sp)
			}
			// Every page opens the backends of the stacks it reads: on
			// PostgreSQL they share the command's pool (c.backends), not
			// a new server session each.
			opts := c.stateOptions()
			opts.Redactor = c.red
			opts.Defaults()
			where := "file://" + opts.StateDir
			if abs, err := filepath.Abs(opts.StateDir); err == nil {
				where = "file://" + abs
			}
			if opts.StateURL != "" {
				where = backends.Redact(opts.StateURL) // a password in the URL is never shown
			}
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return fmt.Errorf("--listen %s: %w", listen, err)
			}
			h := webview.New(webview.NewSource(opts), webview.Options{Token: token, Redactor: c.red, Location: c.red.Redact(where), Plans: plans})
			url := "http://" + ln.Addr().String() + "/"
			fmt.Fprintf(c.stdout, "bulwark: serving a read-only view of %s at %s (Ctrl-C stops it)\n", c.red.Redact(where), url)
			for i, p := range planFiles {
				fmt.Fprintf(c.red.Writer(c.stdout), "bulwark: saved plan %s at %splans/%d\n", p, url, i+1)
			}
			switch {
			case made:
				fmt.Fprintf(c.stdout, "bulwark: %s is not loopback, so every request needs this token (made for this run): %s\n", listen, token)
				fmt.Fprintf(c.stdout, "bulwark: open %s?token=%s or send the header Authorization: Bearer TOKEN\n", url, token)
			case token != "":
				fmt.Fprintf(c.stdout, "bulwark: every request needs the token given (--token or $%s): Authorization: Bearer TOKEN, or ?token=TOKEN\n", envUIToken)
			default:
				fmt.Fprintf(c.stdout, "bulwark: loopback only, no token; any other --listen address needs one\n")
			}
			// The graph pages run bulwark-graphviz beside bulwark; a
			// bulwark installed without it serves every other page, and
			// says so now rather than on the first graph asked for.
			if _, err := graphsvg.Program(); err != nil {
				fmt.Fprintf(c.stderr, "bulwark: warning: %v; until then the graph pages show this error, and every other page works\n", err)
			}
			return webview.Serve(cmd.Context(), ln, h)
		},
	}
	cmd.Flags().StringVar(&listen, "listen", "127.0.0.1:8080", "serve on `ADDR`, HOST:PORT (port 0: any free one, printed); an address beyond loopback needs a token")
	cmd.Flags().StringArrayVar(&planFiles, "plan", nil, "also serve the saved plan `FILE` (bulwark plan --out) as a review page, at /plans/N in the order given; repeatable")
	cmd.Flags().StringVar(&token, "token", "", "require `TOKEN` on every request (default $"+envUIToken+"; made and printed when --listen is not loopback and none is given)")
	return cmd
}
