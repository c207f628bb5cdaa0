package tfinstall

import (
	"fmt"
	"slices"
	"strings"

	"github.com/hashicorp/go-version"
)

// Constraints is a version constraint as Terraform writes it: "~> 3.6",
// ">= 1.0, < 2.0", "= 1.2.3", "!= 1.4.0". The zero value allows every
// version that is not a pre-release.
type Constraints struct {
	text string
	c    version.Constraints
}

// ParseConstraints parses a constraint; "" allows any version.
func ParseConstraints(text string) (Constraints, error) {
	text = strings.TrimSpace(text)
	if text == "" {
		return Constraints{}, nil
	}
	c, err := version.NewConstraint(text)
	if err != nil {
		return Constraints{}, fmt.Errorf("version constraint %q: %w (write e.g. \"~> 3.6\", \">= 1.0, < 2.0\" or \"= 1.2.3\")", text, err)
	}
	return Constraints{text: text, c: c}, nil
}

// String is the constraint as given ("" for any version).
func (c Constraints) String() string { return c.text }

// Allows reports whether version v (e.g. "3.6.3") satisfies c. A
// pre-release is allowed only by a constraint that names it, as in
// Terraform.
func (c Constraints) Allows(v string) bool {
	ver, err := version.NewSemver(v)
	if err != nil {
		return false
	}
	if len(c.c) == 0 {
		return ver.Prerelease() == ""
	}
	return c.c.Check(ver)
}

// Newest returns the newest of versions that c allows, and false when none
// does. Versions that do not parse are skipped.
func (c Constraints) Newest(versions []string) (string, bool) {
	var best *version.Version
	var bestText string
	for _, v := range versions {
		ver, err := version.NewSemver(v)
		if err != nil || !c.Allows(v) {
			continue
		}
		if best == nil || ver.GreaterThan(best) {
			best, bestText = ver, v
		}
	}
	return bestText, best != nil
}

// canonicalVersion returns v as Terraform writes it in lock files
// ("1.2.3"), or false when it is no version.
func canonicalVersion(v string) (string, bool) {
	ver, err := version.NewSemver(v)
	if err != nil {
		return "", false
	}
	return ver.String(), true
}

// sortVersions sorts versions newest first; those that do not parse last.
func sortVersions(vs []string) {
	slices.SortFunc(vs, func(a, b string) int {
		va, ea := version.NewSemver(a)
		vb, eb := version.NewSemver(b)
		switch {
		case ea != nil && eb != nil:
			return strings.Compare(a, b)
		case ea != nil:
			return 1
		case eb != nil:
			return -1
		}
		return vb.Compare(va)
	})
}
