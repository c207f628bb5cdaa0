package main

import (
	"fmt"
	"io"
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"

	"github.com/bulwark-iac/bulwark/cmd/bulwark/internal/jsonview"
	"github.com/bulwark-iac/bulwark/core/pluginhost/grpcv1"
)

// Link-time overrides: make dist passes the release's (-X main.version=…
// -X main.commit=…), make build and make install git describe's and the
// checkout's commit. Everything else reads the build info: the module
// version when installed with `go install …@VERSION`, the VCS revision when
// built from a checkout with plain go build. They are never assigned at run
// time.
var (
	version string
	commit  string
)

// buildVersion is what `bulwark version` reports.
type buildVersion struct {
	FormatVersion string `json:"format_version"`
	// Version is the module version (v0.1.0 installed from a proxy, a
	// pseudo-version for a commit), or "devel" for a build from a checkout
	// the go command could not version.
	Version string `json:"version"`
	// Commit is the VCS revision, "" when the binary does not know it (go
	// install from a proxy of a tagged version records none).
	Commit     string `json:"commit"`
	CommitTime string `json:"commit_time"`
	// Modified says the checkout had uncommitted changes when it was built.
	Modified          bool   `json:"modified"`
	GoVersion         string `json:"go_version"`
	Platform          string `json:"platform"`
	ProviderProtocols []int  `json:"provider_protocols"`
}

// pseudoRev is the revision at the end of a pseudo-version
// (v0.0.0-20261201092755-815311207daa).
var pseudoRev = regexp.MustCompile(`^v[0-9]+\.[0-9]+\.[0-9]+-(?:[0-9A-Za-z.]+\.)?(?:0\.)?[0-9]{14}-([0-9a-f]{12})(?:\+incompatible)?$`)

// readVersion turns the build info (nil when the binary has none) and the
// link-time overrides into what `bulwark version` prints.
func readVersion(bi *debug.BuildInfo, ldVersion, ldCommit string) buildVersion {
	v := buildVersion{
		FormatVersion:     jsonview.FormatVersion,
		Version:           "devel",
		GoVersion:         runtime.Version(),
		Platform:          runtime.GOOS + "/" + runtime.GOARCH,
		ProviderProtocols: []int{grpcv1.ProtocolVersion},
	}
	if bi != nil {
		if bi.GoVersion != "" {
			v.GoVersion = bi.GoVersion
		}
		if mv := bi.Main.Version; mv != "" && mv != "(devel)" {
			v.Version = mv
		}
		var goos, goarch string
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				v.Commit = s.Value
			case "vcs.time":
				v.CommitTime = s.Value
			case "vcs.modified":
				v.Modified = s.Value == "true"
			case "GOOS":
				goos = s.Value
			case "GOARCH":
				goarch = s.Value
			}
		}
		if goos != "" && goarch != "" {
			v.Platform = goos + "/" + goarch
		}
		if v.Commit == "" {
			if m := pseudoRev.FindStringSubmatch(strings.TrimSuffix(v.Version, "+dirty")); m != nil {
				v.Commit = m[1]
			}
		}
	}
	if ldVersion != "" {
		v.Version = ldVersion
	}
	if ldCommit != "" {
		v.Commit = ldCommit
	}
	return v
}

// writeText prints v for a person.
func (v buildVersion) writeText(w io.Writer) error {
	commit := v.Commit
	if commit == "" {
		commit = "unknown"
	}
	var notes []string
	if v.CommitTime != "" {
		notes = append(notes, v.CommitTime)
	}
	if v.Modified {
		notes = append(notes, "modified")
	}
	if len(notes) > 0 {
		commit += " (" + strings.Join(notes, ", ") + ")"
	}
	protocols := make([]string, len(v.ProviderProtocols))
	for i, p := range v.ProviderProtocols {
		protocols[i] = fmt.Sprint(p)
	}
	_, err := fmt.Fprintf(w, "bulwark %s\n  commit:            %s\n  go:                %s %s\n  provider protocol: %s\n",
		v.Version, commit, v.GoVersion, v.Platform, strings.Join(protocols, ", "))
	return err
}

// writeJSON prints v as one JSON object (docs: `bulwark version --json`).
func (v buildVersion) writeJSON(w io.Writer) error {
	return jsonview.Write(w, v)
}

func (c *cli) versionCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print bulwark's version, commit and Go version, and the provider protocol it speaks",
		Long: "Print bulwark's version, commit and Go version, and the provider protocol it speaks.\n\n" +
			"The version is the module version when bulwark was installed with\n" +
			"`go install github.com/bulwark-iac/bulwark/cmd/bulwark@VERSION`; built from a\n" +
			"checkout with make build, it is what `git describe --tags --always --dirty` says\n" +
			"of the checkout, and the commit is the checkout's revision.",
		Example: "  bulwark version\n  bulwark version --json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			bi, _ := debug.ReadBuildInfo()
			v := readVersion(bi, version, commit)
			if asJSON {
				return v.writeJSON(c.stdout)
			}
			return v.writeText(c.stdout)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the version as JSON")
	return cmd
}
