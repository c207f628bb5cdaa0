package stack

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/bulwark-iac/bulwark/core/engine"
	"github.com/bulwark-iac/bulwark/core/journal"
	"github.com/bulwark-iac/bulwark/core/secrets"
	"github.com/bulwark-iac/bulwark/core/spec"
	"github.com/bulwark-iac/bulwark/core/state"
	"github.com/bulwark-iac/bulwark/core/storage"
)

// OpRotate is the type of `bulwark secrets rotate`.
const OpRotate = "rotate"

// The rotation's steps, in order. Each is journaled and safe to run again.
const (
	// stepRotateBegin records the new provider beside the old (the state's
	// Secrets.Next): from then on, values sealed under either key open.
	stepRotateBegin = metaPrefix + "secrets-begin"
	// stepRotateRevisions seals every kept revision's body (its spec text
	// and variable values) under the new key.
	stepRotateRevisions = metaPrefix + "secrets-revisions"
	// stepRotateBackups stores every backup again, sealed under the new
	// key (and recording the new provider), each in place, atomically.
	stepRotateBackups = metaPrefix + "secrets-backups"
	// stepRotateState puts every resource and the metadata again, sealed
	// under the new key, with the new provider as the stack's, in one
	// atomic commit, then writes the state's snapshot under it.
	stepRotateState = metaPrefix + "secrets-state"
)

// ErrRotateUnsupported refuses a rotation bulwark cannot make.
var ErrRotateUnsupported = errors.New("cannot rotate")

// RotateSecrets re-seals every sealed value of the stack's state under a
// new key: the provider opts.Secrets.Provider names, else a new key of the
// same provider (a new passphrase from BULWARK_SECRETS_NEW_PASSPHRASE, a
// new KMS data key). It is a journaled operation of four steps
// (begin, revisions, backups, state) under the lock; a crash in the middle
// is finished by `bulwark resume` given both the old and the new
// credentials. Once it ends, the journal is compacted (compactRetired), and
// the old key opens nothing the stack keeps: its state, revisions, backups
// and journal are sealed under the new one or hold no sealed value.
func RotateSecrets(ctx context.Context, sp *spec.Spec, opts Options) (*Result, error) {
	if opts.Secrets == nil {
		return nil, fmt.Errorf("secrets rotate: %w: no secrets source", ErrRotateUnsupported)
	}
	opts.rotating = true
	s, err := open(ctx, sp, opts, false)
	if err != nil {
		return nil, err
	}
	defer s.close()
	if st := s.store.Snapshot(); st.Serial == 0 && len(st.Resources) == 0 {
		return nil, fmt.Errorf("secrets rotate: stack %s has no state yet: choose its provider at its first apply (%s)", sp.Stack, secrets.FlagProvider)
	}
	cur := s.store.Snapshot().Secrets
	if cur != nil && cur.Next != nil {
		// A rotation that failed part way recorded its new provider: it
		// is finished, to that provider, whatever this one asks.
		s.prog.printf("secrets rotate %s: finishing the rotation to %s that an earlier one began\n", sp.Stack, cur.Next.Name())
		return s.rotate(ctx, cur.Next, nil), nil
	}
	src := s.opts.Secrets
	target := src.Provider
	if target == "" {
		target = cur.Name()
	}
	if err := secrets.CheckProvider(target); err != nil {
		return nil, err
	}
	if target == secrets.ProviderKeyFile && cur.Name() == secrets.ProviderKeyFile && src.NewKey == "" {
		return nil, fmt.Errorf("secrets rotate: %w: the new key is not set: set %s to it (the base64 of 32 random bytes, e.g. `head -c 32 /dev/urandom | base64`), and keep the current one where it is", secrets.ErrNoKey, secrets.EnvNewKey)
	}
	pass := src.NewPassphrase
	if pass == "" && cur.Name() != secrets.ProviderPassphrase {
		pass = src.Passphrase
	}
	if target == secrets.ProviderPassphrase && pass == "" {
		return nil, fmt.Errorf("secrets rotate: %w: the new passphrase is not set: set %s (and keep %s the current one)", secrets.ErrNoKey, secrets.EnvNewPassphrase, secrets.EnvPassphrase)
	}
	next, key, err := src.NewConfig(ctx, target, pass)
	if err != nil {
		return nil, fmt.Errorf("secrets rotate: %w", err)
	}
	if cur != nil && next.KeyID == cur.KeyID {
		return nil, fmt.Errorf("secrets rotate: %w: the new key is the stack's key already (id %s)", ErrRotateUnsupported, next.KeyID)
	}
	return s.rotate(ctx, next, key), nil
}

