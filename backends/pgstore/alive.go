package pgstore

import "github.com/bulwark-iac/bulwark/core/pidcheck"

// alive reports whether process pid of this host runs (when that cannot be
// told, it says yes: a Lock then fails at once, naming the holder, rather
// than waiting for it).
func alive(pid int) bool { return !pidcheck.Gone(pid) }
