package stack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/bulwark-iac/bulwark/core/journal"
	"github.com/bulwark-iac/bulwark/core/plan"
	"github.com/bulwark-iac/bulwark/core/pluginhost"
	"github.com/bulwark-iac/bulwark/core/providers"
	"github.com/bulwark-iac/bulwark/core/secrets"
	"github.com/bulwark-iac/bulwark/core/spec"
	"github.com/bulwark-iac/bulwark/core/state"
	"github.com/bulwark-iac/bulwark/core/storage"
)

// notCreatedNote is the error of the journal record by which a person says
// that an interrupted Create made nothing (resume --not-created): an
// Execute that ended, skipped, so that nothing goes looking for what it
// made.
const notCreatedNote = "nothing was made: a person looked and said so (resume --not-created)"

// unansweredNote ends the error of a Create of a keyless provider that
// failed without the provider's answer (the plugin died, the call was cut
// or cancelled): the journal keeps it, so that a rollback or a resume
// knows the outcome is unknown, as after a crash.
const unansweredNote = "the provider gave no answer: whether it made anything is unknown"

// answered reports whether err is the provider's own answer (its
// diagnostics), not a call that ended without one.
func answered(err error) bool {
	var d *pluginhost.DiagnosticsError
	var ds providers.Diagnostics
	var one providers.Diagnostic
	return errors.As(err, &d) || errors.As(err, &ds) || errors.As(err, &one)
}

// UnknownCreate is one Create whose outcome a crash left unknown, of a
// provider that takes no idempotency key (providers.Capabilities.Keyless).
type UnknownCreate struct {
	Resource string
	Type     string
	Provider string // the spec's name for it
	Source   string // its source address
	// Config is what was being created, sensitive values masked.
	Config map[string]any
	// Started is when its Create started.
	Started time.Time
	// Replace: the create was a replace's new resource.
	Replace bool
}

// UnknownCreateError stops a resume that would have to guess whether an
// interrupted Create made something: its provider takes no idempotency
// key, so nothing can be looked up by one, and guessing "nothing" would
// make a second one while guessing "something" cannot say which. The
// operation stays unfinished; a person looks for each resource and either
// imports it (bulwark import) or says nothing was made (bulwark resume
// --not-created NAME), and resume then finishes. Its exit code is 12.
type UnknownCreateError struct {
	Stack string
	Spec  string // the spec's file, for the commands it names
	Op    string
	Type  string // the operation's type
	// Creates are the creates left unknown, by resource name.
	Creates []UnknownCreate
}

func (e *UnknownCreateError) Error() string {
	var b strings.Builder
	spec := e.Spec
	if spec == "" {
		spec = "SPEC"
	}
	fmt.Fprintf(&b, "resume stopped: %s %s was interrupted while creating %d resource(s) whose provider takes no idempotency key; whether each exists is unknown, and bulwark does not guess:\n", e.Type, e.Op, len(e.Creates))
	for _, c := range e.Creates {
		cfg, _ := json.Marshal(c.Config)
		what := "create"
		if c.Replace {
			what = "create (the new resource of a replace)"
		}
		src := c.Provider
		if c.Source != "" {
			src += " (" + c.Source + ")"
		}
		fmt.Fprintf(&b, "  %s: a %s of %s, provider %s, started %s, config %s\n", c.Resource, what, c.Type, src, c.Started.UTC().Format(time.RFC3339), cfg)
	}
	b.WriteString("Look for each with the provider's own console or API (its type, with that config, made since it started). Then, for each:\n")
	for _, c := range e.Creates {
		fmt.Fprintf(&b, "  it exists:     bulwark import %s %s ID\n", spec, c.Resource)
		fmt.Fprintf(&b, "  none was made: bulwark resume %s --not-created %s\n", spec, c.Resource)
	}
	fmt.Fprintf(&b, "(ID: the provider's id of what you found, as `terraform import` takes it), then run `bulwark resume %s`; the %s stays unfinished until then.", spec, e.Type)
	return b.String()
}

// keyless reports whether the provider named takes no idempotency key.
func (s *session) keyless(provider string) bool {
	p := s.plugins[provider]
	return p != nil && capsOf(p).Keyless
}

// notCreated lists the steps of recs that a person said made nothing.
func notCreated(recs []journal.Record) map[string]bool {
	out := map[string]bool{}
	// A later start that ended "not_sent" sent nothing: the person's word
	// on the Create before it still stands.
	for _, r := range journal.Sent(recs) {
		if r.Kind == journal.KindStep && r.Phase == "execute" {
			out[r.Step] = r.Status == journal.StepSkipped && r.Error == notCreatedNote
		}
	}
	return out
}

