package tfinstall

import (
	"fmt"
	"runtime"
	"strings"
)

// Platform is an OS and an architecture as Terraform names them in folder
// and file names: linux_amd64.
type Platform struct {
	OS   string
	Arch string
}

// CurrentPlatform is the platform bulwark runs on.
func CurrentPlatform() Platform { return Platform{OS: runtime.GOOS, Arch: runtime.GOARCH} }

func (p Platform) String() string { return p.OS + "_" + p.Arch }

// ParsePlatform parses OS_ARCH.
func ParsePlatform(s string) (Platform, error) {
	os, arch, ok := strings.Cut(s, "_")
	if !ok || os == "" || arch == "" || strings.ContainsAny(s, "/\\ ") {
		return Platform{}, fmt.Errorf("platform %q: want OS_ARCH, e.g. linux_amd64", s)
	}
	return Platform{OS: os, Arch: arch}, nil
}
