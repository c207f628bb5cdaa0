package tfinstall

import (
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/net/idna"
)

// DefaultHost is the registry host of a source address that names none.
const DefaultHost = "registry.terraform.io"

// Source is a provider's source address, normalised as Terraform normalises
// it (lowercase, IDNA folded, port 443 dropped), so two spellings of one
// provider compare equal.
type Source struct {
	Host      string // registry.terraform.io, or e.g. example.com:8443
	Namespace string
	Type      string
}

// String is the fully qualified address, HOST/NAMESPACE/TYPE: the key in
// bulwark.lock and in Terraform's lock file.
func (s Source) String() string { return s.Host + "/" + s.Namespace + "/" + s.Type }

// ExeName is the file name prefix of the provider's executable,
// terraform-provider-TYPE.
func (s Source) ExeName() string { return exePrefix + s.Type }

const exePrefix = "terraform-provider-"

// SourceError says why a source address was refused.
type SourceError struct {
	Given  string
	Reason string
}

func (e *SourceError) Error() string {
	return fmt.Sprintf("provider source %q: %s", e.Given, e.Reason)
}

// ParseSource parses [HOST/]NAMESPACE/TYPE. A bare TYPE is refused: in a
// bulwark spec a one-word source names one of bulwark's own plugins.
func ParseSource(given string) (Source, error) {
	bad := func(format string, args ...any) (Source, error) {
		return Source{}, &SourceError{Given: given, Reason: fmt.Sprintf(format, args...)}
	}
	parts := strings.Split(given, "/")
	var s Source
	switch len(parts) {
	case 2:
		s.Host = DefaultHost
	case 3:
		h, err := normaliseHost(parts[0])
		if err != nil {
			return bad("invalid hostname %q: %v", parts[0], err)
		}
		s.Host = h
		parts = parts[1:]
	default:
		return bad("want [HOST/]NAMESPACE/TYPE, e.g. hashicorp/random")
	}
	ns, err := parsePart(parts[0])
	if err != nil {
		return bad("invalid namespace %q: %v", parts[0], err)
	}
	typ, err := parsePart(parts[1])
	if err != nil {
		return bad("invalid type %q: %v", parts[1], err)
	}
	// Terraform refuses the prefix the executables and repositories carry;
	// so does bulwark, with the same hint.
	if rest, ok := strings.CutPrefix(typ, exePrefix); ok {
		if _, err := parsePart(rest); err == nil && rest != "" {
			return bad("the type may not start with %q (that prefix names executables and repositories): did you mean %q?", exePrefix, s.Host+"/"+ns+"/"+rest)
		}
	}
	if strings.HasPrefix(typ, "terraform-") {
		return bad("the type may not start with \"terraform-\"")
	}
	s.Namespace, s.Type = ns, typ
	return s, nil
}

// parsePart checks and folds a namespace or a type as Terraform's
// ParseProviderPart does: letters, digits and single dashes, IDNA folded.
func parsePart(given string) (string, error) {
	switch {
	case given == "":
		return "", fmt.Errorf("must have at least one character")
	case strings.ContainsRune(given, '.'):
		return "", fmt.Errorf("dots are not allowed")
	case strings.Contains(given, "--"):
		return "", fmt.Errorf("cannot use multiple consecutive dashes")
	case strings.ContainsAny(given, "_ \\:@"):
		return "", fmt.Errorf("must contain only letters, digits, and dashes")
	}
	out, err := idna.Lookup.ToUnicode(given)
	if err != nil {
		return "", fmt.Errorf("must contain only letters, digits, and dashes, and may not use leading or trailing dashes")
	}
	return out, nil
}

// normaliseHost folds a hostname as Terraform's svchost.ForComparison does:
// IDNA lookup rules (lowercase), an optional port, :443 dropped.
func normaliseHost(given string) (string, error) {
	host, port, hasPort := strings.Cut(given, ":")
	if host == "" {
		return "", fmt.Errorf("empty hostname")
	}
	if hasPort {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 || port != strconv.Itoa(n) {
			return "", fmt.Errorf("invalid port %q", port)
		}
		if n == 443 {
			hasPort = false
		}
	}
	h, err := idna.Lookup.ToUnicode(host)
	if err != nil {
		return "", err
	}
	if strings.ContainsAny(h, "/\\@ ") || strings.HasPrefix(h, ".") || strings.HasSuffix(h, ".") {
		return "", fmt.Errorf("not a hostname")
	}
	if hasPort {
		h += ":" + port
	}
	return h, nil
}

// ParseRequirement parses SOURCE[@CONSTRAINT], the form `bulwark providers
// install` takes on its command line ("hashicorp/random@~> 3.6").
func ParseRequirement(arg string) (Source, Constraints, error) {
	src, cons, _ := strings.Cut(arg, "@")
	s, err := ParseSource(src)
	if err != nil {
		return Source{}, Constraints{}, err
	}
	c, err := ParseConstraints(cons)
	if err != nil {
		return Source{}, Constraints{}, err
	}
	return s, c, nil
}
