package s3store

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/bulwark-iac/bulwark/core/storage"
)

// claimsLock is the claims lock of a prefix (storage.ClaimsLock): the lease
// object PREFIX/.claims/lock.json, of the same shape and rules as a stack's
// lock.json: created with If-None-Match: *, taken over (If-Match on the
// ETag read) only when released or stale (its lease run out, or its process
// gone from this machine), renewed every lease/3 with If-Match, released by
// being marked so (never deleted). A record that does not parse is never
// taken for free: it is held by something bulwark does not know. Held reads
// the object and finds this holder's token on it, so a holder whose lock
// was taken over records nothing.
type claimsLock struct {
	c     *client
	token string

	mu   sync.Mutex
	lr   lockRecord
	etag string
	lost error

	stop chan struct{}
	done chan struct{}
	once sync.Once
}

// ClaimsLock tries once to take the claims lock of the prefix rawURL names:
// held by another, a *storage.LockedError naming the holder (the caller
// waits and tries again).
func ClaimsLock(ctx context.Context, rawURL string, h storage.Holder) (storage.ClaimsLock, error) {
	bucket, prefix, s, err := ParseURL(rawURL)
	if err != nil {
		return nil, err
	}
	client, err := newClient(ctx, s)
	if err != nil {
		return nil, err
	}
	b, err := New(client, bucket, prefix, rawURL, s.Lease, storage.Options{Stack: storage.ClaimsName})
	if err != nil {
		return nil, err
	}
	return b.c.claims(ctx, h)
}

// ClaimsLock is the package's ClaimsLock on this backend's client and
// prefix (tests, a caller with its own client): b must be opened for the
// stack storage.ClaimsName.
func (b *Backend) ClaimsLock(ctx context.Context, h storage.Holder) (storage.ClaimsLock, error) {
	if b.c.opts.Stack != storage.ClaimsName {
		return nil, fmt.Errorf("s3 backend %s: the claims lock is taken through a backend opened for %s, not stack %s", b.c.loc, storage.ClaimsName, b.c.opts.Stack)
	}
	return b.c.claims(ctx, h)
}

func (c *client) claims(ctx context.Context, h storage.Holder) (storage.ClaimsLock, error) {
	h = storage.HolderDefaults(h, c.now())
	lr := lockRecord{Format: format, Holder: h, Token: newToken(), Proc: self()}
	lr.Holder.Until = c.now().Add(c.lease).UTC()
	body, err := json.Marshal(&lr)
	if err != nil {
		return nil, c.wrap("claims lock", err)
	}
	etag, err := c.put(ctx, lockKey, body, cond{ifNoneMatch: true}, nil)
	if err != nil {
		if !lostRace(err) {
			return nil, c.wrap("claims lock", err)
		}
		cur, curTag, rerr := c.readLock(ctx)
		if rerr != nil {
			return nil, c.wrap("claims lock", rerr)
		}
		locked := &storage.LockedError{Location: c.loc + " (claims lock)"}
		if cur == nil {
			return nil, locked // removed meanwhile: the caller tries again
		}
		if cur.Holder.Op != "" || cur.Holder.PID != 0 {
			hh := cur.Holder
			locked.Holder = &hh
		}
		if !cur.Released && c.stale(cur) == "" {
			return nil, locked
		}
		lr.Holder.Until = c.now().Add(c.lease).UTC()
		if body, err = json.Marshal(&lr); err != nil {
			return nil, c.wrap("claims lock", err)
		}
		if etag, err = c.put(ctx, lockKey, body, cond{ifMatch: curTag}, nil); err != nil {
			if lostRace(err) {
				return nil, locked // another taker was first
			}
			return nil, c.wrap("claims lock", err)
		}
	}
	l := &claimsLock{c: c, token: lr.Token, lr: lr, etag: etag, stop: make(chan struct{}), done: make(chan struct{})}
	go l.renew()
	return l, nil
}

// renew extends the lease every lease/3 with If-Match on the ETag of its
// last write, until Release; a renewal refused (taken over, removed) or a
// lease run out without one getting through loses the lock.
func (l *claimsLock) renew() {
	defer close(l.done)
	every := l.c.lease / 3
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
		}
		l.mu.Lock()
		lr, etag := l.lr, l.etag
		l.mu.Unlock()
		lr.Holder.Until = l.c.now().Add(l.c.lease).UTC()
		body, err := json.Marshal(&lr)
		var tag string
		if err == nil {
			ctx, cancel := context.WithTimeout(context.Background(), every)
			tag, err = l.c.put(ctx, lockKey, body, cond{ifMatch: etag}, nil)
			cancel()
		}
		l.mu.Lock()
		switch {
		case err == nil:
			l.etag, l.lr.Holder.Until = tag, lr.Holder.Until
		case lostRace(err):
			l.lost = fmt.Errorf("the claims lock was taken over or removed (%s)", apiCode(err))
		case l.c.now().After(l.lr.Holder.Until):
			l.lost = fmt.Errorf("the claims lock's lease ran out without a renewal getting through: %w", err)
		}
		lost := l.lost != nil
		l.mu.Unlock()
		if lost {
			return
		}
	}
}

// Held reads the lock object: it must carry this holder's token, not be
// released, and its lease not have run out.
func (l *claimsLock) Held(ctx context.Context) error {
	l.mu.Lock()
	lost, until := l.lost, l.lr.Holder.Until
	l.mu.Unlock()
	if lost != nil {
		return l.c.wrap("claims lock", fmt.Errorf("%w: %w", storage.ErrLost, lost))
	}
	if l.c.now().After(until) {
		return l.c.wrap("claims lock", fmt.Errorf("%w: its lease ran out", storage.ErrLost))
	}
	cur, _, err := l.c.readLock(ctx)
	switch {
	case err != nil:
		return l.c.wrap("claims lock", fmt.Errorf("%w: %w", storage.ErrLost, err))
	case cur == nil:
		return l.c.wrap("claims lock", fmt.Errorf("%w: the lock object was removed by someone else", storage.ErrLost))
	case cur.Token != l.token:
		return l.c.wrap("claims lock", fmt.Errorf("%w: it was taken over by %s", storage.ErrLost, cur.Holder))
	case cur.Released:
		return l.c.wrap("claims lock", fmt.Errorf("%w: it was released", storage.ErrLost))
	}
	return nil
}

// Release stops the renewals and marks the object released if it still
// carries this holder's token (If-Match on the ETag read); one taken over
// meanwhile is left as it is.
func (l *claimsLock) Release(ctx context.Context) error {
	var err error
	l.once.Do(func() {
		close(l.stop)
		<-l.done
		cur, curTag, rerr := l.c.readLock(ctx)
		if rerr != nil {
			err = l.c.wrap("release the claims lock", rerr)
			return
		}
		if cur == nil || cur.Token != l.token || cur.Released {
			return
		}
		rel := *cur
		rel.Released = true
		rel.Holder.Until = l.c.now().UTC()
		body, merr := json.Marshal(&rel)
		if merr != nil {
			err = l.c.wrap("release the claims lock", merr)
			return
		}
		if _, perr := l.c.put(ctx, lockKey, body, cond{ifMatch: curTag}, nil); perr != nil && !lostRace(perr) {
			err = l.c.wrap("release the claims lock", perr)
		}
	})
	return err
}
