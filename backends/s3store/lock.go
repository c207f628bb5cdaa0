package s3store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/bulwark-iac/bulwark/core/journal"
	"github.com/bulwark-iac/bulwark/core/pidcheck"
	"github.com/bulwark-iac/bulwark/core/storage"
	"github.com/bulwark-iac/bulwark/core/storage/remote"
)

// lockRecord is lock.json.
type lockRecord struct {
	Format int            `json:"format"`
	Holder storage.Holder `json:"holder"` // Until: the lease's end
	Token  string         `json:"token"`
	Proc   proc           `json:"proc,omitzero"`
	// Released: its holder gave the lock up. Release overwrites the
	// record (If-Match on its own ETag) rather than deleting it: a DELETE's
	// condition is not honoured by every S3-compatible server (MinIO was
	// seen to delete on a wrong If-Match), and a holder that was displaced
	// without knowing it would then delete its successor's lock. A
	// released record is free: Lock takes it with If-Match, as no one's.
	Released bool `json:"released,omitempty"`
}

// proc identifies a process on its machine: the kernel's boot id, the pid
// namespace and the process's start time (clock ticks since boot), so a pid
// reused by another process is not taken for the holder. Empty where /proc
// does not say (not Linux).
type proc struct {
	BootID string `json:"boot_id,omitempty"`
	PIDNS  string `json:"pid_ns,omitempty"`
	Start  uint64 `json:"start,omitempty"`
}

// self is this process's identity.
func self() proc {
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return proc{}
	}
	ns, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return proc{}
	}
	start, ok := startTime(os.Getpid())
	if !ok {
		return proc{}
	}
	return proc{BootID: strings.TrimSpace(string(boot)), PIDNS: ns, Start: start}
}

// startTime is field 22 of /proc/PID/stat.
func startTime(pid int) (uint64, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return 0, false
	}
	v, err := strconv.ParseUint(f[19], 10, 64)
	return v, err == nil
}

// deadHere reports whether lr's holder is a process of this machine and pid
// namespace that no longer runs. false when that cannot be known.
func deadHere(lr *lockRecord) bool {
	me := self()
	p := lr.Proc
	if me.BootID == "" || p.BootID != me.BootID || p.PIDNS != me.PIDNS || lr.Holder.PID <= 0 || p.Start == 0 {
		return false
	}
	if pidcheck.Gone(lr.Holder.PID) {
		return true
	}
	start, ok := startTime(lr.Holder.PID)
	return ok && start != p.Start // the pid was reused
}

// stale says why lr no longer holds the lock ("" when it does).
func (b *client) stale(lr *lockRecord) string {
	switch {
	case deadHere(lr):
		return "its process no longer runs"
	case !lr.Holder.Until.IsZero() && b.now().After(lr.Holder.Until):
		return "its lease ran out at " + lr.Holder.Until.UTC().Format(time.RFC3339)
	}
	return ""
}

func (b *client) readLock(ctx context.Context) (*lockRecord, string, error) {
	o, err := b.get(ctx, lockKey)
	if err != nil || o == nil {
		return nil, "", err
	}
	var lr lockRecord
	if err := json.Unmarshal(o.body, &lr); err != nil {
		// Unreadable: held by something that writes no record bulwark
		// knows; never taken over by guess.
		return &lockRecord{}, o.etag, nil
	}
	return &lr, o.etag, nil
}

func newToken() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b[:])
}