// unknownCreates lists the Creates of the operation recs holds that
// started and never ended, of a keyless provider, and that nothing has
// settled since: the state records nothing at the address (a Create that
// answered is recorded, by this operation or by an import a person ran),
// and no person said it made nothing.
func (s *session) unknownCreates(recs []journal.Record) []UnknownCreate {
	st := s.store.Snapshot()
	var out []UnknownCreate
	for _, e := range openCreates(recs, st) {
		u, ok := s.describeCreate(e.Step, st)
		if !ok || !s.keyless(u.Provider) {
			continue
		}
		u.Started, u.Replace = e.Time, e.Action == string(plan.Replace)
		out = append(out, u)
	}
	return out
}

// openCreates returns the newest Execute start of each Create (or a
// replace's create) of the operation recs holds that never ended with the
// provider's answer, that no person said made nothing, and whose address
// st records nothing at (a Create that answered is recorded, by the
// operation or by an import a person ran; a replace sets the old one
// aside, durably, before its Create starts), sorted by step: what a crash
// or a lost answer left open.
func openCreates(recs []journal.Record, st *state.State) []journal.Record {
	// the newest Execute ended with an answer (a start that ended
	// "not_sent" sent nothing, and is no Execute: journal.Sent)
	ended := map[string]bool{}
	sent := journal.Sent(recs)
	for _, r := range sent {
		if r.Kind == journal.KindStep && r.Phase == "execute" {
			ended[r.Step] = r.Status != journal.StepStarted && !strings.Contains(r.Error, unansweredNote)
		}
	}
	var out []journal.Record
	for name, e := range executions(sent) {
		if ended[name] || (e.Action != string(plan.Create) && e.Action != string(plan.Replace)) {
			continue
		}
		if st != nil && st.Resources[name] != nil {
			continue
		}
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b journal.Record) int { return strings.Compare(a.Step, b.Step) })
	return out
}

// PendingCreate is a Create whose outcome is unknown, as status and doctor
// show it: of an unfinished operation, by a provider built for Terraform
// (which takes no idempotency key), settled by nothing yet. resume stops at
// it (UnknownCreateError) until a person imports what was made or says
// nothing was.
type PendingCreate struct {
	Op       string    `json:"op"`
	Resource string    `json:"resource"`
	Type     string    `json:"type"`
	Provider string    `json:"provider"`
	Source   string    `json:"source"`
	Started  time.Time `json:"started"`
	Replace  bool      `json:"replace,omitempty"`
}

// PendingCreates lists the pending creates of a stack from its spec, its
// state and its journal records (recs: at least the operation records and
// the Execute step records of its unfinished operations), without starting
// any provider: a provider is taken to take no key when its source is a
// Terraform source address, as every provider built for Terraform.
func PendingCreates(sp *spec.Spec, st *state.State, recs []journal.Record) []PendingCreate {
	if sp == nil {
		return nil
	}
	byOp := map[string][]journal.Record{}
	for _, r := range recs {
		byOp[r.Op] = append(byOp[r.Op], r)
	}
	var out []PendingCreate
	for _, u := range Unfinished(recs) {
		for _, e := range openCreates(byOp[u.Op], st) {
			r, ok := sp.Resource(e.Step)
			if !ok {
				continue
			}
			pc, ok := sp.Providers[r.Provider]
			if !ok || !terraformSource(pc.Source) {
				continue
			}
			out = append(out, PendingCreate{Op: u.Op, Resource: e.Step, Type: r.Type, Provider: r.Provider, Source: pc.Source,
				Started: e.Time, Replace: e.Action == string(plan.Replace)})
		}
	}
	return out
}

// UnfinishedAckError refuses to acknowledge an operation that is
// unfinished: there is nothing for a person to acknowledge until it ends,
// and an ack would hide a create whose outcome may be unknown. resume
// finishes it; where resume stops at a create of a provider that takes no
// idempotency key, the person imports what was made or says nothing was.
type UnfinishedAckError struct {
	Stack string
	Op    string
	// Creates are the creates the operation left open (started, never
	// answered, recorded nowhere), by resource name.
	Creates []string
}

func (e *UnfinishedAckError) Error() string {
	msg := fmt.Sprintf("ack %s: operation %s of stack %s is unfinished, and an unfinished operation is not acknowledged: `bulwark resume SPEC` finishes it", e.Op, e.Op, e.Stack)
	if len(e.Creates) > 0 {
		msg += fmt.Sprintf("; it left open the create of %s: where its provider takes no idempotency key (one built for Terraform) resume stops there, and each is settled by `bulwark import SPEC %s ID` (it exists) or `bulwark resume SPEC --not-created %s` (nothing was made)",
			strings.Join(e.Creates, ", "), e.Creates[0], e.Creates[0])
	}
	return msg
}

