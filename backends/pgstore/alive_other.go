//go:build !unix

package pgstore

// alive reports whether process pid of this host runs: elsewhere than on
// Unix it cannot tell, and says yes (a Lock then fails at once, naming the
// holder, rather than waiting for it).
func alive(pid int) bool { return true }
