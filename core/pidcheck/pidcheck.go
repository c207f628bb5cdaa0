// Package pidcheck tells whether a process of this machine still runs, the
// question a lock record or a leftover folder named by a pid asks, on every
// platform bulwark builds for.
package pidcheck

// Gone reports whether no process with this pid runs on this machine. It is
// false when that cannot be told (a pid of 0 or less, a process of another
// user that cannot be queried counts as running): callers only clean up
// after a process known to be gone.
func Gone(pid int) bool {
	if pid <= 0 {
		return false
	}
	return gone(pid)
}
