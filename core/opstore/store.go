// Package opstore is an operation's one view of a stack's state and its
// one way to write it, under the stack's lock. Every write says when it
// happens: a step's changes are parked on its Stage (ForStep) and ride on
// that step's next journal record, in the same durable Commit; an
// operation's end's on its end record (AtEnd); what must be durable at once
// goes through WriteNow or MutateNow. The Store is the engine's Journal.
package opstore

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/bulwark-iac/bulwark/core/failpoint"
	"github.com/bulwark-iac/bulwark/core/journal"
	"github.com/bulwark-iac/bulwark/core/secrets"
	"github.com/bulwark-iac/bulwark/core/state"
	"github.com/bulwark-iac/bulwark/core/storage"
)

// Config is what a Store is given besides its backend and writer.
type Config struct {
	Failpoint *failpoint.Set
	Redactor  *secrets.Redactor
	// Warn is told, as one line for a person, what went wrong after a
	// commit was durable (nil: nobody).
	Warn func(string)
}

// New is the store of an operation that holds w, be's lock, over st, the
// state Load returned under it.
func New(be storage.Backend, w storage.Writer, st *state.State, cfg Config) *Store {
	return &Store{be: be, w: w, st: st, fp: cfg.Failpoint, red: cfg.Redactor, warn: cfg.Warn}
}

// SetSensitiveOf tells the store which attributes a resource's provider
// schema marks sensitive, once the providers are started: a resource put
// lists them (the backend seals them).
func (s *Store) SetSensitiveOf(fn func(*state.Resource) []string) { s.sensitiveOf = fn }

// SetSecrets has the next commit record cfg, a new stack's secrets
// provider, with it (before any value sealed under it is stored).
func (s *Store) SetSecrets(cfg *secrets.Config) {
	s.smu.Lock()
	defer s.smu.Unlock()
	s.secrets = cfg
}

// Writer is the lock's writer: for what is not a state change (backups,
// a checkpoint, the lock's release).
func (s *Store) Writer() storage.Writer { return s.w }

// Wrote reports whether anything was committed.
func (s *Store) Wrote() bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.wrote
}

// Store is a locked operation's one view of the stack's state, and its one
// way to write: every write is a storage Commit of journal records and the
// delta they belong to. The view is what was committed; a resource in it
// is never changed in place (a change puts a new one), so reading one
// resource, or a shallow copy of the whole, needs no deep copy.
type Store struct {
	be  storage.Backend
	w   storage.Writer
	fp  *failpoint.Set
	red *secrets.Redactor
	// warn is told, as one line for a person, what went wrong after a
	// commit was durable (nil: nobody).
	warn func(string)
	// sensitiveOf names the attributes a resource's provider schema marks
	// sensitive; a resource put lists them (the backend seals them).
	sensitiveOf func(*state.Resource) []string

	mu    sync.RWMutex
	st    *state.State
	wrote bool // something was committed
	// lostWhy is the backend's first ErrLost error: why the lock was lost.
	lostWhy error

	// smu is held by the commit that records a new stack's secrets
	// provider (secrets), the first, while it is made.
	smu     sync.Mutex
	secrets *secrets.Config

	pmu sync.Mutex
	// pending are the changes parked on a stage, by the journal record
	// they ride on (see stage).
	pending map[stageKey]*storage.Change
	// committing are the changes a record took from pending and is
	// committing, until the view shows them (or the commit failed): a
	// change parked meanwhile goes to pending, for the stage's next
	// record, never into what is already on its way to disk.
	committing map[stageKey]*storage.Change
}

// Stage is where a step's work, or an operation's end, parks what it
// writes: its put, forget, change and mutate take effect with the journal
// record they ride on, in that record's one durable write. A step's ride
// on its next record (its "execute ok", "check skipped", "compensate ok"
// or failure), an operation end's on its end record. They never write by
// themselves: they take no context, and a write's failure is the
// record's. What must be durable at once goes through the store's
// WriteNow or mutateNow instead.
type Stage struct {
	s   *Store
	key stageKey
}

// stageKey names the journal record a stage's changes ride on: step's
// next record, or operation end's end record (one of the two is set).
type stageKey struct{ step, end string }

// ForStep is the stage of step id's work (its Check, Execute or
// Compensate).
func (s *Store) ForStep(id string) *Stage { return &Stage{s: s, key: stageKey{step: id}} }

// AtEnd is the stage of operation op's end: what its outcome means for
// the state rides on its end record.
func (s *Store) AtEnd(op string) *Stage { return &Stage{s: s, key: stageKey{end: op}} }

