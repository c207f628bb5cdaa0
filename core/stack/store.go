package stack

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"

	"github.com/bulwark-iac/bulwark/core/failpoint"
	"github.com/bulwark-iac/bulwark/core/journal"
	"github.com/bulwark-iac/bulwark/core/secrets"
	"github.com/bulwark-iac/bulwark/core/state"
	"github.com/bulwark-iac/bulwark/core/storage"
)

// store is a locked session's one view of the stack's state, and its one
// way to write: every write is a storage Commit of journal records and the
// delta they belong to. The view is what was committed; a resource in it
// is never changed in place (a change puts a new one), so reading one
// resource, or a shallow copy of the whole, needs no deep copy.
type store struct {
	// ctx is the command's context: the journal's records (the engine
	// appends them without one) and Mutate's writes are made under it, so
	// a backend that hangs is let go of when the command is stopped.
	ctx context.Context
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

	pmu sync.Mutex
	// pending are the changes a running step made, by step id: they ride
	// on the step's next journal record (its "execute ok", "check
	// skipped", "compensate ok" or failure), one durable write for both.
	pending map[string]*storage.Change
}

type stepKey struct{}

// inStep marks ctx as the context of step id's work: what it puts or drops
// rides on the step's next journal record.
func inStep(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, stepKey{}, id)
}

func stepOf(ctx context.Context) string {
	id, _ := ctx.Value(stepKey{}).(string)
	return id
}

// Snapshot returns a copy of the state whose resources are the view's
// (shared, never changed in place: do not change them).
func (s *store) Snapshot() *state.State {
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
func (s *store) Resource(name string) *state.Resource {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.st.Resources[name]
}

// Lineage is the stack's lineage.
func (s *store) Lineage() string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.st.Lineage
}

// put records r (whole, by name): with the running step's next journal
// record when ctx is a step's, else at once.
func (s *store) put(ctx context.Context, r *state.Resource) error {
	return s.change(ctx, storage.Change{Put: []*state.Resource{r}})
}

// drop forgets name.
func (s *store) drop(ctx context.Context, name string) error {
	return s.change(ctx, storage.Change{Delete: []string{name}})
}

