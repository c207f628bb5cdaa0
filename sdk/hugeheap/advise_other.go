//go:build !linux

package hugeheap

// advise does nothing off Linux.
func advise([]byte) bool { return false }