// stageOf is the stage whose changes record r carries, if any: an
// operation's end record carries its end's, a step's record its step's.
func stageOf(r journal.Record) (stageKey, bool) {
	switch {
	case r.Kind == journal.KindOp && r.Status != journal.OpRunning:
		return stageKey{end: r.Op}, true
	case r.Step != "":
		return stageKey{step: r.Step}, true
	}
	return stageKey{}, false
}

// Snapshot returns a copy of the state whose resources are the view's
// (shared, never changed in place: do not change them).
func (s *Store) Snapshot() *state.State {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return shallow(s.st)
}

func shallow(st *state.State) *state.State {
	c := *st
	c.Resources = make(map[string]*state.Resource, len(st.Resources))
	for n, r := range st.Resources {
		c.Resources[n] = r
	}
	c.Forgotten = slices.Clone(st.Forgotten)
	c.Interventions = slices.Clone(st.Interventions)
	c.Revisions = slices.Clone(st.Revisions)
	return &c
}

// Resource returns the view's record of name (nil: none). Do not change it.
func (s *Store) Resource(name string) *state.Resource {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.st.Resources[name]
}

// Lineage is the stack's lineage.
func (s *Store) Lineage() string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.st.Lineage
}

// Put records r (whole, by name) with the stage's record.
func (t *Stage) Put(r *state.Resource) {
	t.Change(storage.Change{Put: []*state.Resource{r}})
}

// Forget drops the record of name with the stage's record.
func (t *Stage) Forget(name string) {
	t.Change(storage.Change{Delete: []string{name}})
}

// Pending reports whether the stage holds a change that no record has
// taken yet.
func (t *Stage) Pending() bool {
	s := t.s
	s.pmu.Lock()
	defer s.pmu.Unlock()
	p := s.pending[t.key]
	return p != nil && !p.Empty()
}

// Change parks ch, after what the stage holds already.
func (t *Stage) Change(ch storage.Change) {
	s := t.s
	s.pmu.Lock()
	defer s.pmu.Unlock()
	if s.pending == nil {
		s.pending = map[stageKey]*storage.Change{}
	}
	p := s.pending[t.key]
	if p == nil {
		p = &storage.Change{}
		s.pending[t.key] = p
	}
	merge(p, ch)
}

// WriteNow commits ch at once, durable when it returns, on no journal
// record: for what must be on disk before the work goes on (a replace
// setting the old object aside, what a Create made found by its key).
func (s *Store) WriteNow(ctx context.Context, ch storage.Change) error {
	return s.commit(ctx, nil, ch)
}

// merge adds ch to p, so that applying p is applying both in order (a put
// after a delete of the same name, or the reverse, leaves the later).
func merge(p *storage.Change, ch storage.Change) {
	for _, r := range ch.Put {
		p.Delete = slices.DeleteFunc(p.Delete, func(n string) bool { return n == r.Name })
		p.Put = slices.DeleteFunc(p.Put, func(o *state.Resource) bool { return o.Name == r.Name })
		p.Put = append(p.Put, r)
	}
	for _, n := range ch.Delete {
		p.Put = slices.DeleteFunc(p.Put, func(o *state.Resource) bool { return o.Name == n })
		if !slices.Contains(p.Delete, n) {
			p.Delete = append(p.Delete, n)
		}
	}
	if ch.Meta != nil {
		p.Meta = ch.Meta
	}
}

// Append is the engine's journal: the record, with what its stage (its
// step's, or its operation end's) changed since its last record, in one
// commit, made under ctx (the command's).
func (s *Store) Append(ctx context.Context, r journal.Record) (journal.Record, error) {
	var ch storage.Change
	key, rides := stageOf(r)
	var p *storage.Change
	if rides {
		s.pmu.Lock()
		if p = s.pending[key]; p != nil {
			// A copy: commit may replace a put (its sensitive list)
			// while stage.resource reads p.
			ch = storage.Change{Put: slices.Clone(p.Put), Delete: slices.Clone(p.Delete), Meta: p.Meta}
			// Taken: what the stage parks from now on waits for its
			// next record (a change merged into p now would be dropped
			// with p, never written).
			delete(s.pending, key)
			if s.committing == nil {
				s.committing = map[stageKey]*storage.Change{}
			}
			s.committing[key] = p
		}
		s.pmu.Unlock()
	}
	recs := []journal.Record{r}
	err := s.commit(ctx, recs, ch)
	if p != nil {
		// Dropped only now, once the view shows it (or the commit
		// failed): stage.resource finds a step's put in one or the
		// other at every moment.
		s.pmu.Lock()
		if s.committing[key] == p {
			delete(s.committing, key)
		}
		s.pmu.Unlock()
	}
	return recs[0], err
}

