package spec

import (
	"regexp"
	"sync"
)

// lazyRE is a regexp compiled the first time it is used rather than at the
// start of every command: each bounded repetition ({0,62}) in this
// package's patterns compiles to one state per repetition, and compiling
// them all at init was the largest package init of a bulwark command,
// mostly for patterns a spec without references, for_each keys, variables
// or outputs never uses.
type lazyRE func() *regexp.Regexp

// lazy returns the lazyRE of expr, which must compile (TestPatternsCompile
// compiles every one of the package's).
func lazy(expr string) lazyRE {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}

func (l lazyRE) MatchString(s string) bool              { return l().MatchString(s) }
func (l lazyRE) FindStringSubmatch(s string) []string   { return l().FindStringSubmatch(s) }
func (l lazyRE) FindStringSubmatchIndex(s string) []int { return l().FindStringSubmatchIndex(s) }
