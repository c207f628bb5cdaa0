package stack

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/bulwark-iac/bulwark/core/journal"
	"github.com/bulwark-iac/bulwark/core/secrets"
)

// recordedRead is one data entry's read as an operation's start record
// holds it (journal.Record.Data): the values of the sensitive attributes
// sealed with the state's key, bound to the stack; those of a session
// without a key left out.
type recordedRead struct {
	Name       string         `json:"name"`
	Type       string         `json:"type"`
	Provider   string         `json:"provider"`
	Attributes map[string]any `json:"attributes"`
	Sensitive  []string       `json:"sensitive,omitempty"`
	// Stack, when set, makes this another stack's outputs as the plan read
	// them (${stack.NAME.outputs.X}): Attributes are the outputs, at
	// Revision of that stack.
	Stack    string `json:"stack,omitempty"`
	Revision int    `json:"revision,omitempty"`
}

// recordDataReads is what the operation's start record carries of the
// data entries its plan read (s.dataReads), and of the other stacks'
// outputs (s.stackReads, entries with Stack set): nil when there are none. An
// operation's configs are the ones it planned with, so a resume of it
// takes these values (useRecordedData), never a second read whose answer
// may have moved since.
func (s *session) recordDataReads() (json.RawMessage, error) {
	if len(s.dataReads) == 0 && len(s.stackReads) == 0 {
		return nil, nil
	}
	sl := s.sealing().Sealer
	out := make([]recordedRead, 0, len(s.dataReads)+len(s.stackReads))
	reads := slices.Clone(s.dataReads)
	for _, r := range s.stackReads {
		reads = append(reads, DataRead{Name: r.Stack, Attributes: r.Outputs, Sensitive: r.Sensitive})
	}
	for i, d := range reads {
		stack, rev := "", 0
		if i >= len(s.dataReads) {
			stack, rev = d.Name, s.stackReads[i-len(s.dataReads)].Revision
		}
		attrs := make(map[string]any, len(d.Attributes))
		for k, v := range d.Attributes {
			if !slices.Contains(d.Sensitive, k) || v == nil {
				attrs[k] = v
				continue
			}
			if sv, ok := v.(string); ok && secrets.IsSealed(sv) {
				attrs[k] = v
				continue
			}
			if sl == nil {
				continue // never in clear: without a key it is not kept
			}
			sealed, err := sl.SealValue(v)
			if err != nil {
				return nil, fmt.Errorf("data %s: seal %s for the journal: %w", d.Name, k, err)
			}
			attrs[k] = sealed
		}
		out = append(out, recordedRead{Name: d.Name, Type: d.Type, Provider: d.Provider, Attributes: attrs, Sensitive: d.Sensitive, Stack: stack, Revision: rev})
	}
	return json.Marshal(out)
}

// useRecordedData makes a resume of the operation whose records are recs
// configure with what its plan read (the newest start record that holds
// data), opened with the state's key. An operation that read nothing, or
// that was journaled before reads were recorded, leaves readData to read.
func (s *session) useRecordedData(op string, recs []journal.Record) error {
	var raw json.RawMessage
	for _, r := range recs {
		if r.Op == op && r.Kind == journal.KindOp && r.Status == journal.OpRunning && len(r.Data) > 0 {
			raw = r.Data
		}
	}
	if raw == nil {
		return nil
	}
	var rec []recordedRead
	if err := json.Unmarshal(raw, &rec); err != nil {
		return fmt.Errorf("resume: the data operation %s read, as journaled: %w", op, err)
	}
	sl := s.sealing().Sealer
	out := make(map[string]DataRead, len(rec))
	stacks := map[string]StackRead{}
	for _, d := range rec {
		attrs := make(map[string]any, len(d.Attributes))
		for k, v := range d.Attributes {
			attrs[k] = v
			sv, ok := v.(string)
			if !ok || !secrets.IsSealed(sv) || !slices.Contains(d.Sensitive, k) {
				continue
			}
			if sl == nil {
				return fmt.Errorf("resume: data %s, attribute %s, as operation %s read it, is sealed: %w", d.Name, k, op, secrets.ErrNoKey)
			}
			plain, err := sl.OpenValue(sv)
			if err != nil {
				return fmt.Errorf("resume: data %s, attribute %s, as operation %s read it: %w", d.Name, k, op, err)
			}
			attrs[k] = plain
		}
		if d.Stack != "" {
			stacks[d.Stack] = StackRead{Stack: d.Stack, Revision: d.Revision, Outputs: attrs, Sensitive: d.Sensitive}
			continue
		}
		out[d.Name] = DataRead{Name: d.Name, Type: d.Type, Provider: d.Provider, Attributes: attrs, Sensitive: d.Sensitive}
	}
	s.recordedData, s.recordedStacks = out, stacks
	if len(out) > 0 {
		s.prog.printf("resume %s: with the data operation %s read when it planned (%d entries), not read again\n", s.sp.Stack, op, len(out))
	}
	if len(stacks) > 0 {
		s.prog.printf("resume %s: with the other stacks' outputs operation %s read when it planned (%d stacks), not read again\n", s.sp.Stack, op, len(stacks))
	}
	return nil
}
