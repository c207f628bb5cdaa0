package stack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/bulwark-iac/bulwark/core/resolve"
	"github.com/bulwark-iac/bulwark/core/secrets"
	"github.com/bulwark-iac/bulwark/core/spec"
	"github.com/bulwark-iac/bulwark/core/state"
	"github.com/bulwark-iac/bulwark/core/storage"
)

// Other stacks' outputs: ${stack.NAME.outputs.X} reads output X of stack
// NAME on this stack's backend at plan time, as Terraform's
// terraform_remote_state does: its state is loaded read-only, without its
// lock (a writer holding it does not block the read, and the read takes
// nothing). Like a data entry's, what was read is shown by plan, recorded
// in a saved plan (applying it reads nothing again) and on the operation's
// start record (a resume takes those values).

// StackReadError is a ${stack.NAME.outputs.X} that cannot be read: the
// plan stops before anything is decided, and nothing was changed.
type StackReadError struct {
	File   string
	Pos    spec.Pos // the first reference to the stack (or to the output)
	Stack  string
	Output string // "" when the stack itself cannot be read
	Err    error
}

func (e *StackReadError) Error() string {
	what := fmt.Sprintf("stack %q", e.Stack)
	if e.Output != "" {
		what = fmt.Sprintf("output %q of stack %q", e.Output, e.Stack)
	}
	return fmt.Sprintf("%s:%d:%d: %s: %v; nothing was changed", e.File, e.Pos.Line, e.Pos.Col, what, e.Err)
}

func (e *StackReadError) Unwrap() error { return e.Err }

// Typed causes of a StackReadError.
var (
	// ErrNoStackState: the stack was never applied on this backend.
	ErrNoStackState = errors.New("no such stack on this backend (it has no state: was it applied, with the same --state-dir or backend?)")
	// ErrNoStackOutput: the stack has no output of that name.
	ErrNoStackOutput = errors.New("the stack has no such output")
	// ErrOwnStack: a spec cannot read its own stack's outputs.
	ErrOwnStack = errors.New("a stack cannot read its own outputs (use the resource's attributes or a local)")
)

// StackRead is what a plan read of one other stack's outputs.
type StackRead struct {
	Stack string `json:"stack"`
	// Revision is the stack's current revision when it was read.
	Revision int `json:"revision"`
	// Outputs are the outputs the spec references, by name.
	Outputs map[string]any `json:"outputs"`
	// Sensitive lists the outputs whose values are never shown.
	Sensitive []string `json:"sensitive,omitempty"`
	// Saved: the values a saved plan (or a resumed operation) recorded,
	// not read again.
	Saved bool `json:"saved,omitempty"`
}

// MarshalJSON masks the sensitive outputs.
func (r StackRead) MarshalJSON() ([]byte, error) {
	type plain StackRead
	out := plain(r)
	out.Outputs = secrets.MaskKeys(r.Outputs, r.Sensitive)
	return json.Marshal(out)
}

