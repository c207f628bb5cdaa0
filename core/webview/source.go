package webview

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/bulwark-iac/bulwark/core/inspect"
	"github.com/bulwark-iac/bulwark/core/journal"
	"github.com/bulwark-iac/bulwark/core/secrets"
	"github.com/bulwark-iac/bulwark/core/spec"
	"github.com/bulwark-iac/bulwark/core/stack"
	"github.com/bulwark-iac/bulwark/core/state"
	"github.com/bulwark-iac/bulwark/core/storage"
)

// Source is what the view reads of a backend. Every method only reads: none
// takes a stack's lock, writes a record or opens a sealed value.
type Source interface {
	// Stacks lists the stacks the backend holds, sorted.
	Stacks(ctx context.Context) ([]string, error)
	// Status is the stack's resources, interventions, last operation and
	// lock, as `bulwark status` reads them.
	Status(ctx context.Context, stack string) (*inspect.StatusReport, error)
	// Resources are the stack's recorded resources, their sensitive values
	// masked (as `bulwark state list` shows them).
	Resources(ctx context.Context, stack string) ([]*state.Resource, error)
	// History is the stack's operations and revisions (variables masked),
	// as `bulwark history` reads them.
	History(ctx context.Context, stack string) (*inspect.HistoryReport, error)
	// Operation is the journal's records of one operation (its own and its
	// steps'), oldest first, and each journal line that is not a record
	// (named, with its repair): the good lines are still read.
	Operation(ctx context.Context, stack, op string) ([]journal.Record, []string, error)
	// Spec is the spec text the stack's current revision recorded, with
	// the variables it was applied with (sensitive ones left sealed); nil
	// when the stack has no current revision. A spec kept sealed is not an
	// error: RecordedSpec.Sealed says so.
	Spec(ctx context.Context, stack string) (*RecordedSpec, error)
}

// RecordedSpec is what a revision recorded of its spec.
type RecordedSpec struct {
	Revision  int
	File      string
	Text      string
	Variables map[string]any
	Sensitive []string
	// Sealed says the revision keeps its spec sealed (what the CLI
	// writes) and the view, holding no key, cannot read it: Text is
	// empty. The graph is then drawn from the state's records.
	Sealed bool
}

// ErrNoStack is returned for a stack the backend does not hold.
var ErrNoStack = errors.New("no such stack on this backend")

// BackendSource reads the backend Options name (--state, or the file
// backend under StateDir) through package inspect and stack's read-only
// openers: the same readers, checks and masking as the read-only commands.
type BackendSource struct {
	Opts stack.Options
}

// NewSource returns a Source over opts's backend.
func NewSource(opts stack.Options) *BackendSource {
	opts.Defaults()
	return &BackendSource{Opts: opts}
}

// stackList is one request's listing of the backend's stacks: read once,
// however many of the request's reads check a stack's name against it (a
// page of N stacks makes N+1 of them; on PostgreSQL each listing is a
// session of its own).
type stackList struct {
	once  sync.Once
	names []string
	err   error
}

type stackListKey struct{}

// withStackList returns ctx carrying a listing of the stacks that a
// BackendSource reads at most once for every read made with ctx: one
// request's (the handler's pages and API answers). A listing as old as
// the request is what the request shows; the next one lists again.
func withStackList(ctx context.Context) context.Context {
	return context.WithValue(ctx, stackListKey{}, &stackList{})
}

// Stacks lists the backend's stacks: Options.ListStacks for a remote
// backend, else the stack folders under StateDir; once per ctx made by
// withStackList.
func (s *BackendSource) Stacks(ctx context.Context) ([]string, error) {
	l, ok := ctx.Value(stackListKey{}).(*stackList)
	if !ok {
		return s.list(ctx)
	}
	l.once.Do(func() { l.names, l.err = s.list(ctx) })
	return slices.Clone(l.names), l.err
}

