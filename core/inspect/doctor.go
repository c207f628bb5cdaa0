package inspect

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/bulwark-iac/bulwark/core/journal"
	"github.com/bulwark-iac/bulwark/core/nofollow"
	"github.com/bulwark-iac/bulwark/core/pluginhost"
	"github.com/bulwark-iac/bulwark/core/providers"
	"github.com/bulwark-iac/bulwark/core/spec"
	"github.com/bulwark-iac/bulwark/core/stack"
	"github.com/bulwark-iac/bulwark/core/state"
	"github.com/bulwark-iac/bulwark/core/storage"
)

// Check is one line of doctor's report.
type Check struct {
	Name   string `json:"name"`   // plugin mock, state, journal, lock, interventions
	OK     bool   `json:"ok"`     // nothing needs attention
	Detail string `json:"detail"` // what was found
	Fix    string `json:"fix,omitempty"`
}

// Doctor checks what a stack depends on without changing anything: the
// plugins (found, start, protocol), the state (parses, matches its
// checksum), the journal (unfinished operations), the lock (held, stale) and
// pending interventions. With sp nil it checks every plugin found and every
// stack under the state folder.
func Doctor(ctx context.Context, sp *spec.Spec, opts stack.Options) []Check {
	opts.Defaults()
	var checks []Check
	checks = append(checks, doctorPlugins(ctx, sp, opts)...)
	var stacks []string
	if sp != nil {
		stacks = []string{sp.Stack}
	} else if opts.ListStacks != nil && opts.StateURL != "" {
		names, err := opts.ListStacks(ctx)
		if err != nil {
			checks = append(checks, Check{Name: "backend", Detail: err.Error(),
				Fix: "check that the backend --state names is reachable and the credentials are right"})
		}
		stacks = names
	} else {
		entries, _ := os.ReadDir(opts.StateDir)
		for _, e := range entries {
			if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
				stacks = append(stacks, e.Name())
			}
		}
	}
	for _, name := range stacks {
		specPath := "SPEC" // the spec of this stack, which doctor was not given
		if sp != nil {
			specPath = sp.File
		}
		checks = append(checks, doctorStack(ctx, opts, sp, name, specPath)...)
	}
	for i := range checks {
		checks[i].Detail = opts.Redactor.Redact(checks[i].Detail)
	}
	return checks
}

// doctorPlugins checks that each plugin starts and speaks a protocol this
// bulwark speaks. With a spec it also configures each one with the spec's
// config (read-only). Without a spec there is no config to give: a provider
// whose config only a spec can give (the aws region, an endpoint) would
// refuse an empty one, which says nothing about the install. So it is
// started and its schema read, never configured, and the check says so.
func doctorPlugins(ctx context.Context, sp *spec.Spec, opts stack.Options) []Check {
	var sources []string
	local := map[string]string{} // source -> the spec's local name for it
	if sp != nil {
		for _, n := range sp.ProvidersUsed() {
			src := n // a provider the spec does not declare is looked up by its name
			if p, ok := sp.Providers[n]; ok {
				src = p.Source
			}
			if _, seen := local[src]; !seen {
				local[src] = n
				sources = append(sources, src)
			}
		}
	} else {
		found, err := pluginhost.List(opts.PluginDirs)
		if err != nil {
			return []Check{{Name: "plugins", Detail: err.Error(), Fix: "make the plugin folders readable (" + strings.Join(opts.PluginDirs, ", ") + "), or pass --plugin-dir"}}
		}
		for _, f := range found {
			sources = append(sources, f.Name)
		}
		if len(sources) == 0 {
			return []Check{{Name: "plugins", Detail: "no provider plugin found in " + strings.Join(opts.PluginDirs, ", "),
				Fix: "run `make build` (or `make install`), or pass --plugin-dir / set BULWARK_PLUGIN_DIR"}}
		}
	}
	sort.Strings(sources)
	tmp, err := os.MkdirTemp("", "bulwark-doctor-")
	if err != nil {
		return []Check{{Name: "plugins", Detail: err.Error(), Fix: "make the temporary folder writable (TMPDIR)"}}
	}
	defer os.RemoveAll(tmp)
	host := pluginhost.New(opts.HostOptions())
	defer host.Close()
	var out []Check
	for _, src := range sources {
		out = append(out, doctorPlugin(ctx, host, sp, local[src], src, filepath.Join(tmp, src), opts))
	}
	return out
}