// Lock takes the stack's lock: creates lock.json with If-None-Match: *, or
// takes over a stale one with If-Match on the ETag it read, then fences any
// writer the takeover displaced.
func (b *client) Lock(ctx context.Context, h storage.Holder) (storage.Writer, error) {
	h = storage.HolderDefaults(h, b.now())
	lr := &lockRecord{Format: format, Holder: h, Token: newToken(), Proc: self()}
	var stale *storage.Holder
	var why string
	var etag string
	for attempt := 0; ; attempt++ {
		if attempt > 5 {
			return nil, b.wrap("lock", errors.New("the lock object kept changing under this process"))
		}
		lr.Holder.Until = b.now().Add(b.lease).UTC()
		body, err := json.Marshal(lr)
		if err != nil {
			return nil, b.wrap("lock", fmt.Errorf("encode the lock record: %w", err))
		}
		etag, err = b.put(ctx, lockKey, body, cond{ifNoneMatch: true}, nil)
		if err == nil {
			break
		}
		if !lostRace(err) {
			return nil, b.wrap("lock", err)
		}
		cur, curTag, err := b.readLock(ctx)
		if err != nil {
			return nil, err
		}
		if cur == nil {
			continue // removed meanwhile
		}
		why = ""
		if !cur.Released {
			why = b.stale(cur)
		}
		if why == "" && !cur.Released {
			var named *storage.Holder
			if cur.Holder.Op != "" || cur.Holder.PID != 0 {
				hh := cur.Holder
				named = &hh
			}
			return nil, &storage.LockedError{Location: b.loc, Holder: named}
		}
		lr.Holder.Until = b.now().Add(b.lease).UTC()
		if body, err = json.Marshal(lr); err != nil {
			return nil, b.wrap("lock", fmt.Errorf("encode the lock record: %w", err))
		}
		etag, err = b.put(ctx, lockKey, body, cond{ifMatch: curTag}, nil)
		if err == nil {
			if !cur.Released {
				// Taken over: the holder may still be alive (paused, its
				// clock behind), and is fenced below.
				old := cur.Holder
				stale = &old
			}
			break
		}
		if !lostRace(err) {
			return nil, b.wrap("lock", err)
		}
		// Another taker was first: look again.
	}
	var w *writer
	var pw *remote.Writer
	for attempt := 0; ; attempt++ {
		w = b.newWriter(lr, etag, stale)
		fail := func(err error) (storage.Writer, error) {
			w.release(context.WithoutCancel(ctx))
			return nil, err
		}
		l, err := b.loadOpen(ctx)
		if err != nil {
			return fail(err)
		}
		w.init(l)
		if l.id == nil {
			// The stack's first lock: its lineage is stored now, so what
			// the first operation journals and the keys it issues carry it.
			if err := w.writeIdentity(ctx, w.lineage); err != nil {
				return fail(err)
			}
		}
		pw = w.public()
		if stale == nil {
			break
		}
		// The takeover's record is the fence: the next WAL object is this
		// writer's, so the displaced holder's next write finds its key
		// taken.
		op := h.Op
		if op == "" {
			op = "lock"
		}
		rec := journal.Record{Op: op, Kind: kindLock, Status: "taken_over",
			Error: fmt.Sprintf("took over the lock of %s: %s", stale, why)}
		_, err = pw.Commit(ctx, storage.Commit{Records: []journal.Record{rec}})
		if err == nil {
			break
		}
		if errors.Is(err, storage.ErrLost) && attempt < 3 {
			// The displaced holder got one last write in first: if the lock
			// is still this one's, read what it wrote and fence after it.
			if cur, _, rerr := b.readLock(ctx); rerr == nil && cur != nil && cur.Token == lr.Token {
				continue
			}
		}
		return fail(err)
	}
	w.mu.Lock()
	w.renewing = true
	legacy := w.legacy
	w.mu.Unlock()
	go w.renew()
	if legacy {
		if err := w.upgrade(ctx); err != nil {
			w.release(context.WithoutCancel(ctx))
			return nil, err
		}
	}
	return pw, nil
}