// rotate runs the rotation to next (key: its key; nil when resuming, the
// sealer knows it from the state's Secrets.Next).
func (s *session) rotate(ctx context.Context, next *secrets.Config, key *secrets.Key) *Result {
	sl := s.sealing().Sealer.(*sealer)
	op := &engine.Operation{ID: s.opID, Type: OpRotate, Spec: s.sp.File, Parallelism: 1}
	op.Steps = []*engine.Step{
		{ID: stepRotateBegin, Action: "reseal", Policy: engine.Abort, Execute: func(ctx context.Context, _ string) error {
			st := s.store.Snapshot()
			if st.Secrets != nil && st.Secrets.Next != nil {
				return nil // resumed: recorded already
			}
			m := fullMeta(st)
			with := st.Secrets.Clone()
			if with == nil {
				with = &secrets.Config{Provider: secrets.ProviderKeyFile}
			}
			if with.KeyID == "" {
				// A key file stack recorded as nothing: its key's
				// fingerprint is recorded too, so that until the
				// rotation ends the new key alone is not taken for it
				// (both are needed).
				b, err := sl.get(false)
				if err != nil {
					return err
				}
				with.KeyID = b.Key().ID()
			}
			with.Next = next.Clone()
			m.Secrets = with
			if err := s.store.WriteNow(ctx, storage.Change{Meta: m}); err != nil {
				return err
			}
			sl.adopt(with, key)
			return nil
		}},
		{ID: stepRotateRevisions, Action: "reseal", Policy: engine.Abort, DependsOn: []string{stepRotateBegin}, Execute: func(ctx context.Context, _ string) error {
			if _, err := sl.get(false); err != nil {
				return err
			}
			for _, rev := range s.store.Snapshot().Revisions {
				body, err := s.be.Revision(ctx, rev.N)
				if errors.Is(err, storage.ErrNotFound) {
					continue
				}
				if err != nil {
					return fmt.Errorf("revision %d: %w", rev.N, err)
				}
				if err := s.store.Writer().PutRevision(ctx, rev.N, *body); err != nil {
					return fmt.Errorf("revision %d: %w", rev.N, err)
				}
				s.opts.Failpoint.Hit("state")
			}
			return nil
		}},
		{ID: stepRotateBackups, Action: "reseal", Policy: engine.Abort, DependsOn: []string{stepRotateRevisions}, Execute: func(ctx context.Context, _ string) error {
			return s.resealBackups(ctx, sl)
		}},
		{ID: stepRotateState, Action: "reseal", Policy: engine.Abort, DependsOn: []string{stepRotateBackups}, Execute: func(ctx context.Context, _ string) error {
			st := s.store.Snapshot()
			if st.Secrets == nil || st.Secrets.Next == nil {
				return nil // resumed: done already
			}
			ch := storage.Change{}
			for _, n := range st.Names() {
				ch.Put = append(ch.Put, st.Resources[n])
			}
			m := fullMeta(st)
			m.Secrets = st.Secrets.Next.Clone()
			ch.Meta = m
			if err := s.store.WriteNow(ctx, ch); err != nil {
				return err
			}
			sl.UseSecrets(m.Secrets)
			// The snapshot the next load starts from, under the new key:
			// from here the old key is needed for nothing.
			if err := s.store.Writer().Checkpoint(ctx, s.opts.KeepOperations); err != nil {
				return fmt.Errorf("write the re-sealed state: %w", err)
			}
			s.opts.Failpoint.Hit("state")
			return nil
		}},
	}
	s.prog.opStart(s.opID, OpRotate)
	res := s.eng.Run(ctx, op)
	out := s.finish(op, res)
	if res.Outcome == engine.Succeeded {
		s.compactRetired(ctx)
	}
	now := s.store.Snapshot().Secrets
	out.Secrets = now.Name()
	if out.Err != nil && now != nil && now.Next != nil {
		out.Err = fmt.Errorf("%w; the rotation is unfinished: the state records the new key (%s, key id %s) beside the old one (%s, key id %s), and both credentials are needed until it ends: run `bulwark secrets rotate %s` again with both to finish it",
			out.Err, now.Next.Name(), now.Next.KeyID, now.Name(), now.KeyID, s.sp.File)
	}
	s.prog.opEnd(out)
	return out
}

