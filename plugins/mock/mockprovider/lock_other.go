//go:build !unix && !windows

package mockprovider

// worldLock is a no-op where flock is unavailable: one process per world
// at a time is then assumed.
type worldLock struct{}

func (*worldLock) lock(string) (unlock func(), err error) { return func() {}, nil }

func (*worldLock) close() {}
