package stack

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/bulwark-iac/bulwark/core/engine"
	"github.com/bulwark-iac/bulwark/core/plan"
	"github.com/bulwark-iac/bulwark/core/pluginhost/grpcv1"
	"github.com/bulwark-iac/bulwark/core/pluginhost/tfplugin"
	"github.com/bulwark-iac/bulwark/core/state"
	"github.com/bulwark-iac/bulwark/core/storage"
)

// metaPrefix starts the ids of an update's own steps; resource names cannot
// contain a colon, so they never collide.
const metaPrefix = "update:"

func isMeta(id string) bool { return strings.HasPrefix(id, metaPrefix) }

// SupportedProtocols are the provider contract versions this host speaks.
func SupportedProtocols() []int { return []int{grpcv1.ProtocolVersion} }

// TerraformProtocols are the versions of Terraform's plugin protocol this
// bulwark speaks to providers built for Terraform or OpenTofu.
func TerraformProtocols() []int { return []int{tfplugin.Protocol5, tfplugin.Protocol6} }

// updateSteps are the four steps an update (and a rollback) runs before
// apply's own pipeline: verify, compatibility, backup, stage. Each one
// aborts on failure: nothing has been mutated yet.
func (s *session) updateSteps(opType string, pl *plan.Plan, target int) []*engine.Step {
	meta := func(name string, deps ...string) *engine.Step {
		return &engine.Step{ID: metaPrefix + name, Action: name, DependsOn: deps, Policy: engine.Abort}
	}
	verify := meta("verify")
	verify.Execute = func(ctx context.Context, _ string) error {
		// The spec against the schemas of the plugins now running, and
		// each plugin answering: the configs were validated by this
		// operation's plan (once each), and each plugin is asked again
		// now, about one of them.
		if err := s.validate(ctx); err != nil {
			return err
		}
		return s.answering(ctx)
	}
	compat := meta("compatibility", verify.ID)
	compat.Execute = func(ctx context.Context, _ string) error {
		for name, p := range s.plugins {
			spoken := SupportedProtocols()
			if terraformSource(p.Source()) {
				spoken = TerraformProtocols()
			}
			if !slices.Contains(spoken, p.Protocol()) {
				return fmt.Errorf("provider %s speaks protocol %d; this bulwark speaks %v", name, p.Protocol(), spoken)
			}
		}
		// The ladder was checked before the first step; checked again
		// here, as the step that owns it.
		return pl.Check(opType)
	}
	backup := meta("backup", compat.ID)
	backup.Check = func(ctx context.Context) (bool, error) {
		// A resumed update is the same operation: its backup is the state
		// from before its first part, never overwritten by a later one.
		list, err := s.be.Backups(ctx)
		return slices.ContainsFunc(list, func(b storage.BackupInfo) bool { return b.Name == s.opID }), err
	}
	backup.Execute = func(ctx context.Context, _ string) error {
		if err := s.takeBackup(ctx); err != nil {
			return fmt.Errorf("backup: %w", err)
		}
		s.opts.Failpoint.HitAt("state", "backup")
		return nil
	}
	stage := meta("stage", backup.ID)
	stage.Execute = func(context.Context, string) error {
		return s.store.ForStep(stage.ID).Mutate(func(st *state.State) error {
			if opType == "rollback" {
				st.Staged = target
				return nil
			}
			n := nextRevision(st)
			st.Revisions = append(st.Revisions, state.Revision{
				N: n, Op: s.opID, Time: s.opts.Now().UTC(), File: s.sp.File, Spec: string(s.sp.Recorded()),
				Provider: s.sp.Override, Status: state.RevisionStaged, User: s.holder.User, Targets: slices.Clone(s.opts.Targets),
				Variables: s.variableValues(), SensitiveVariables: s.sensitiveVariableNames(),
			})
			st.Staged = n
			s.pruneRevisions(st)
			return nil
		})
	}
	stage.Compensate = func(ctx context.Context) (string, error) {
		return "", s.store.MutateNow(ctx, func(st *state.State) error {
			s.unstage(st)
			return nil
		})
	}
	return []*engine.Step{verify, compat, backup, stage}
}