// renew renews the lease every lease/3 until Release. A renewal that finds
// another holder's lock, or none, or the lease run out without a renewal
// getting through, loses the lock.
func (w *writer) renew() {
	defer close(w.done)
	every := w.b.lease / 3
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-t.C:
		}
		w.mu.Lock()
		lr := *w.lr
		etag := w.etag
		w.mu.Unlock()
		lr.Holder.Until = w.b.now().Add(w.b.lease).UTC()
		body, err := json.Marshal(&lr)
		var tag string
		if err == nil {
			ctx, cancel := context.WithTimeout(context.Background(), every)
			tag, err = w.b.put(ctx, lockKey, body, cond{ifMatch: etag}, nil)
			cancel()
		} else {
			err = fmt.Errorf("encode the lock record: %w", err)
		}
		why := fmt.Errorf("the lock was taken over or removed (%s)", apiCode(err))
		if err != nil && lostRace(err) {
			// A renewal whose answer was lost (a timeout) may have landed:
			// the lock is still this writer's if it carries its token.
			rctx, rcancel := context.WithTimeout(context.Background(), every)
			cur, curTag, rerr := w.b.readLock(rctx)
			rcancel()
			switch {
			case rerr == nil && cur != nil && cur.Token == lr.Token:
				w.mu.Lock()
				w.etag = curTag
				w.mu.Unlock()
				continue
			case rerr == nil && cur != nil:
				why = fmt.Errorf("the lock was taken over by %s", cur.Holder)
			case rerr == nil:
				why = errors.New("the lock object was removed by someone else")
			}
		}
		var lose error
		w.mu.Lock()
		switch {
		case err == nil:
			w.etag, w.lr.Holder.Until = tag, lr.Holder.Until
		case lostRace(err):
			lose = why
		case w.b.now().After(w.lr.Holder.Until):
			lose = fmt.Errorf("the lease ran out without a renewal getting through: %w", err)
		}
		w.mu.Unlock()
		// Marked outside w.mu: the Hold asks expired, which takes it.
		if lose != nil {
			_ = w.hold.Lose(lose)
		}
		if w.hold.IsLost() {
			return
		}
	}
}

// release stops the renewals and marks lock.json released if it is still
// this writer's: read it, and only when it carries this writer's token,
// overwrite it with If-Match on the ETag read. It is never deleted: a
// DELETE's If-Match is not honoured everywhere, and nothing here rests on
// one. A lock taken over meanwhile (412 or 404 on the PUT, or another
// token read) is left as it is.
func (w *writer) release(ctx context.Context) error {
	if !w.hold.MarkReleased() {
		return nil
	}
	return w.unlock(ctx)
}

// unlock is release once the Hold is marked released.
func (w *writer) unlock(ctx context.Context) error {
	lost := w.hold.IsLost()
	close(w.stop)
	w.mu.Lock()
	renewing := w.renewing
	w.mu.Unlock()
	if renewing {
		<-w.done
	}
	if lost {
		return nil // not ours any more: nothing to give up
	}
	cur, curTag, err := w.b.readLock(ctx)
	if err != nil {
		return err
	}
	if cur == nil || cur.Token != w.lr.Token || cur.Released {
		return nil // another holder's now (or none): leave it
	}
	rel := *cur
	rel.Released = true
	rel.Holder.Until = w.b.now().UTC()
	body, err := json.Marshal(&rel)
	if err != nil {
		return w.b.wrap("release the lock", fmt.Errorf("encode the lock record: %w", err))
	}
	if _, err := w.b.put(ctx, lockKey, body, cond{ifMatch: curTag}, nil); err != nil && !lostRace(err) {
		return w.b.wrap("release the lock", err)
	}
	return nil
}

// held fails with ErrLost, having written nothing, unless lock.json still
// carries this writer's token (and is not released): the check made
// before a write that no WAL sequence number fences (a revision's body,
// a backup, the snapshot, stack.json), so a holder displaced without
// knowing it (a pause, a clock behind the taker's) writes none of them.
func (w *writer) held(ctx context.Context) error {
	if err := w.hold.Usable(); err != nil {
		return err
	}
	cur, _, err := w.b.readLock(ctx)
	if err != nil {
		return err
	}
	switch {
	case cur == nil:
		return w.hold.Lose(errors.New("the lock object was removed by someone else"))
	case cur.Token != w.lr.Token:
		return w.hold.Lose(fmt.Errorf("the lock was taken over by %s", cur.Holder))
	case cur.Released:
		return w.hold.Lose(errors.New("the lock was released"))
	}
	return w.hold.Usable()
}