// describeCreate is what the spec (or else the state) says name is.
func (s *session) describeCreate(name string, st *state.State) (UnknownCreate, bool) {
	u := UnknownCreate{Resource: name}
	if r, ok := s.specResource(name); ok {
		r = readable(r, st)
		u.Type, u.Provider, u.Config = r.Type, r.Provider, r.Config
	} else if cur := st.Resources[name]; cur != nil {
		u.Type, u.Provider, u.Config = cur.Type, cur.Provider, cur.Config
	} else {
		return u, false
	}
	if pc, ok := s.sp.Providers[u.Provider]; ok {
		u.Source = pc.Source
	}
	var mask []string
	if p := s.plugins[u.Provider]; p != nil {
		mask = sensitiveAttrs(p.Schema(), u.Type)
	}
	mask = append(mask, s.secretKeys(u.Config)...)
	u.Config = secrets.MaskKeys(u.Config, mask)
	if u.Config == nil {
		u.Config = map[string]any{}
	}
	return u, true
}

// checkUnknownCreates stops a resume of target at an unknown create (see
// UnknownCreateError), after journaling what a person said of the ones
// named in opts.NotCreated. It runs before anything is resolved, rolled
// back or run again.
func (s *session) checkUnknownCreates(ctx context.Context, target UnfinishedError, recs []journal.Record) ([]journal.Record, error) {
	unknown := s.unknownCreates(recs)
	for _, name := range s.opts.NotCreated {
		if !slices.ContainsFunc(unknown, func(u UnknownCreate) bool { return u.Resource == name }) {
			return recs, fmt.Errorf("resume --not-created %s: operation %s has no create of %s whose outcome is unknown", name, target.Op, name)
		}
	}
	for _, name := range s.opts.NotCreated {
		e := executions(recs)[name]
		rec := journal.Record{Op: target.Op, Kind: journal.KindStep, Step: name, Resource: name, Action: e.Action,
			Phase: "execute", Status: journal.StepSkipped, Key: e.Key, Error: notCreatedNote}
		if _, err := s.jr.Append(ctx, rec); err != nil {
			return recs, err
		}
		recs = append(recs, rec)
		s.prog.printf("resume %s: %s: nothing was made, as the person running resume says; it will be created again\n", s.sp.Stack, name)
	}
	if unknown = s.unknownCreates(recs); len(unknown) > 0 {
		return recs, &UnknownCreateError{Stack: s.sp.Stack, Spec: s.sp.File, Op: target.Op, Type: target.Type, Creates: unknown}
	}
	return recs, nil
}

// findUnkeyed is findByKey for a provider that takes no key: what the
// state records (cur) is all there is to find. A Create that ended
// without the provider's answer, in this run or (journaled) an earlier
// one, is unknown and stops the caller: a rollback then stays incomplete
// and its resume stops for a person (UnknownCreateError); one a person
// said made nothing made nothing.
func (s *session) findUnkeyed(name string, cur *state.Resource, typ string) (*state.Resource, error) {
	if cur != nil || s.settled[name] {
		return nil, nil
	}
	if _, cut := s.unanswered.Load(name); cut {
		return nil, fmt.Errorf("undo %s: its create (%s) ended without the provider's answer and the provider takes no idempotency key: whether it made anything is unknown; `bulwark resume` says how to settle it", name, typ)
	}
	return nil, nil
}

// importSettles checks that an import of address may run while operation
// u is unfinished: u's Create of address is unknown (its provider takes no
// key), and the import settles it. Any other import waits for resume.
func (s *session) importSettles(ctx context.Context, u *UnfinishedError, address, provider string) error {
	if err := s.startProviders(ctx, []string{provider}, s.store.Snapshot()); err != nil {
		return err
	}
	var recs []journal.Record
	if _, err := storage.ScanJournal(ctx, s.be, []string{journal.KindStep}, func(r journal.Record) error {
		if r.Op == u.Op {
			recs = append(recs, r)
		}
		return nil
	}); err != nil {
		return err
	}
	if !slices.ContainsFunc(s.unknownCreates(recs), func(c UnknownCreate) bool { return c.Resource == address }) {
		return u
	}
	s.prog.printf("import %s: settles the create of %s that %s %s left unknown; then run `bulwark resume %s`\n", s.sp.Stack, address, u.Type, u.Op, s.sp.File)
	return nil
}
