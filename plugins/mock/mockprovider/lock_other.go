//go:build !unix

package mockprovider

// lockWorld is a no-op where flock is unavailable: one process per world
// at a time is then assumed.
func lockWorld(string) (unlock func(), err error) { return func() {}, nil }