// Resource is the record of name as the stage's work left it: what it
// Put or dropped, while its record is being committed, else the view's. A
// Verify reads it while its step's "execute ok" is made durable (the
// engine overlaps the two), before the view shows the change.
func (t *Stage) Resource(name string) *state.Resource {
	s := t.s
	s.pmu.Lock()
	// What is parked is newer than what is being committed.
	for _, p := range []*storage.Change{s.pending[t.key], s.committing[t.key]} {
		if p == nil {
			continue
		}
		for _, r := range slices.Backward(p.Put) {
			if r.Name == name {
				s.pmu.Unlock()
				return r
			}
		}
		if slices.Contains(p.Delete, name) {
			s.pmu.Unlock()
			return nil
		}
	}
	s.pmu.Unlock()
	return s.Resource(name) // not this step's
}

// AppendDeferred is the engine's journal for a record that guards no
// mutation (engine.DeferringJournal): queued without waiting for its
// durability, it is written with the next durable record. A record that
// carries what its step changed is never deferred.
func (s *Store) AppendDeferred(ctx context.Context, r journal.Record) (journal.Record, error) {
	if key, rides := stageOf(r); rides {
		s.pmu.Lock()
		p := s.pending[key]
		s.pmu.Unlock()
		if p != nil && !p.Empty() {
			return s.Append(ctx, r)
		}
	}
	// Once the lock is lost nothing more is even attempted (as commit).
	if err := s.Lost(); err != nil {
		return r, err
	}
	r.Error = s.red.Redact(r.Error)
	// The backend may stamp the queued record when it writes it: what is
	// returned is r as given, never the queued copy.
	if _, err := s.w.Commit(ctx, storage.Commit{Records: []journal.Record{r}, Deferred: true}); err != nil {
		if errors.Is(err, storage.ErrLost) {
			s.mu.Lock()
			if s.lostWhy == nil {
				s.lostWhy = err
			}
			s.mu.Unlock()
		}
		return r, err
	}
	s.mu.Lock()
	s.wrote = true
	s.mu.Unlock()
	// The failpoint sees it queued, not durable: a kill here loses it, as
	// the contract allows (the crash tests prove resume converges).
	if s.fp != nil { // the kind is only named for an armed failpoint (tests)
		s.fp.HitAt("journal", boundaryKind(r)+"/queued")
	}
	return r, nil
}

// commit writes recs and ch as one durable Commit, then shows ch in the
// view. Revision texts a new revision carries are stored apart first, and
// the bodies of revisions ch prunes are deleted after.
func (s *Store) commit(ctx context.Context, recs []journal.Record, ch storage.Change) (err error) {
	// Once the lock is lost nothing more is even attempted: the next
	// holder's is the only write.
	if err := s.Lost(); err != nil {
		return err
	}
	defer func() {
		if errors.Is(err, storage.ErrLost) {
			s.mu.Lock()
			if s.lostWhy == nil {
				s.lostWhy = err
			}
			s.mu.Unlock()
		}
	}()
	for i := range recs {
		recs[i].Error = s.red.Redact(recs[i].Error)
	}
	s.smu.Lock()
	if s.secrets != nil {
		// Held through this commit: no other commit is made before the
		// provider is recorded (they wait here, then find it done).
		defer s.smu.Unlock()
		if ch.Meta == nil {
			s.mu.RLock()
			ch.Meta = storage.MetaOf(s.st)
			s.mu.RUnlock()
		} else {
			m := *ch.Meta
			ch.Meta = &m
		}
		ch.Meta.Secrets = s.secrets
		defer func() {
			if err == nil {
				s.secrets = nil
			}
		}()
	} else {
		s.smu.Unlock()
	}
	for i, r := range ch.Put {
		if s.sensitiveOf == nil {
			break
		}
		if add := missing(r.Sensitive, s.sensitiveOf(r)); len(add) > 0 {
			c := *r
			c.Sensitive = append(slices.Clone(r.Sensitive), add...)
			slices.Sort(c.Sensitive)
			ch.Put[i] = &c
		}
	}
	var pruned []int
	if m := ch.Meta; m != nil {
		s.mu.RLock()
		old := s.st.Revisions
		s.mu.RUnlock()
		m.Revisions = slices.Clone(m.Revisions)
		for i := range m.Revisions {
			rev := &m.Revisions[i]
			if rev.Spec == "" {
				continue
			}
			if err := s.w.PutRevision(ctx, rev.N, storage.RevisionBody{Spec: rev.Spec, Variables: rev.Variables, Sensitive: rev.SensitiveVariables}); err != nil {
				return err
			}
			s.fp.HitAt("state", "revision-body")
			rev.Digest, rev.Spec = state.SpecDigest(rev.Spec), ""
		}
		for _, o := range old {
			if !slices.ContainsFunc(m.Revisions, func(r state.Revision) bool { return r.N == o.N }) {
				pruned = append(pruned, o.N)
			}
		}
	}
	if _, err := s.w.Commit(ctx, storage.Commit{Records: recs, Change: ch}); err != nil {
		return err
	}
	if !ch.Empty() {
		s.mu.Lock()
		ch.Apply(s.st)
		s.wrote = true
		s.mu.Unlock()
	} else {
		s.mu.Lock()
		s.wrote = true
		s.mu.Unlock()
	}
	for _, r := range recs {
		if s.fp == nil {
			break // the kind is only named for an armed failpoint (tests)
		}
		s.fp.HitAt("journal", boundaryKind(r))
	}
	if !ch.Empty() {
		s.fp.HitAt("state", "commit")
	}
	// The commit is durable: what it records (an operation's end, say) is
	// true whatever happens next. A body that cannot be deleted is left
	// stored, unused (no revision names it any more), and said: it is no
	// failure of the commit, which must not turn a succeeded operation
	// into one that "could not record" its end.
	for _, n := range pruned {
		if err := s.w.DeleteRevision(ctx, n); err != nil && s.warn != nil {
			s.warn(fmt.Sprintf("warning: could not delete the stored text of pruned revision %d (it stays stored, unused): %v", n, s.red.Redact(err.Error())))
		}
	}
	return nil
}