// readStacks reads the outputs of other stacks the spec references (or
// takes what a saved plan or a resumed operation recorded), then makes the
// session's spec the one with their values substituted.
func (s *session) readStacks(ctx context.Context) error {
	if s.stacksSubstituted != nil && s.stacksSubstituted == s.sp {
		return nil // a plan made again over the same session
	}
	refs := resolve.StackRefs(s.sp)
	if len(refs) == 0 {
		return nil
	}
	// The stacks in the order first referenced, each with the outputs read.
	var order []string
	want := map[string][]*spec.Ref{}
	for _, ref := range refs {
		if _, ok := want[ref.Name]; !ok {
			order = append(order, ref.Name)
		}
		want[ref.Name] = append(want[ref.Name], ref)
	}
	had := s.recordedStacks
	if s.saved != nil {
		had = s.saved.stacks
	}
	s.stackReads = s.stackReads[:0]
	vals := make(resolve.StackOutputs, len(order))
	sensitive := make(map[string][]string, len(order))
	for _, name := range order {
		first := want[name][0]
		if name == s.sp.Stack {
			return &StackReadError{File: s.sp.File, Pos: first.Pos, Stack: name, Err: ErrOwnStack}
		}
		r, ok := had[name]
		if ok {
			for _, ref := range want[name] {
				if _, has := r.Outputs[ref.Attr]; !has {
					ok = false // recorded before the spec used this output
				}
			}
		}
		if !ok {
			var err error
			if r, err = s.readStack(ctx, name, want[name]); err != nil {
				return err
			}
		}
		for _, k := range r.Sensitive {
			if v := r.Outputs[k]; v != nil {
				s.opts.Redactor.Add(v)
				s.dataSecrets = append(s.dataSecrets, v)
			}
		}
		vals[name], sensitive[name] = r.Outputs, r.Sensitive
		s.stackReads = append(s.stackReads, r)
	}
	sp, err := resolve.SubstituteStacks(s.sp, vals, sensitive)
	if err != nil {
		return err
	}
	for _, v := range sp.Secrets {
		s.opts.Redactor.Add(v)
	}
	if s.dataSubstituted == s.sp {
		s.dataSubstituted = sp
	}
	s.sp, s.stacksSubstituted = sp, sp
	return nil
}

// readStack loads stack name's state from this stack's backend, without
// its lock, and takes the outputs refs name, the sensitive ones opened with
// this session's key (bound to that stack).
func (s *session) readStack(ctx context.Context, name string, refs []*spec.Ref) (StackRead, error) {
	fail := func(ref *spec.Ref, output string, err error) (StackRead, error) {
		return StackRead{}, &StackReadError{File: s.sp.File, Pos: ref.Pos, Stack: name, Output: output, Err: err}
	}
	// Loaded as stored: nothing of it is opened but what is read here.
	be, err := s.opts.Backend(ctx, name, state.Sealing{})
	if err != nil {
		return fail(refs[0], "", err)
	}
	st, err := be.Load(ctx)
	be.Close()
	if err != nil {
		if errors.Is(err, storage.ErrMoved) {
			return fail(refs[0], "", fmt.Errorf("it was moved to another backend; read it there: %w", err))
		}
		return fail(refs[0], "", err)
	}
	if st.Serial == 0 && st.Current == 0 && len(st.Outputs) == 0 {
		return fail(refs[0], "", ErrNoStackState)
	}
	r := StackRead{Stack: name, Revision: st.Current, Outputs: map[string]any{}}
	// Opened with the key of that stack's own secrets provider.
	sl := &sealer{ctx: ctx, src: s.opts.Secrets, context: secrets.StackContext(name)}
	if st.Secrets != nil {
		sl.UseSecrets(st.Secrets)
	}
	for _, ref := range refs {
		o, ok := st.Outputs[ref.Attr]
		if !ok {
			have := slices.Sorted(maps.Keys(st.Outputs))
			list := "none"
			if len(have) > 0 {
				list = strings.Join(have, ", ")
			}
			return fail(ref, ref.Attr, fmt.Errorf("%w (its outputs: %s)", ErrNoStackOutput, list))
		}
		v := o.Value
		if o.Sensitive {
			if sv, ok := v.(string); ok && secrets.IsSealed(sv) {
				if s.opts.Secrets == nil {
					return fail(ref, ref.Attr, fmt.Errorf("it is sensitive, sealed in that stack's state: %w", secrets.ErrNoKey))
				}
				if v, err = sl.OpenValue(sv); err != nil {
					return fail(ref, ref.Attr, fmt.Errorf("it is sensitive and cannot be opened with this key (that stack's secrets provider is %s): %w", st.Secrets.Name(), err))
				}
			}
			r.Sensitive = append(r.Sensitive, ref.Attr)
		}
		r.Outputs[ref.Attr] = v
	}
	slices.Sort(r.Sensitive)
	return r, nil
}