// resealBackups stores every backup again under the key the rotation
// moves to, recording its provider (so a backup restored or copied later
// needs the new key, and only it). A backup is read with either key (the
// sealer knows both while the state records the next provider) and
// replaced atomically: killed in the middle, each backup is whole under one
// key or the other, and the step run again finishes the rest.
func (s *session) resealBackups(ctx context.Context, sl *sealer) error {
	if _, err := sl.get(false); err != nil {
		return err
	}
	st := s.store.Snapshot()
	if st.Secrets == nil || st.Secrets.Next == nil {
		return nil // resumed: done already
	}
	next := st.Secrets.Next.Clone()
	list, err := s.be.Backups(ctx)
	if err != nil {
		return fmt.Errorf("backups: %w", err)
	}
	if len(list) == 0 {
		return nil
	}
	rep, ok := s.store.Writer().(storage.BackupReplacer)
	if !ok {
		return fmt.Errorf("backups: %w: backend %s cannot re-seal its backups", ErrRotateUnsupported, s.be.Location())
	}
	for _, b := range list {
		// Reading a backup tells the sealer the provider the backup
		// records (the old one): the sealer keeps sealing under the new.
		restore := sl.hold()
		bst, err := s.be.Backup(ctx, b.Name)
		restore()
		if errors.Is(err, storage.ErrNotFound) {
			continue // pruned meanwhile
		}
		if err != nil {
			return fmt.Errorf("backup %s: %w", b.Name, err)
		}
		bst.Secrets = next.Clone()
		if err := rep.ReplaceBackup(ctx, b.Name, bst); err != nil {
			return fmt.Errorf("backup %s: %w", b.Name, err)
		}
		s.opts.Failpoint.Hit("state")
	}
	return nil
}

// resumeRotate finishes an interrupted rotation: with the new provider
// recorded beside the old, its steps run again (each is idempotent); with
// none recorded, it either changed nothing or finished its last write, and
// is closed as what it is.
func (s *session) resumeRotate(ctx context.Context, target UnfinishedError, recs []journal.Record) (*Result, error) {
	st := s.store.Snapshot()
	if st.Secrets != nil && st.Secrets.Next != nil {
		s.prog.printf("resume %s: secrets rotate %s was interrupted; finishing it (sealing under %s)\n", s.sp.Stack, target.Op, st.Secrets.Next.Name())
		return s.rotate(ctx, st.Secrets.Next, nil), nil
	}
	// The new provider is no longer recorded beside the old: either the
	// begin step never recorded it (nothing changed), or the state step
	// made it the stack's (the state is re-sealed).
	done := false
	for _, r := range recs {
		if r.Kind == journal.KindStep && r.Step == stepRotateBegin && r.Phase == "execute" && r.Status == journal.StepOK {
			done = true
		}
	}
	if !done {
		// The new provider was never recorded: nothing was re-sealed
		// that the state uses.
		err := fmt.Errorf("the interrupted secrets rotate %s is closed: it had changed nothing (the state is sealed under %s, as before); run it again", target.Op, st.Secrets.Name())
		if _, jerr := s.jr.Append(ctx, journal.Record{Op: target.Op, Kind: journal.KindOp, Type: target.Type, Status: journal.OpFailed, Error: err.Error()}); jerr != nil {
			return nil, jerr
		}
		return &Result{Op: target.Op, Type: target.Type, Outcome: engine.Failed, Err: err}, nil
	}
	s.prog.printf("resume %s: secrets rotate %s had re-sealed the state under %s; recording its end\n", s.sp.Stack, target.Op, st.Secrets.Name())
	if _, err := s.jr.Append(ctx, journal.Record{Op: target.Op, Kind: journal.KindOp, Type: target.Type, Status: journal.OpSucceeded}); err != nil {
		return nil, err
	}
	s.compactRetired(ctx)
	return &Result{Op: target.Op, Type: target.Type, Outcome: engine.Succeeded, Secrets: st.Secrets.Name()}, nil
}

// compactRetired compacts the journal once a rotation has ended: every
// finished operation, the rotation included, becomes its summary line,
// which holds no sealed value. The records it replaces are what still held
// values sealed under the retired key: what an operation's plan read
// (Record.Data), the changes a backend keeps in its journal (Record.Change;
// the rotation's own first step committed one under the old key). A
// failure, or a crash before it, leaves them to the next command that takes
// the lock: its first checkpoint finds the rotation's records whole and
// compacts the same way (keepOperations).
func (s *session) compactRetired(ctx context.Context) {
	if err := s.store.Writer().Checkpoint(ctx, journal.KeepNone); err != nil {
		s.opts.Reporter.Note(fmt.Sprintf("warning: the journal's older records, sealed under the retired key, are not compacted yet (the next command that takes the lock compacts them): %v", s.opts.Redactor.Error(err)))
	}
}

// fullMeta is st's metadata with its revisions as the state holds them
// (their variable values included, which the backend seals), for a commit
// that changes only the secrets provider.
func fullMeta(st *state.State) *storage.Meta {
	m := storage.MetaOf(st)
	m.Revisions = slices.Clone(st.Revisions)
	for i := range m.Revisions {
		m.Revisions[i].Spec = "" // the bodies are PutRevision's
	}
	return m
}
