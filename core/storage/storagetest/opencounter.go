package storagetest

import (
	"context"
	"sync/atomic"

	"github.com/bulwark-iac/bulwark/core/storage"
)

// OpenCounter is a storage.Opener (its Open method) for the tests of what
// opens backends: it opens them with open and counts the opens and the
// Closes they get, so that a test can say how many a command made (on
// PostgreSQL each is a server session).
type OpenCounter struct {
	open          func(storage.Options) storage.Backend
	opens, closes atomic.Int32
}

// NewOpenCounter counts the backends open makes.
func NewOpenCounter(open func(storage.Options) storage.Backend) *OpenCounter {
	return &OpenCounter{open: open}
}

// Open opens a backend for so, counted; the URL is not looked at.
func (c *OpenCounter) Open(_ context.Context, _ string, so storage.Options) (storage.Backend, error) {
	c.opens.Add(1)
	return countedBackend{c.open(so), &c.closes}, nil
}

// Counts are the opens and the Closes since the last Reset.
func (c *OpenCounter) Counts() (opens, closes int) {
	return int(c.opens.Load()), int(c.closes.Load())
}

// Reset starts the counts again.
func (c *OpenCounter) Reset() {
	c.opens.Store(0)
	c.closes.Store(0)
}

// countedBackend counts its Closes.
type countedBackend struct {
	storage.Backend
	closes *atomic.Int32
}

func (b countedBackend) Close() error {
	b.closes.Add(1)
	return b.Backend.Close()
}