// doctorPlugin checks one plugin; name is the spec's local name for it ("" without a spec).
func doctorPlugin(ctx context.Context, host *pluginhost.Host, sp *spec.Spec, name, src, dataDir string, opts stack.Options) Check {
	c := Check{Name: "plugin " + src}
	var cfg map[string]any
	if sp != nil {
		cfg = sp.Providers[name].Config
	}
	// Doctor only looks: the provider must write nothing (a world: DIR or
	// root: in its config is the user's live data).
	pc := pluginhost.Config{Name: src, Source: src, Config: cfg, DataDir: dataDir, ReadOnly: true, SchemaOnly: sp == nil}
	var configProblems error
	pc.Check = func(schema *providers.GetSchemaResponse) error {
		// Before Configure, whose error may quote a sensitive value.
		stack.LearnProviderConfig(opts.Redactor, cfg, schema)
		if sp != nil {
			// The config against the provider's own description of it,
			// at the spec's line.
			configProblems = sp.CheckProviderConfig(name, schema)
			return configProblems
		}
		return nil
	}
	if lf := opts.ProviderLock; lf != nil {
		pc.SHA256 = lf.Providers[src].SHA256
	}
	p, err := host.Start(ctx, pc)
	var nf *pluginhost.NotFoundError
	var pe *pluginhost.ProtocolError
	var de *pluginhost.DiagnosticsError
	switch {
	case errors.As(err, &nf):
		c.Detail, c.Fix = err.Error(), "run `make build` (or `make install`), or pass --plugin-dir / set BULWARK_PLUGIN_DIR to the folder that holds "+pluginhost.Prefix+src
	case configProblems != nil:
		c.Detail, c.Fix = "config: "+err.Error(), "correct provider "+name+"'s config in "+sp.File+" at the line named (`bulwark providers schema "+src+"` lists its keys)"
	case errors.As(err, &de) && de.Method == "Configure":
		c.Detail, c.Fix = "refuses the spec's config: "+err.Error(), "change provider "+name+"'s config in "+sp.File+" (or the environment it reads) as the message says; `bulwark providers schema "+src+"` lists its keys"
	case errors.As(err, &pe):
		c.Detail, c.Fix = err.Error(), fmt.Sprintf("install a %s plugin built for provider protocol %v (rebuild it against this bulwark's sdk: `make build`), or a bulwark that speaks %s", src, pe.Host, pe.Plugin)
	case errors.Is(err, pluginhost.ErrPluginExited):
		c.Detail, c.Fix = "exited while starting: "+err.Error(), "run `BULWARK_LOG=debug bulwark doctor` to see the plugin's own output (its stderr), then fix or rebuild it"
	case err != nil:
		c.Detail, c.Fix = "does not start: "+err.Error(), "run `BULWARK_LOG=debug bulwark doctor` to see the plugin's own output (its stderr); a plugin built from this checkout is rebuilt by `make build`"
	default:
		supported := false
		for _, v := range stack.SupportedProtocols() {
			supported = supported || v == p.Protocol()
		}
		c.OK = supported
		c.Detail = fmt.Sprintf("%s %s, protocol %d, %s", p.Schema().ProviderName, p.Schema().ProviderVersion, p.Protocol(), p.Path())
		if sp == nil {
			c.Detail += "; config not checked without a spec (`bulwark doctor SPEC` checks it)"
		}
		if !supported {
			c.Fix = fmt.Sprintf("this bulwark speaks provider protocol %v: install a %s plugin built for it (`make build`)", stack.SupportedProtocols(), src)
		}
	}
	return c
}

// inspector is what a backend may tell of its lock besides Holder: the
// record a dead holder left (the file backend).
type inspector interface {
	Inspect(ctx context.Context) (live, stale *storage.Holder, err error)
}