// list reads the listing Stacks answers.
func (s *BackendSource) list(ctx context.Context) ([]string, error) {
	if s.Opts.ListStacks != nil && s.Opts.StateURL != "" {
		names, err := s.Opts.ListStacks(ctx)
		if err != nil {
			return nil, fmt.Errorf("list the stacks on the backend --state names: %w", err)
		}
		sort.Strings(names)
		return names, nil
	}
	entries, err := os.ReadDir(s.Opts.StateDir)
	if errors.Is(err, os.ErrNotExist) {
		return []string{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list the stacks under %s: %w", s.Opts.StateDir, err)
	}
	names := []string{}
	for _, e := range entries {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	return names, nil
}

// known checks that name is one of the backend's stacks: a name from a URL
// never opens (or creates) anything the backend does not already hold.
func (s *BackendSource) known(ctx context.Context, name string) (*spec.Spec, error) {
	names, err := s.Stacks(ctx)
	if err != nil {
		return nil, err
	}
	for _, n := range names {
		if n == name {
			return &spec.Spec{Stack: name}, nil
		}
	}
	return nil, fmt.Errorf("%q: %w", name, ErrNoStack)
}

// Status reads the stack's status (inspect.Status).
func (s *BackendSource) Status(ctx context.Context, name string) (*inspect.StatusReport, error) {
	sp, err := s.known(ctx, name)
	if err != nil {
		return nil, err
	}
	return inspect.Status(sp, s.Opts)
}

// Resources reads the stack's resources, masked (inspect.StateList).
func (s *BackendSource) Resources(ctx context.Context, name string) ([]*state.Resource, error) {
	sp, err := s.known(ctx, name)
	if err != nil {
		return nil, err
	}
	return inspect.StateList(sp, s.Opts)
}

// History reads the stack's history (inspect.StackHistory).
func (s *BackendSource) History(ctx context.Context, name string) (*inspect.HistoryReport, error) {
	sp, err := s.known(ctx, name)
	if err != nil {
		return nil, err
	}
	return inspect.StackHistory(sp, s.Opts)
}

// Operation reads the records of operation op from the stack's journal,
// streamed (only op's are kept). A line that is not a record (a torn one
// being written, a damaged one) is reported, not an error: the view of a
// running operation must not fail on the line its writer is finishing.
func (s *BackendSource) Operation(ctx context.Context, name, op string) ([]journal.Record, []string, error) {
	if _, err := s.known(ctx, name); err != nil {
		return nil, nil, err
	}
	be, err := s.Opts.Backend(ctx, name, state.Sealing{})
	if err != nil {
		return nil, nil, err
	}
	defer be.Close()
	var out []journal.Record
	// Every line read (a kinds filter would skip a bad line unreported).
	bad, err := storage.ScanJournal(ctx, be, nil, func(r journal.Record) error {
		if r.Op == op && (r.Kind == journal.KindOp || r.Kind == journal.KindSummary || r.Kind == journal.KindStep) {
			out = append(out, r)
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("read the journal of stack %s: %w", name, err)
	}
	var problems []string
	for _, b := range bad {
		problems = append(problems, b.Error())
	}
	return out, problems, nil
}

// Spec reads the current revision's spec text and variables from the
// backend, opened without a key: a sealed spec is reported Sealed, a
// sealed variable stays sealed.
func (s *BackendSource) Spec(ctx context.Context, name string) (*RecordedSpec, error) {
	sp, err := s.known(ctx, name)
	if err != nil {
		return nil, err
	}
	// One open serves the state and, when the state does not hold the
	// revision's text, the revision.
	be, err := s.Opts.Backend(ctx, sp.Stack, state.Sealing{})
	if err != nil {
		return nil, err
	}
	defer be.Close()
	st, err := be.Load(ctx)
	if err != nil {
		return nil, err
	}
	rev, ok := st.Revision(st.Current)
	if !ok {
		return nil, nil
	}
	text, vars, sensitive := rev.Spec, rev.Variables, rev.SensitiveVariables
	if text == "" {
		body, err := be.Revision(ctx, rev.N)
		if errors.Is(err, storage.ErrSpecSealed) {
			return &RecordedSpec{Revision: rev.N, File: rev.File, Sealed: true}, nil
		}
		if err != nil {
			return nil, fmt.Errorf("read revision %d of stack %s: %w", rev.N, name, err)
		}
		text, vars, sensitive = body.Spec, body.Variables, body.Sensitive
	}
	// A backend opened without a key may hand the sealed text back as it
	// is stored.
	if secrets.IsSealed(text) {
		return &RecordedSpec{Revision: rev.N, File: rev.File, Sealed: true}, nil
	}
	return &RecordedSpec{Revision: rev.N, File: rev.File, Text: text, Variables: vars, Sensitive: sensitive}, nil
}
