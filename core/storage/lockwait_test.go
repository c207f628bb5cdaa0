package storage_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bulwark-iac/bulwark/core/storage"
)

// lockingBackend's Lock fails with a *LockedError while held says so (its
// held'th try after which it frees), or with err.
type lockingBackend struct {
	storage.Backend
	mu    sync.Mutex
	held  int // tries that find the lock held (-1: always)
	tries int
	err   error
}

func (b *lockingBackend) Location() string { return "fake://locking" }

func (b *lockingBackend) Lock(ctx context.Context, h storage.Holder) (storage.Writer, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.tries++
	if b.err != nil {
		return nil, b.err
	}
	if b.held < 0 || b.tries <= b.held {
		return nil, &storage.LockedError{Location: "fake://locking", Holder: &storage.Holder{Op: "op_HOLDER", PID: 7, Host: "elsewhere"}}
	}
	return fakeWriter{}, nil
}

type fakeWriter struct{ storage.Writer }

func TestLockWait(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	other := errors.New("unreachable")
	tests := []struct {
		name      string
		ctx       context.Context
		b         *lockingBackend
		timeout   time.Duration
		wantTries int // 0: any number above 1
		wantErr   string
		waited    bool
	}{
		{name: "free at once", b: &lockingBackend{}, timeout: time.Minute, wantTries: 1},
		{name: "no timeout: fails at once", b: &lockingBackend{held: -1}, wantTries: 1, wantErr: "stack is locked by operation op_HOLDER"},
		{name: "freed during the wait", b: &lockingBackend{held: 2}, timeout: time.Minute, wantTries: 3, waited: true},
		{name: "the timeout passes", b: &lockingBackend{held: -1}, timeout: 250 * time.Millisecond, wantErr: "still held after waiting 250ms", waited: true},
		{name: "interrupted", ctx: cancelled, b: &lockingBackend{held: -1}, timeout: time.Minute, wantTries: 1, wantErr: "stopped waiting for it: context canceled", waited: true},
		{name: "another error is not waited on", b: &lockingBackend{err: other}, timeout: time.Minute, wantTries: 1, wantErr: "unreachable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := tt.ctx
			if ctx == nil {
				ctx = context.Background()
			}
			var told []*storage.Holder
			w, err := storage.LockWait(ctx, tt.b, storage.Holder{Op: "op_ME"}, tt.timeout, func(h *storage.Holder) { told = append(told, h) })
			if tt.wantErr == "" {
				if err != nil || w == nil {
					t.Fatalf("LockWait: %v", err)
				}
			} else {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want one saying %q", err, tt.wantErr)
				}
				if tt.b.err == nil && !errors.Is(err, storage.ErrLocked) {
					t.Errorf("err %v is not ErrLocked (exit 4)", err)
				}
			}
			if tt.wantTries > 0 && tt.b.tries != tt.wantTries {
				t.Errorf("%d tries, want %d", tt.b.tries, tt.wantTries)
			}
			if tt.wantTries == 0 && tt.b.tries < 2 {
				t.Errorf("%d tries: it never tried again", tt.b.tries)
			}
			if tt.waited != (len(told) == 1) || (len(told) == 1 && (told[0] == nil || told[0].Op != "op_HOLDER")) {
				t.Errorf("waiting told %v, want once with the holder: %v", told, tt.waited)
			}
		})
	}
}