// doctorStack checks one stack's storage; specPath is how its fixes name
// the stack's spec.
func doctorStack(ctx context.Context, opts stack.Options, sp *spec.Spec, name, specPath string) []Check {
	var out []Check
	be, err := opts.Backend(ctx, name, state.Sealing{})
	if err != nil {
		return []Check{{Name: "state " + name, Detail: err.Error(), Fix: "check --state (the URL of the stack's storage)"}}
	}
	defer be.Close()
	where := be.Location()
	if opts.StateURL != "" {
		// A backend off this machine: say where, that it answers, and
		// the version of its schema (postgres).
		c := Check{Name: "backend " + name, OK: true, Detail: where}
		if s, err := be.Stats(ctx); errors.Is(err, storage.ErrMoved) {
			// It answered: with the migration's marker, which the
			// state check below reports.
			c.Detail += " (answers: the stack was moved from here)"
		} else if err != nil {
			c.OK, c.Detail = false, err.Error()
			c.Fix = "check that the server at " + where + " is reachable and the credentials are right (postgres: PGPASSWORD, ~/.pgpass; s3: the AWS credential chain)"
		} else if s.SchemaVersion != 0 {
			c.Detail += fmt.Sprintf(" (schema version %d)", s.SchemaVersion)
		}
		out = append(out, c)
	}
	st, err := be.Load(ctx)
	switch {
	case errors.Is(err, nofollow.ErrRefused):
		out = append(out, Check{Name: "state " + name, Detail: err.Error(),
			Fix: "put the real file or folder in place of the link: bulwark never follows links in its state folder"})
	case errors.Is(err, storage.ErrMoved):
		// Fenced by state migrate: nothing here is the stack's any more
		// (its journal, its lock), so nothing else is checked. That is
		// the migration's result, not a fault: the check passes and
		// names the new place. Advice to restore this place from its
		// backups would split the stack in two.
		detail := "stack " + name + " was moved from here (" + where + ")"
		var me *storage.MovedError
		if errors.As(err, &me) {
			detail += " to " + me.To
			if me.Migration != "" {
				detail += " by migration " + me.Migration
			}
			detail += ": use --state " + me.To + " from now on"
			if me.Migration != "" {
				detail += " (if the migration was interrupted, `bulwark resume " + specPath + "` here finishes it)"
			}
		} else {
			detail += ": " + err.Error()
		}
		return append(out, Check{Name: "state " + name, OK: true, Detail: detail})
	case errors.Is(err, storage.ErrLineage):
		out = append(out, Check{Name: "lineage " + name, Detail: err.Error(),
			Fix: "the state and the journal come from two histories: put back a state (say, from the backups in " + where + ") whose lineage is the journal's, or move the foreign file away"})
	case err != nil:
		out = append(out, Check{Name: "state " + name, Detail: err.Error(),
			Fix: "restore the newest good copy from the backups in " + where + " (written before every update)"})
	case st.Serial == 0 && len(st.Resources) == 0:
		out = append(out, Check{Name: "state " + name, OK: true, Detail: "no state yet (nothing applied)"})
	default:
		out = append(out, Check{Name: "state " + name, OK: true,
			Detail: fmt.Sprintf("%d resource(s), revision %d, serial %d, checksum ok", len(st.Resources), st.Current, st.Serial)})
	}
	if err != nil {
		st = nil
	}
	// Streamed: every line checked, the operations' own records kept
	// (what stack.Unfinished is told by), never the whole journal.
	var recs []journal.Record
	n := 0
	bad, err := storage.ScanJournal(ctx, be, nil, func(r journal.Record) error {
		n++
		// With a spec, the creates' Execute records too: what tells a
		// create whose outcome is unknown (stack.PendingCreates).
		if r.Kind == journal.KindOp || (sp != nil && r.Kind == journal.KindStep && r.Phase == "execute" && (r.Action == "create" || r.Action == "replace")) {
			recs = append(recs, r)
		}
		return nil
	})
	for _, b := range bad {
		// The backend says how to repair it where it keeps it (a file's
		// line, a database's row).
		fix := b.Repair() + ": the lines around it are intact"
		if b.Fix != "" {
			fix = b.Repair() + ": the records around it are intact"
		}
		out = append(out, Check{Name: "journal " + name, Detail: fmt.Sprintf("%s:%d is not a journal record (%v)", b.Path, b.Line, b.Err), Fix: fix})
	}
	if err != nil {
		fix := "the journal must be a regular file of bulwark's in the stack folder, not a link"
		if !strings.HasPrefix(be.Location(), "file://") {
			fix = "the journal at " + be.Location() + " could not be read: see the error, and check the backend (reachable, its credentials, its permissions)"
		}
		out = append(out, Check{Name: "journal " + name, Detail: err.Error(), Fix: fix})
	} else if u := stack.Unfinished(recs); len(u) > 0 {
		last := u[len(u)-1]
		out = append(out, Check{Name: "journal " + name, Detail: last.Error(), Fix: "run `bulwark resume " + specPath + "` to finish it (from the journal)"})
		for _, pc := range stack.PendingCreates(sp, st, recs) {
			out = append(out, Check{Name: "unknown create " + name,
				Detail: fmt.Sprintf("%s: the create of %s (%s, provider %s, %s) started %s and never answered: its provider takes no idempotency key, so whether it exists is unknown and resume stops there",
					pc.Op, pc.Resource, pc.Type, pc.Provider, pc.Source, pc.Started.UTC().Format(time.RFC3339)),
				Fix: fmt.Sprintf("look for it with the provider's own tools; then `bulwark import %s %s ID` if it exists, or `bulwark resume %s --not-created %s` if nothing was made (an ack does not settle it)",
					specPath, pc.Resource, specPath, pc.Resource)})
		}
	} else if len(bad) == 0 {
		out = append(out, Check{Name: "journal " + name, OK: true, Detail: fmt.Sprintf("%d record(s), no unfinished operation", n)})
	}
	if st != nil && st.Lineage != "" {
		out = append(out, Check{Name: "lineage " + name, OK: true, Detail: st.Lineage})
	}
	if st != nil {
		out = append(out, doctorSizes(ctx, be, name))
	}
	var live, stale *storage.Holder
	if in, ok := be.(inspector); ok {
		live, stale, err = in.Inspect(ctx)
	} else {
		live, err = be.Holder(ctx)
	}
	switch {
	case err != nil:
		out = append(out, Check{Name: "lock " + name, Detail: err.Error(),
			Fix: "make " + where + " a folder of this user's, with no link in it: the lock must be a regular file bulwark can read"})
	case live != nil:
		out = append(out, Check{Name: "lock " + name, Detail: "held by " + live.String(), Fix: "wait for that operation to finish"})
	case stale != nil:
		out = append(out, Check{Name: "lock " + name, OK: true, Detail: "free; a stale record of " + stale.String() + " (a killed process) will be taken over by the next command"})
	default:
		out = append(out, Check{Name: "lock " + name, OK: true, Detail: "free"})
	}
	if st != nil && len(st.Interventions) > 0 {
		for _, i := range st.Interventions {
			out = append(out, Check{Name: "intervention " + name, Detail: fmt.Sprintf("%s failed at %s: %s (since %s)", i.Op, i.Resource, i.Error, i.Since.Format("2006-01-02 15:04:05")),
				Fix: "fix it by hand, then run `bulwark ack " + i.Op + "`"})
		}
	} else {
		out = append(out, Check{Name: "interventions " + name, OK: true, Detail: "none pending"})
	}
	return out
}

// doctorSizes says how much the stack's storage holds and what retention
// keeps of it (docs/architecture.md, "State backends and retention").
func doctorSizes(ctx context.Context, be storage.Backend, name string) Check {
	s, err := be.Stats(ctx)
	if err != nil {
		return Check{Name: "sizes " + name, Detail: err.Error()}
	}
	return Check{Name: "sizes " + name, OK: true, Detail: fmt.Sprintf(
		"state %s (%d revision(s), %s of revision texts), journal %s (%d operation(s) whole, %d compacted), backups %d (%s); kept: the last %d revisions (--keep-revisions), %d backups, %d operations whole (--keep-operations)",
		kb(s.StateBytes), s.Revisions, kb(s.RevisionBytes), kb(s.JournalBytes), s.WholeOps, s.SummarizedOps,
		s.Backups, kb(s.BackupBytes), stack.DefaultKeepRevisions, stack.KeepBackups, journal.DefaultKeepOperations)}
}

func kb(n int64) string { return fmt.Sprintf("%.1f KB", float64(n)/1024) }
