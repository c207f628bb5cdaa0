// Command bulwark-release checks and prepares bulwark's modules for
// installing from a module proxy. Run it from the repository (the Makefile's
// check-tidy, tidy, set-version and file-proxy targets do):
//
//	bulwark-release check             no replace in a published go.mod, one sibling version, `go mod tidy` changes nothing
//	bulwark-release tidy              run `go mod tidy` on every module (workspace semantics) and write the result
//	bulwark-release set-version VER   require the siblings at VER everywhere and point go.work's replaces at it
//	bulwark-release proxy DIR         write a file module proxy of the working tree (GOPROXY=file://DIR)
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"time"

	"github.com/bulwark-iac/bulwark/tools/release"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "bulwark-release:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("bulwark-release", flag.ContinueOnError)
	root := fs.String("root", ".", "the repository's root folder")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return errors.New("usage: bulwark-release [-root DIR] check | tidy | set-version VERSION | proxy DIR")
	}
	abs, err := filepath.Abs(*root)
	if err != nil {
		return err
	}
	mods, err := release.Modules(ctx, abs)
	if err != nil {
		return err
	}
	switch cmd, rest := fs.Arg(0), fs.Args()[1:]; cmd {
	case "check":
		version, problems := release.Problems(mods)
		failed := len(problems) > 0
		for _, p := range problems {
			fmt.Fprintln(os.Stderr, p)
		}
		for _, m := range mods {
			start := time.Now()
			diff, err := release.Tidy(ctx, abs, mods, m, os.Environ(), false)
			if err != nil {
				return err
			}
			state := "tidy"
			if diff != "" {
				state, failed = "NOT TIDY", true
				fmt.Fprint(os.Stderr, diff)
			}
			fmt.Printf("%-24s %s (%.1fs)\n", m.Dir, state, time.Since(start).Seconds())
		}
		if failed {
			return errors.New("modules not ready to install from a proxy: fix the above (`make tidy` runs go mod tidy the workspace's way)")
		}
		fmt.Printf("%d modules tidy; the published ones replace nothing and require each other at %s\n", len(mods), version)
		return nil
	case "tidy":
		for _, m := range mods {
			if _, err := release.Tidy(ctx, abs, mods, m, os.Environ(), true); err != nil {
				return err
			}
			fmt.Println("tidied", m.Dir)
		}
		return nil
	case "set-version":
		if len(rest) != 1 {
			return errors.New("usage: bulwark-release set-version VERSION")
		}
		return release.SetVersion(abs, mods, rest[0])
	case "proxy":
		if len(rest) != 1 {
			return errors.New("usage: bulwark-release proxy DIR")
		}
		version, problems := release.Problems(mods)
		if len(problems) > 0 {
			return errors.New(strings.Join(problems, "\n"))
		}
		if err := release.BuildProxy(ctx, abs, mods, version, rest[0], time.Now()); err != nil {
			return err
		}
		fmt.Printf("GOPROXY=file://%s serves bulwark's published modules at %s\n", rest[0], version)
		return nil
	default:
		return fmt.Errorf("unknown command %q", cmd)
	}
}