func (s *store) change(ctx context.Context, ch storage.Change) error {
	if id := stepOf(ctx); id != "" {
		s.pmu.Lock()
		defer s.pmu.Unlock()
		if s.pending == nil {
			s.pending = map[string]*storage.Change{}
		}
		p := s.pending[id]
		if p == nil {
			p = &storage.Change{}
			s.pending[id] = p
		}
		merge(p, ch)
		return nil
	}
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

// Append is the engine's journal: the record, with what its step changed
// since its last record, in one commit, made under ctx (the command's).
func (s *store) Append(ctx context.Context, r journal.Record) (journal.Record, error) {
	var ch storage.Change
	key := r.Step
	if r.Kind == journal.KindOp && r.Status != journal.OpRunning {
		key = opKey(r.Op) // an operation's end carries what its Finish recorded
	}
	var p *storage.Change
	if key != "" {
		s.pmu.Lock()
		if p = s.pending[key]; p != nil {
			// A copy: commit may replace a put (its sensitive list)
			// while stepResource reads p.
			ch = storage.Change{Put: slices.Clone(p.Put), Delete: p.Delete, Meta: p.Meta}
		}
		s.pmu.Unlock()
	}
	recs := []journal.Record{r}
	err := s.commit(ctx, recs, ch)
	if p != nil {
		// Dropped only now, once the view shows it (or the commit
		// failed): stepResource finds a step's put in one or the other
		// at every moment.
		s.pmu.Lock()
		if s.pending[key] == p {
			delete(s.pending, key)
		}
		s.pmu.Unlock()
	}
	return recs[0], err
}

// stepResource is the record of name as step id's work left it: what the
// step put or dropped, while its record is being committed, else the
// view's. A Verify reads it while its step's "execute ok" is made durable
// (the engine overlaps the two), before the view shows the change.
func (s *store) stepResource(id, name string) *state.Resource {
	s.pmu.Lock()
	if p := s.pending[id]; p != nil {
		defer s.pmu.Unlock()
		for _, r := range slices.Backward(p.Put) {
			if r.Name == name {
				return r
			}
		}
		if slices.Contains(p.Delete, name) {
			return nil
		}
		return s.Resource(name) // not this step's
	}
	s.pmu.Unlock()
	return s.Resource(name)
}

// AppendDeferred is the engine's journal for a record that guards no
// mutation (engine.DeferringJournal): queued without waiting for its
// durability, it is written with the next durable record. A record that
// carries what its step changed is never deferred.
func (s *store) AppendDeferred(ctx context.Context, r journal.Record) (journal.Record, error) {
	if r.Step != "" {
		s.pmu.Lock()
		p := s.pending[r.Step]
		s.pmu.Unlock()
		if p != nil && !p.Empty() {
			return s.Append(ctx, r)
		}
	}
	// Once the lock is lost nothing more is even attempted (as commit).
	if err := s.lost(); err != nil {
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
	s.fp.Hit("journal")
	return r, nil
}

// commit writes recs and ch as one durable Commit, then shows ch in the
// view. Revision texts a new revision carries are stored apart first, and
// the bodies of revisions ch prunes are deleted after.
func (s *store) commit(ctx context.Context, recs []journal.Record, ch storage.Change) (err error) {
	// Once the lock is lost nothing more is even attempted: the next
	// holder's is the only write.
	if err := s.lost(); err != nil {
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
			s.fp.Hit("state")
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
	for range recs {
		s.fp.Hit("journal")
	}
	if !ch.Empty() {
		s.fp.Hit("state")
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

// lost is nil while the lock is held; once the backend said it was lost
// (Writer.Lost closed), the error every write then fails with.
func (s *store) lost() error {
	select {
	case <-s.w.Lost():
	default:
		return nil
	}
	if why := s.lostCause(); why != nil {
		return why
	}
	return fmt.Errorf("%s: %w (nothing more was written)", s.be.Location(), storage.ErrLost)
}

// lostCause is the backend's own ErrLost error, naming why the lock was
// lost (nil while it is held, or when the backend does not say).
func (s *store) lostCause() error {
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

// Mutate applies fn to a deep copy of the state and commits what it
// changed: the resources it put, changed or deleted, and the metadata when
// that changed. Off the step path (it copies the whole state): state
// commands, an operation's end, a resume's repairs.
func (s *store) Mutate(fn func(*state.State) error) error {
	return s.mutate(s.context(), fn)
}

// context is the command's context (Background when none was given).
func (s *store) context() context.Context {
	if s.ctx == nil {
		return context.Background()
	}
	return s.ctx
}

// opKey is the pending key of what operation op's end record carries.
func opKey(op string) string { return "op:" + op }

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

// mutate is Mutate whose change, when ctx is a step's (inStep), rides on
// that step's next record.
func (s *store) mutate(ctx context.Context, fn func(*state.State) error) error {
	s.mu.RLock()
	before := s.st
	next := withOwnMeta(before)
	for n, r := range before.Resources {
		next.Resources[n] = r.Clone()
	}
	s.mu.RUnlock()
	if err := fn(next); err != nil {
		return err
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
	if ch.Empty() {
		return nil
	}
	return s.change(ctx, ch)
}

// mutateMeta is mutate for an fn that changes the state's metadata alone
// (revisions, outputs, interventions, current and staged) and only reads
// its resources: they are the view's own, shared and never copied, so an
// operation's end costs what its metadata is, not a deep copy of every
// resource (at 10,000 resources, the largest allocation of an apply). An
// fn that puts or drops a resource gets an error: that is mutate's.
func (s *store) mutateMeta(ctx context.Context, fn func(*state.State) error, put ...*state.Resource) error {
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
	// put: whole resources that ride on the same write (retain.go's take-back).
	return s.change(ctx, storage.Change{Meta: m, Put: put})
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

// reseal puts again, listing what their schemas mark sensitive, the
// resources whose record does not list it yet while holding a value of
// it: the backend then seals it (and, at the next Checkpoint, in what it
// holds of older states). It reports whether it put any.
func (s *store) reseal(ctx context.Context) (bool, error) {
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