// Lost is nil while the lock is held; once the backend said it was lost
// (Writer.Lost closed), the error every write then fails with.
func (s *Store) Lost() error {
	select {
	case <-s.w.Lost():
	default:
		return nil
	}
	if why := s.LostCause(); why != nil {
		return why
	}
	return fmt.Errorf("%s: %w (nothing more was written)", s.be.Location(), storage.ErrLost)
}

// LostCause is the backend's own ErrLost error, naming why the lock was
// Lost (nil while it is held, or when the backend does not say).
func (s *Store) LostCause() error {
	s.mu.RLock()
	why := s.lostWhy
	s.mu.RUnlock()
	if why != nil {
		return why
	}
	if lr, ok := s.w.(lostReasoner); ok {
		return lr.LostErr()
	}
	return nil
}

// lostReasoner is a Writer that says why its lock was lost (pgstore,
// s3store) without being asked to write.
type lostReasoner interface{ LostErr() error }

func missing(have, want []string) []string {
	var out []string
	for _, k := range want {
		if !slices.Contains(have, k) && !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out
}

// MutateNow applies fn to a deep copy of the state and commits what it
// changed at once: the resources it put, changed or deleted, and the
// metadata when that changed. Off the step path (it copies the whole
// state): state commands, a resume's repairs.
func (s *Store) MutateNow(ctx context.Context, fn func(*state.State) error) error {
	ch, err := s.diff(fn)
	if err != nil || ch.Empty() {
		return err
	}
	return s.commit(ctx, nil, ch)
}

// Mutate is mutateNow whose change rides on the stage's record.
func (t *Stage) Mutate(fn func(*state.State) error) error {
	ch, err := t.s.diff(fn)
	if err != nil || ch.Empty() {
		return err
	}
	t.Change(ch)
	return nil
}

// withOwnMeta is a shallow copy of st (see shallow) whose outputs and
// revisions' variables are its own, so an fn may change its metadata; its
// resources are still st's.
func withOwnMeta(st *state.State) *state.State {
	next := shallow(st)
	next.Outputs = cloneOutputs(st.Outputs)
	for i := range next.Revisions {
		next.Revisions[i].Variables = state.CloneValues(next.Revisions[i].Variables)
	}
	return next
}

// diff applies fn to a deep copy of the state and returns what it changed.
func (s *Store) diff(fn func(*state.State) error) (storage.Change, error) {
	s.mu.RLock()
	before := s.st
	next := withOwnMeta(before)
	for n, r := range before.Resources {
		next.Resources[n] = r.Clone()
	}
	s.mu.RUnlock()
	if err := fn(next); err != nil {
		return storage.Change{}, err
	}
	var ch storage.Change
	for _, n := range next.Names() {
		if old := before.Resources[n]; old == nil || !reflect.DeepEqual(old, next.Resources[n]) {
			ch.Put = append(ch.Put, next.Resources[n])
		}
	}
	for _, n := range before.Names() {
		if next.Resources[n] == nil {
			ch.Delete = append(ch.Delete, n)
		}
	}
	if m := storage.MetaOf(next); !reflect.DeepEqual(m, storage.MetaOf(before)) || hasText(next.Revisions) {
		m.Revisions = slices.Clone(next.Revisions) // with the texts of new ones, stored apart by commit
		ch.Meta = m
	}
	return ch, nil
}

// MutateMeta is mutate for an fn that changes the state's metadata alone
// (revisions, outputs, interventions, current and staged) and only reads
// its resources: they are the view's own, shared and never copied, so an
// operation's end costs what its metadata is, not a deep copy of every
// Resource (at 10,000 resources, the largest allocation of an apply). An
// fn that puts or drops a resource gets an error: that is mutate's.
func (t *Stage) MutateMeta(fn func(*state.State) error, put ...*state.Resource) error {
	s := t.s
	s.mu.RLock()
	before := s.st
	next := withOwnMeta(before)
	s.mu.RUnlock()
	if err := fn(next); err != nil {
		return err
	}
	if len(next.Resources) != len(before.Resources) {
		return fmt.Errorf("state: a change of the metadata put or dropped a resource")
	}
	for n, r := range next.Resources {
		if before.Resources[n] != r {
			return fmt.Errorf("state: a change of the metadata put resource %s", n)
		}
	}
	m := storage.MetaOf(next)
	if reflect.DeepEqual(m, storage.MetaOf(before)) && !hasText(next.Revisions) && len(put) == 0 {
		return nil
	}
	m.Revisions = slices.Clone(next.Revisions) // with the texts of new ones, stored apart by commit
	// put: whole resources that ride on the same write (step_retain.go's take-back).
	t.Change(storage.Change{Meta: m, Put: put})
	return nil
}

func hasText(revs []state.Revision) bool {
	return slices.ContainsFunc(revs, func(r state.Revision) bool { return r.Spec != "" })
}

func cloneOutputs(m map[string]state.Output) map[string]state.Output {
	if m == nil {
		return nil
	}
	out := make(map[string]state.Output, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// Reseal puts again, listing what their schemas mark sensitive, the
// resources whose record does not list it yet while holding a value of
// it: the backend then seals it (and, at the next Checkpoint, in what it
// holds of older states). It reports whether it put any.
func (s *Store) Reseal(ctx context.Context) (bool, error) {
	if s.sensitiveOf == nil {
		return false, nil
	}
	var ch storage.Change
	s.mu.RLock()
	for _, n := range s.st.Names() {
		r := s.st.Resources[n]
		if add := missing(r.Sensitive, s.sensitiveOf(r)); len(add) > 0 && hasAnyValue(r, add) {
			ch.Put = append(ch.Put, r)
		}
	}
	s.mu.RUnlock()
	if ch.Empty() {
		return false, nil
	}
	if err := s.commit(ctx, nil, ch); err != nil {
		return false, fmt.Errorf("seal the state: %w", err)
	}
	return true, nil
}

func hasAnyValue(r *state.Resource, keys []string) bool {
	if r.ID != "" && slices.Contains(keys, state.SensitiveID) {
		return true
	}
	maps := []map[string]any{r.Config, r.Attributes}
	if r.Prior != nil {
		maps = append(maps, r.Prior.Config, r.Prior.Attributes)
	}
	for _, m := range maps {
		for _, k := range keys {
			if _, ok := m[k]; ok {
				return true
			}
		}
	}
	return false
}

// boundaryKind is the kind of step boundary a journal record marks, for the
// failpoints' tally (core/failpoint): four fields, "-" for one the record
// has not: its kind, status, phase, and the step's action ("meta:ACTION"
// for a step of the engine's own, one with no resource), then
// "/set-aside" for the step of an object a replacement set aside, as in
// "step/started/execute/delete/set-aside", or "op/running/-/-". The crash
// harness kills at every kind it sees at least once.
func boundaryKind(r journal.Record) string {
	or := func(s string) string {
		if s == "" {
			return "-"
		}
		return strings.ReplaceAll(s, "/", "_")
	}
	action := or(r.Action)
	if r.Step != "" && r.Resource == "" {
		action = "meta:" + action
	}
	k := or(r.Kind) + "/" + or(r.Status) + "/" + or(r.Phase) + "/" + action
	if strings.Contains(r.Step, "#") {
		k += "/set-aside"
	}
	return strings.ReplaceAll(k, " ", "_")
}
