package pluginhost

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/bulwark-iac/bulwark/core/pluginhost/grpcv1"
	"github.com/bulwark-iac/bulwark/core/pluginhost/tfplugin"
	"github.com/bulwark-iac/bulwark/core/providers"
	"github.com/bulwark-iac/bulwark/sdk/hugeheap"
	"github.com/bulwark-iac/bulwark/sdk/proto/handshake"
)

// Options configure a Host.
type Options struct {
	// Dirs are the folders searched for plugins, in order (see LookupDirs).
	Dirs []string
	// Logger receives go-plugin's log and the plugins' stderr; nil discards.
	Logger hclog.Logger
	// StartTimeout bounds a plugin's handshake (default 20s).
	StartTimeout time.Duration
	// CallTimeout bounds every call to a plugin (default 10m); a plugin
	// that hangs becomes an error, never a hang of the host.
	CallTimeout time.Duration
	// Versions are the protocol versions the host offers, with their
	// plugin sets (default: bulwark's own protocol, version 1 only: grpcv1).
	// Tests add others.
	Versions map[int]plugin.PluginSet
	// CopyDir is where the private copies of plugins pinned by bulwark.lock
	// are made and run from, each host in a folder of its own (mode 0700)
	// removed by Close. Default: bulwark/plugins in the user's cache folder.
	// Never the system temp folder, which is often mounted noexec.
	CopyDir string
	// Throttled, when set, is called by Close once for each plugin whose
	// provider answered calls throttled, with what its gate saw (see
	// Plugin.Throttling): the CLI's one line of it at the end of a command.
	Throttled func(provider string, t Throttling)

	// onBusy, when set, is called before an exec refused as "text file
	// busy" is tried again (tests).
	onBusy func()
	// pause, when set, replaces the wait between a throttled call and its
	// next try (tests).
	pause func(ctx context.Context, d time.Duration) error
}

// Host starts and owns provider plugin processes. Close kills them all.
type Host struct {
	opts Options

	mu      sync.Mutex
	plugins []*Plugin
	closed  bool
	private string // folder of verified plugin copies, removed by Close
}

// New returns a Host that starts no process until Start is called.
func New(opts Options) *Host {
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	if opts.StartTimeout == 0 {
		opts.StartTimeout = 20 * time.Second
	}
	if opts.CallTimeout == 0 {
		opts.CallTimeout = 10 * time.Minute
	}
	if opts.Versions == nil {
		opts.Versions = map[int]plugin.PluginSet{grpcv1.ProtocolVersion: grpcv1.PluginSet()}
	}
	return &Host{opts: opts}
}

// Config is what a Plugin is configured with after each start.
type Config struct {
	Name    string         // local name in the spec
	Source  string         // plugin name: bulwark-provider-<Source>
	Config  map[string]any // provider configuration
	DataDir string         // folder the host assigns; created 0700 if missing
	// SHA256, when set, is the hex sha256 the plugin's bytes must have (from
	// bulwark.lock). The host then runs a private copy of the bytes it
	// verified, so the file cannot change between the check and the exec.
	SHA256 string
	// ReadOnly tells the provider that this session only reads (plan,
	// validate): it must write nothing anywhere.
	ReadOnly bool
	// Check, when set, is called with the schema each time the plugin
	// starts, before Configure: an error stops the start (the host checks
	// the provider's config against the schema's config description, and
	// learns which config values are sensitive).
	Check func(*providers.GetSchemaResponse) error
	// SchemaOnly starts the plugin and reads its schema but never calls
	// Configure: for what needs no provider config and has none to give
	// (doctor without a spec, `providers schema`). A provider whose config
	// only a spec can give (a region, an endpoint) would refuse an empty one.
	// Only Schema, Protocol and Path are meaningful on such a plugin.
	SchemaOnly bool
	// Terraform says the plugin is a provider built for Terraform or
	// OpenTofu (plugin protocol 5 or 6, Terraform's handshake): it runs
	// behind a tfplugin.Adapter. Its executable is Path (found by the
	// caller from its source address), never looked up by Source.
	Terraform bool
	// Path, when set, is the plugin's executable (else Find looks up
	// bulwark-provider-<Source> in the host's folders).
	Path string
	// Version is the provider's version, for a Terraform provider's
	// schema (its protocol does not say it).
	Version string
	// HugeHeap asks the plugin to prepare its heap for much work
	// (sdk/hugeheap: the hint in its environment). A plugin on an older sdk,
	// or a Terraform provider, ignores it.
	HugeHeap bool
}

// Start starts the plugin for cfg.Source, reads its schema and configures
// it. The returned Plugin belongs to the Host.
func (h *Host) Start(ctx context.Context, cfg Config) (*Plugin, error) {
	path := cfg.Path
	if path == "" {
		var err error
		if path, err = Find(h.opts.Dirs, cfg.Source); err != nil {
			return nil, err
		}
	}
	if cfg.DataDir != "" {
		if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
			return nil, fmt.Errorf("provider %s: data folder: %w", cfg.Name, err)
		}
	}
	run := path
	if cfg.SHA256 != "" {
		var err error
		if run, err = h.verifiedCopy(cfg.Source, path, cfg.SHA256); err != nil {
			return nil, err
		}
	}
	p := &Plugin{host: h, cfg: cfg, path: path, run: run, reading: newGate(nil), writing: newGate(nil)}
	p.reads.one, p.reads.many = p.read, p.readMany
	p.creates.one, p.creates.many = p.create, p.createMany
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil, fmt.Errorf("provider %s: host is closed", cfg.Name)
	}
	h.plugins = append(h.plugins, p)
	h.mu.Unlock()
	if _, err := p.ensure(ctx); err != nil {
		return nil, err
	}
	return p, nil
}

// Close kills every plugin process the host started. It is safe to call more
// than once.
func (h *Host) Close() {
	h.mu.Lock()
	h.closed = true
	ps := h.plugins
	h.plugins = nil
	h.mu.Unlock()
	if h.opts.Throttled != nil {
		for _, p := range ps {
			if t := p.Throttling(); t.Throttled > 0 {
				h.opts.Throttled(p.cfg.Name, t)
			}
		}
	}
	var wg sync.WaitGroup
	for _, p := range ps {
		wg.Add(1)
		go func(p *Plugin) {
			defer wg.Done()
			p.kill()
		}(p)
	}
	wg.Wait()
	h.mu.Lock()
	if h.private != "" {
		os.RemoveAll(h.private)
		os.Remove(filepath.Dir(h.private)) // only when no other host uses it
		h.private = ""
	}
	h.mu.Unlock()
}

// Plugin is one provider, served by a plugin process that is restarted if it
// dies. Its methods are safe for concurrent use.
type Plugin struct {
	host *Host
	cfg  Config
	path string // where it was found
	run  string // what is executed: path, or a verified private copy

	mu       sync.Mutex
	client   *plugin.Client
	prov     providers.Interface
	schema   *providers.GetSchemaResponse
	protocol int
	pid      int
	starting *pluginStart // a start in flight (see ensure), or nil

	reads   join[*providers.ReadRequest, *providers.ReadResponse]     // concurrent Reads, joined into ReadManys
	creates join[*providers.CreateRequest, *providers.CreateResponse] // concurrent Creates, joined into CreateManys

	// reading and writing bound the calls at once once the provider
	// throttles them (see gate): reads and validations through one,
	// Creates, Updates, Deletes, Releases and claiming Imports through the
	// other, as an API's read and write quotas are apart (a throttled
	// Create slows no Read). Every exported call goes through one once
	// (see gated), the calls inside it (read, create, readMany, …) never
	// again.
	reading, writing *gate
}

// Name is the provider's local name.
func (p *Plugin) Name() string { return p.cfg.Name }

// Source is the plugin's name.
func (p *Plugin) Source() string { return p.cfg.Source }

// Path is the executable the plugin runs from.
func (p *Plugin) Path() string { return p.path }

// Protocol is the negotiated protocol version.
func (p *Plugin) Protocol() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.protocol
}

// PID is the process id of the current plugin process (0 when none runs).
func (p *Plugin) PID() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.pid
}

// Schema is the schema read when the plugin first started.
func (p *Plugin) Schema() *providers.GetSchemaResponse {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.schema
}

// ensure returns a live provider, starting (and configuring) the process
// when there is none or the last one exited.
//
// The start runs without p.mu: a restart takes a handshake, GetSchema and
// Configure (up to StartTimeout and CallTimeout), and nothing else of the
// plugin's waits behind it: Schema, PID and Protocol answer at once, a call
// whose context ends while it waits for the restart returns, and kill
// (Close) waits only for the start to end before killing what it started.
// Calls that find a start in flight wait for it and share its process: one
// restart, not one per call. When the start failed because its own
// caller's context ended, a waiting call starts the plugin itself; any
// other failure is every waiting call's.
func (p *Plugin) ensure(ctx context.Context) (providers.Interface, error) {
	for {
		p.mu.Lock()
		p.host.mu.Lock()
		closed := p.host.closed
		p.host.mu.Unlock()
		if closed {
			p.mu.Unlock()
			// Close has killed every process: starting one now would leave
			// it to nobody.
			return nil, fmt.Errorf("provider %s: host is closed", p.cfg.Name)
		}
		if p.client != nil && !p.client.Exited() {
			prov := p.prov
			p.mu.Unlock()
			return prov, nil
		}
		if st := p.starting; st != nil {
			p.mu.Unlock()
			select {
			case <-st.done:
			case <-ctx.Done():
				return nil, fmt.Errorf("provider %s: waiting for the plugin to start: %w", p.cfg.Name, context.Cause(ctx))
			}
			if st.err != nil && !st.retry {
				return nil, st.err
			}
			continue
		}
		if p.client != nil {
			p.client.Kill()
			p.client, p.prov, p.pid = nil, nil, 0
		}
		st := &pluginStart{done: make(chan struct{})}
		p.starting = st
		p.mu.Unlock()

		client, prov, schema, err := p.start(ctx)
		p.mu.Lock()
		p.starting = nil
		if err == nil {
			p.host.mu.Lock()
			closed := p.host.closed
			p.host.mu.Unlock()
			if closed {
				client.Kill()
				err = fmt.Errorf("provider %s: host is closed", p.cfg.Name)
			}
		}
		if err == nil {
			p.client, p.prov, p.schema = client, prov, schema
			p.protocol = client.NegotiatedVersion()
			if rc := client.ReattachConfig(); rc != nil {
				p.pid = rc.Pid
			}
		}
		st.err, st.retry = err, err != nil && ctx.Err() != nil
		close(st.done)
		p.mu.Unlock()
		if err != nil {
			return nil, err
		}
		return prov, nil
	}
}

// pluginStart is a start in flight (see ensure): done closes when it ends,
// with err its failure; retry says the failure was its caller's context
// ending, which is no answer for another caller.
type pluginStart struct {
	done  chan struct{}
	err   error
	retry bool
}

// start launches a process of the plugin, reads its schema, checks it and
// configures it. It holds no lock: ensure installs what it returns.
func (p *Plugin) start(ctx context.Context) (*plugin.Client, providers.Interface, *providers.GetSchemaResponse, error) {
	client, rpc, err := p.launch(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	name := handshake.PluginName
	if p.cfg.Terraform {
		name = tfplugin.PluginName
	}
	raw, err := rpc.Dispense(name)
	if err != nil {
		client.Kill()
		return nil, nil, nil, fmt.Errorf("provider %s: %w", p.cfg.Name, err)
	}
	if tp, ok := raw.(*tfplugin.Provider); ok {
		raw = tfplugin.NewAdapter(tp, p.cfg.Source, p.cfg.Version)
	}
	prov, ok := raw.(providers.Interface)
	if !ok {
		client.Kill()
		return nil, nil, nil, fmt.Errorf("provider %s: plugin dispensed %T, not a provider", p.cfg.Name, raw)
	}
	ctx, cancel := context.WithTimeout(ctx, p.host.opts.CallTimeout)
	defer cancel()
	schema, err := prov.GetSchema(ctx, &providers.GetSchemaRequest{})
	if err == nil {
		err = p.oneLine("GetSchema", diagErr(p.cfg.Name, "GetSchema", schema.Diagnostics))
	}
	if err != nil {
		client.Kill()
		return nil, nil, nil, translate(p.cfg.Name, "GetSchema", err)
	}
	if p.cfg.Check != nil {
		if err := p.cfg.Check(schema); err != nil {
			client.Kill()
			return nil, nil, nil, err
		}
	}
	if !p.cfg.SchemaOnly {
		resp, err := prov.Configure(ctx, &providers.ConfigureRequest{Config: p.cfg.Config, DataDir: p.cfg.DataDir, ReadOnly: p.cfg.ReadOnly})
		if err == nil {
			err = p.oneLine("Configure", diagErr(p.cfg.Name, "Configure", resp.Diagnostics))
		}
		if err != nil {
			client.Kill()
			return nil, nil, nil, translate(p.cfg.Name, "Configure", err)
		}
	}
	return client, prov, schema, nil
}

// execAttempts bounds the execs of one start refused as "text file busy"
// (see launch).
const execAttempts = 10

// launch starts a process of the plugin and completes go-plugin's
// handshake with it. An exec refused with ETXTBSY is tried again, a little
// later each time: on Linux a file is busy while any process holds it open
// for writing, and a child this process forks holds every descriptor this
// process had open at the fork until the child's own exec, among them
// another start's verified copy (verifiedCopy) still being written. Two
// plugins pinned by bulwark.lock and started at once met it ("fork/exec
// …: text file busy"); the window closes within milliseconds, at that
// child's exec (golang/go#22315; the go command retries the same way).
func (p *Plugin) launch(ctx context.Context) (*plugin.Client, plugin.ClientProtocol, error) {
	for attempt := 1; ; attempt++ {
		cmd := exec.Command(p.run)
		setParentDeathSignal(cmd)
		cc, offered, err := p.clientConfig(cmd)
		if err != nil {
			return nil, nil, err
		}
		client := plugin.NewClient(cc)
		rpc, err := client.Client()
		if err == nil {
			return client, rpc, nil
		}
		// go-plugin has killed the process it started; what that process
		// started (a wrapper script's child still holding stdout) would
		// keep client.Kill waiting for the pipes to close, past
		// StartTimeout. The group goes first. (The leader is not reaped
		// while a member holds the pipes, so the group's id is still
		// its own.)
		killGroup(cmd)
		client.Kill()
		if !errors.Is(err, syscall.ETXTBSY) || attempt == execAttempts {
			return nil, nil, startError(p.cfg.Name, p.path, offered, err, cmd.ProcessState)
		}
		if p.host.opts.onBusy != nil {
			p.host.opts.onBusy()
		}
		t := time.NewTimer(time.Duration(attempt) * 5 * time.Millisecond)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, nil, startError(p.cfg.Name, p.path, offered, err, cmd.ProcessState)
		}
	}
}

// clientConfig is go-plugin's configuration to start cmd, and the protocol
// versions it offers.
func (p *Plugin) clientConfig(cmd *exec.Cmd) (*plugin.ClientConfig, []int, error) {
	if p.cfg.Terraform {
		// Terraform's handshake and go-plugin's automatic mutual TLS, as
		// every Terraform provider expects.
		return tfplugin.ClientConfig(tfplugin.StartOptions{
			Cmd: cmd, Logger: p.host.opts.Logger.Named(p.cfg.Name), StartTimeout: p.host.opts.StartTimeout,
		}), []int{tfplugin.Protocol5, tfplugin.Protocol6}, nil
	}
	// Mutual TLS with fresh P-256 keys on both sides, not go-plugin's
	// AutoMTLS and its P-521 ones (most of a start's CPU): see the
	// handshake.HostTLS. A plugin on an older sdk still answers with
	// AutoMTLS's certificate, which go-plugin loads into tlsConfig as it
	// would have.
	tlsConfig, err := handshake.HostTLS(cmd)
	if err != nil {
		return nil, nil, fmt.Errorf("provider %s: %w", p.cfg.Name, err)
	}
	if p.cfg.HugeHeap {
		cmd.Env = append(cmd.Env, hugeheap.EnvHint+"=1")
	}
	return &plugin.ClientConfig{
		HandshakeConfig:  handshake.Config(),
		VersionedPlugins: p.host.opts.Versions,
		Cmd:              cmd,
		SkipHostEnv:      true, // HostTLS put the host's environment in cmd.Env
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		TLSConfig:        tlsConfig,
		StartTimeout:     p.host.opts.StartTimeout,
		Logger:           p.host.opts.Logger.Named(p.cfg.Name),
		GRPCDialOptions:  handshake.DialOptions(),
	}, p.host.offered(), nil
}

// check translates a call's error and, when the plugin died, drops the
// process that call used at once, so the next call starts a fresh one
// (go-plugin notices the exit only later, in the background). used is the
// generation the failing call ran on: a failure seen on a dead process
// never kills the healthy replacement another call has started since.
func (p *Plugin) check(ctx context.Context, own bool, used providers.Interface, method string, err error) error {
	err = p.oneLine(method, translate(p.cfg.Name, method, err))
	if errors.Is(err, context.Canceled) && ctx.Err() == nil {
		// Nobody cancelled the call: its connection was closed under it
		// (the process died and was dropped). That is no interruption.
		err = fmt.Errorf("provider %s: %s: %w: the connection closed", p.cfg.Name, method, ErrPluginExited)
	}
	if errors.Is(err, context.DeadlineExceeded) && own {
		// Our own call timeout ran out (the server may say so before our
		// context does): say which, not just "deadline exceeded".
		return fmt.Errorf("provider %s: %s did not answer within %s (--plugin-call-timeout): %w", p.cfg.Name, method, p.host.opts.CallTimeout, context.DeadlineExceeded)
	}
	if errors.Is(err, ErrPluginExited) {
		p.drop(used)
	}
	return err
}

// drop kills the process of generation used, if it is still the current
// one.
func (p *Plugin) drop(used providers.Interface) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.client != nil && p.prov == used {
		p.client.Kill()
		p.client, p.prov, p.pid = nil, nil, 0
	}
}

func (p *Plugin) kill() {
	p.mu.Lock()
	defer p.mu.Unlock()
	// A start in flight sees the host closed when it ends and kills what
	// it started; wait for that, so that Close leaves no process behind.
	for p.starting != nil {
		st := p.starting
		p.mu.Unlock()
		<-st.done
		p.mu.Lock()
	}
	if p.client != nil {
		p.client.Kill()
		p.client, p.prov, p.pid = nil, nil, 0
	}
}

// ValidateResource asks the provider to check one resource's config.
func (p *Plugin) ValidateResource(ctx context.Context, req *providers.ValidateResourceRequest) (providers.Diagnostics, error) {
	return gated(ctx, p, p.reading, "ValidateResource", func(ctx context.Context) (providers.Diagnostics, error) { return p.validate(ctx, req) }, throttledDiags)
}

// throttledDiags is the throttle check of a validation, whose answer is
// its diagnostics.
func throttledDiags(ds providers.Diagnostics, err error) (providers.Diagnostic, bool) {
	if d, ok := ds.Throttle(); ok {
		return d, true
	}
	return providers.IsThrottled(err)
}

// validate is one ValidateResource call.
func (p *Plugin) validate(ctx context.Context, req *providers.ValidateResourceRequest) (providers.Diagnostics, error) {
	prov, err := p.ensure(ctx)
	if err != nil {
		return nil, err
	}
	ctx, cancel, own := p.callContext(ctx)
	defer cancel()
	resp, err := prov.ValidateResource(ctx, req)
	if err != nil {
		return nil, p.check(ctx, own, prov, "ValidateResource", err)
	}
	return resp.Diagnostics, nil
}

// Read reports whether a resource exists and its attributes. When the
// provider offers ReadMany, Reads made at the same time by several
// goroutines share calls (see join): one that finds no call in flight
// goes at once. A ctx with a deadline of its own always reads alone, under
// that deadline.
func (p *Plugin) Read(ctx context.Context, req *providers.ReadRequest) (*providers.ReadResponse, error) {
	return gated(ctx, p, p.reading, "Read", func(ctx context.Context) (*providers.ReadResponse, error) { return p.readJoined(ctx, req) }, throttledErr)
}

// readJoined is Read without the gate.
func (p *Plugin) readJoined(ctx context.Context, req *providers.ReadRequest) (*providers.ReadResponse, error) {
	if _, has := ctx.Deadline(); has || !p.ReadsMany() {
		return p.read(ctx, req)
	}
	return p.reads.call(ctx, req)
}

// read is one Read call.
func (p *Plugin) read(ctx context.Context, req *providers.ReadRequest) (*providers.ReadResponse, error) {
	prov, err := p.ensure(ctx)
	if err != nil {
		return nil, err
	}
	ctx, cancel, own := p.callContext(ctx)
	defer cancel()
	resp, err := prov.Read(ctx, req)
	if err != nil {
		return nil, p.check(ctx, own, prov, "Read", err)
	}
	return resp, p.diagnostics(ctx, own, "Read", resp.Diagnostics)
}

// ReadData reads a data source; never a mutation, so it is gated as a read.
func (p *Plugin) ReadData(ctx context.Context, req *providers.ReadDataRequest) (*providers.ReadDataResponse, error) {
	return gated(ctx, p, p.reading, "ReadData", func(ctx context.Context) (*providers.ReadDataResponse, error) { return p.readData(ctx, req) }, throttledErr)
}

func (p *Plugin) readData(ctx context.Context, req *providers.ReadDataRequest) (*providers.ReadDataResponse, error) {
	prov, err := p.ensure(ctx)
	if err != nil {
		return nil, err
	}
	ctx, cancel, own := p.callContext(ctx)
	defer cancel()
	resp, err := prov.ReadData(ctx, req)
	if err != nil {
		return nil, p.check(ctx, own, prov, "ReadData", err)
	}
	return resp, p.diagnostics(ctx, own, "ReadData", resp.Diagnostics)
}

// ReadResult is one read of a ReadMany: what Read would have returned
// (providers.ReadResult).
type ReadResult = providers.ReadResult

// ReadsMany reports whether the provider offers ReadMany (its schema's
// Capabilities.ReadMany): whether a ReadMany is one call.
func (p *Plugin) ReadsMany() bool {
	s := p.Schema()
	return s != nil && s.Capabilities.ReadMany
}

// ReadMany reads every request: in one ReadMany call when the provider
// offers it (see ReadsMany), else one Read after the other. Each result is
// what Read would have returned for its request; the error is for what
// fails the whole call. A batch too large for one message (the plugin's
// gRPC server takes at most 4 MiB; reads carry their configs) is read again
// in halves. An answer of any size is taken: go-plugin lifts the host's
// limit on what it receives. The reads answered throttled are read again
// (see gatedBatch).
func (p *Plugin) ReadMany(ctx context.Context, reqs []*providers.ReadRequest) ([]ReadResult, error) {
	return gatedBatch(ctx, p, p.reading, "ReadMany", reqs, p.readMany, throttledResult)
}

// readMany is ReadMany without the gate: one call, or one after the other.
func (p *Plugin) readMany(ctx context.Context, reqs []*providers.ReadRequest) ([]ReadResult, error) {
	prov, err := p.ensure(ctx)
	if err != nil {
		return nil, err
	}
	var batch func(context.Context, []*providers.ReadRequest) ([]*providers.ReadResponse, providers.Diagnostics, error)
	if p.ReadsMany() {
		batch = func(ctx context.Context, reqs []*providers.ReadRequest) ([]*providers.ReadResponse, providers.Diagnostics, error) {
			resp, err := prov.ReadMany(ctx, &providers.ReadManyRequest{Reads: reqs})
			if resp == nil {
				return nil, nil, err
			}
			return resp.Results, resp.Diagnostics, err
		}
	}
	return batched(ctx, p, prov, "ReadMany", "Read", "reads", reqs, p.read, batch,
		func(r *providers.ReadResponse) providers.Diagnostics { return r.Diagnostics })
}

// batched is the body ReadMany and CreateMany share: reqs in one call of
// batch (nil: the provider does not offer it, and each request goes
// through one, after the other), the call's own diagnostics and its count
// of answers checked, each answer's diagnostics its result's error. A
// batch too large for one message goes again in halves (a Create's
// idempotency key makes its retry find whatever the first try made).
func batched[Q, R any](ctx context.Context, p *Plugin, prov providers.Interface, call, single, noun string, reqs []Q,
	one func(context.Context, Q) (R, error),
	batch func(context.Context, []Q) ([]R, providers.Diagnostics, error),
	diagnostics func(R) providers.Diagnostics) ([]Result[R], error) {
	out := make([]Result[R], len(reqs))
	if batch == nil || len(reqs) == 1 {
		for i, req := range reqs {
			out[i].Response, out[i].Err = one(ctx, req)
		}
		return out, nil
	}
	cctx, cancel, own := p.callContext(ctx)
	defer cancel()
	results, ds, err := batch(cctx, reqs)
	if status.Code(err) == codes.ResourceExhausted {
		half := len(reqs) / 2
		a, err := batched(ctx, p, prov, call, single, noun, reqs[:half], one, batch, diagnostics)
		if err != nil {
			return nil, err
		}
		b, err := batched(ctx, p, prov, call, single, noun, reqs[half:], one, batch, diagnostics)
		if err != nil {
			return nil, err
		}
		return append(a, b...), nil
	}
	if err != nil {
		return nil, p.check(cctx, own, prov, call, err)
	}
	if err := p.diagnostics(cctx, own, call, ds); err != nil {
		return nil, err
	}
	if len(results) != len(reqs) {
		return nil, fmt.Errorf("provider %s: %s answered %d of %d %s", p.cfg.Name, call, len(results), len(reqs), noun)
	}
	for i, r := range results {
		out[i] = Result[R]{Response: r, Err: p.diagnostics(cctx, own, single, diagnostics(r))}
	}
	return out, nil
}

// ValidateResult is one validation of a ValidateMany: what
// ValidateResource would have returned.
type ValidateResult struct {
	Diagnostics providers.Diagnostics
	Err         error
}

// ValidatesMany reports whether the provider offers ValidateMany (its
// schema's Capabilities.ValidateMany): whether a ValidateMany is one call.
func (p *Plugin) ValidatesMany() bool {
	s := p.Schema()
	return s != nil && s.Capabilities.ValidateMany
}

// ValidateMany validates every request: in one ValidateMany call when the
// provider offers it (see ValidatesMany), else one ValidateResource after
// the other. Each result is what ValidateResource would have returned; the
// error is for what fails the whole call. A batch too large for one message
// (the plugin's gRPC server takes at most 4 MiB) is validated again in
// halves. The validations answered throttled are made again (see
// gatedBatch).
func (p *Plugin) ValidateMany(ctx context.Context, reqs []*providers.ValidateResourceRequest) ([]ValidateResult, error) {
	return gatedBatch(ctx, p, p.reading, "ValidateMany", reqs, p.validateMany,
		func(r ValidateResult) (providers.Diagnostic, bool) { return throttledDiags(r.Diagnostics, r.Err) })
}

// validateMany is ValidateMany without the gate.
func (p *Plugin) validateMany(ctx context.Context, reqs []*providers.ValidateResourceRequest) ([]ValidateResult, error) {
	out := make([]ValidateResult, len(reqs))
	prov, err := p.ensure(ctx)
	if err != nil {
		return nil, err
	}
	if !p.ValidatesMany() || len(reqs) == 1 {
		for i, req := range reqs {
			out[i].Diagnostics, out[i].Err = p.validate(ctx, req)
		}
		return out, nil
	}
	cctx, cancel, own := p.callContext(ctx)
	defer cancel()
	resp, err := prov.ValidateMany(cctx, &providers.ValidateManyRequest{Resources: reqs})
	if status.Code(err) == codes.ResourceExhausted && len(reqs) > 1 {
		half := len(reqs) / 2
		a, err := p.validateMany(ctx, reqs[:half])
		if err != nil {
			return nil, err
		}
		b, err := p.validateMany(ctx, reqs[half:])
		if err != nil {
			return nil, err
		}
		return append(a, b...), nil
	}
	if err != nil {
		return nil, p.check(cctx, own, prov, "ValidateMany", err)
	}
	if err := p.diagnostics(cctx, own, "ValidateMany", resp.Diagnostics); err != nil {
		return nil, err
	}
	if len(resp.Results) != len(reqs) {
		return nil, fmt.Errorf("provider %s: ValidateMany answered %d of %d validations", p.cfg.Name, len(resp.Results), len(reqs))
	}
	for i, r := range resp.Results {
		out[i].Diagnostics = r.Diagnostics
	}
	return out, nil
}

// Import reads the resource a user takes over by id: through the provider's
// Import when its schema offers it, else through Read by id (a provider
// written before Import existed).
func (p *Plugin) Import(ctx context.Context, req *providers.ImportRequest) (*providers.ImportResponse, error) {
	g := p.reading
	if req.ClaimKey != "" {
		g = p.writing // it stamps the claim on the resource
	}
	return gated(ctx, p, g, "Import", func(ctx context.Context) (*providers.ImportResponse, error) { return p.importOne(ctx, req) }, throttledErr)
}

// importOne is Import without the gate.
func (p *Plugin) importOne(ctx context.Context, req *providers.ImportRequest) (*providers.ImportResponse, error) {
	if req.ID == "" {
		return nil, fmt.Errorf("provider %s: import %s: no id given", p.cfg.Name, req.Name)
	}
	prov, err := p.ensure(ctx)
	if err != nil {
		return nil, err
	}
	if s := p.Schema(); s == nil || !s.Capabilities.Import {
		r, err := p.readJoined(ctx, &providers.ReadRequest{Type: req.Type, Name: req.Name, ID: req.ID, Config: req.Config})
		if err != nil {
			return nil, err
		}
		return &providers.ImportResponse{Exists: r.Exists, ID: r.ID, Attributes: r.Attributes, IdempotencyKey: r.IdempotencyKey, Private: r.Private, Diagnostics: r.Diagnostics}, nil
	}
	ctx, cancel, own := p.callContext(ctx)
	defer cancel()
	resp, err := prov.Import(ctx, req)
	if err != nil {
		return nil, p.check(ctx, own, prov, "Import", err)
	}
	return resp, p.diagnostics(ctx, own, "Import", resp.Diagnostics)
}

// Release gives up a stack's claim on a resource. A plugin
// that cannot (it predates Release, or its provider does not implement it)
// answers an error that wraps providers.ErrReleaseUnsupported; the caller keeps
// the claim.
func (p *Plugin) Release(ctx context.Context, req *providers.ReleaseRequest) (*providers.ReleaseResponse, error) {
	return gated(ctx, p, p.writing, "Release", func(ctx context.Context) (*providers.ReleaseResponse, error) { return p.release(ctx, req) }, throttledErr)
}

// release is one Release call.
func (p *Plugin) release(ctx context.Context, req *providers.ReleaseRequest) (*providers.ReleaseResponse, error) {
	prov, err := p.ensure(ctx)
	if err != nil {
		return nil, err
	}
	ctx, cancel, own := p.callContext(ctx)
	defer cancel()
	resp, err := prov.Release(ctx, req)
	if errors.Is(err, providers.ErrReleaseUnsupported) {
		return nil, fmt.Errorf("provider %s: %w", p.cfg.Name, err)
	}
	if err != nil {
		return nil, p.check(ctx, own, prov, "Release", err)
	}
	return resp, p.diagnostics(ctx, own, "Release", resp.Diagnostics)
}

// Create makes a resource under req.IdempotencyKey. When the provider
// offers CreateMany, Creates made at the same time by several goroutines
// share calls (see join): one that finds no Create in flight goes at once,
// as a Create; those asked for while one is in flight go together in the
// CreateMany that follows it, each with its own key, result and error. A
// ctx with a deadline of its own always creates alone, under that
// deadline. A Create answered throttled goes again, with the same key
// (see gated).
func (p *Plugin) Create(ctx context.Context, req *providers.CreateRequest) (*providers.CreateResponse, error) {
	return gated(ctx, p, p.writing, "Create", func(ctx context.Context) (*providers.CreateResponse, error) { return p.createJoined(ctx, req) }, throttledErr)
}

// createJoined is Create without the gate.
func (p *Plugin) createJoined(ctx context.Context, req *providers.CreateRequest) (*providers.CreateResponse, error) {
	if _, has := ctx.Deadline(); has || !p.CreatesMany() {
		return p.create(ctx, req)
	}
	return p.creates.call(ctx, req)
}

// create is one Create call.
func (p *Plugin) create(ctx context.Context, req *providers.CreateRequest) (*providers.CreateResponse, error) {
	prov, err := p.ensure(ctx)
	if err != nil {
		return nil, err
	}
	ctx, cancel, own := p.callContext(ctx)
	defer cancel()
	resp, err := prov.Create(ctx, req)
	if err != nil {
		return nil, p.check(ctx, own, prov, "Create", err)
	}
	return resp, p.diagnostics(ctx, own, "Create", resp.Diagnostics)
}

// CreateResult is one Create of a CreateMany: what Create would have
// returned (providers.CreateResult).
type CreateResult = providers.CreateResult

// CreatesMany reports whether the provider offers CreateMany (its schema's
// Capabilities.CreateMany): whether a CreateMany is one call.
func (p *Plugin) CreatesMany() bool {
	s := p.Schema()
	return s != nil && s.Capabilities.CreateMany
}

// CreateMany makes every request: in one CreateMany call when the provider
// offers it (see CreatesMany), else one Create after the other. Each
// result is what Create would have returned for its request; the error is
// for what fails the whole call (a plugin that died: every Create of the
// call is then as undecided as a Create that never answered). A batch too
// large for one message is sent again in halves: whatever the first try
// made, each request's idempotency key makes its retry find it. The
// Creates answered throttled go again, in the next batch (see gatedBatch).
func (p *Plugin) CreateMany(ctx context.Context, reqs []*providers.CreateRequest) ([]CreateResult, error) {
	return gatedBatch(ctx, p, p.writing, "CreateMany", reqs, p.createMany, throttledResult)
}

// createMany is CreateMany without the gate.
func (p *Plugin) createMany(ctx context.Context, reqs []*providers.CreateRequest) ([]CreateResult, error) {
	prov, err := p.ensure(ctx)
	if err != nil {
		return nil, err
	}
	var batch func(context.Context, []*providers.CreateRequest) ([]*providers.CreateResponse, providers.Diagnostics, error)
	if p.CreatesMany() {
		batch = func(ctx context.Context, reqs []*providers.CreateRequest) ([]*providers.CreateResponse, providers.Diagnostics, error) {
			resp, err := prov.CreateMany(ctx, &providers.CreateManyRequest{Creates: reqs})
			if resp == nil {
				return nil, nil, err
			}
			return resp.Results, resp.Diagnostics, err
		}
	}
	return batched(ctx, p, prov, "CreateMany", "Create", "creates", reqs, p.create, batch,
		func(r *providers.CreateResponse) providers.Diagnostics { return r.Diagnostics })
}

// Update changes a resource in place; one answered throttled goes again.
func (p *Plugin) Update(ctx context.Context, req *providers.UpdateRequest) (*providers.UpdateResponse, error) {
	return gated(ctx, p, p.writing, "Update", func(ctx context.Context) (*providers.UpdateResponse, error) { return p.update(ctx, req) }, throttledErr)
}

// update is one Update call.
func (p *Plugin) update(ctx context.Context, req *providers.UpdateRequest) (*providers.UpdateResponse, error) {
	prov, err := p.ensure(ctx)
	if err != nil {
		return nil, err
	}
	ctx, cancel, own := p.callContext(ctx)
	defer cancel()
	resp, err := prov.Update(ctx, req)
	if err != nil {
		return nil, p.check(ctx, own, prov, "Update", err)
	}
	return resp, p.diagnostics(ctx, own, "Update", resp.Diagnostics)
}

// Delete removes a resource. Only the core's deletion path may call it.
// One answered throttled goes again.
func (p *Plugin) Delete(ctx context.Context, req *providers.DeleteRequest) (*providers.DeleteResponse, error) {
	return gated(ctx, p, p.writing, "Delete", func(ctx context.Context) (*providers.DeleteResponse, error) { return p.delete(ctx, req) }, throttledErr)
}

// delete is one Delete call.
func (p *Plugin) delete(ctx context.Context, req *providers.DeleteRequest) (*providers.DeleteResponse, error) {
	prov, err := p.ensure(ctx)
	if err != nil {
		return nil, err
	}
	ctx, cancel, own := p.callContext(ctx)
	defer cancel()
	resp, err := prov.Delete(ctx, req)
	if err != nil {
		return nil, p.check(ctx, own, prov, "Delete", err)
	}
	if err := p.diagnostics(ctx, own, "Delete", resp.Diagnostics); err != nil {
		return nil, err
	}
	return resp, nil
}

// callContext bounds one call by the host's CallTimeout. own reports
// whether that timeout is what bounds it (not an earlier deadline of the
// caller's): a deadline exceeded is then reported as the call timeout.
func (p *Plugin) callContext(ctx context.Context) (_ context.Context, _ context.CancelFunc, own bool) {
	timeout := p.host.opts.CallTimeout
	d, ok := ctx.Deadline()
	own = !ok || time.Until(d) > timeout
	ctx, cancel := context.WithTimeout(ctx, timeout)
	return ctx, cancel, own
}

// diagnostics turns a response's diagnostics into an error. A failure
// that comes back as the call's own timeout runs out is the plugin giving
// up on the deadline the host passed it (the sdk reports that as a
// diagnostic): it is reported as the timeout it is.
func (p *Plugin) diagnostics(ctx context.Context, own bool, method string, ds providers.Diagnostics) error {
	err := p.oneLine(method, diagErr(p.cfg.Name, method, ds))
	if d, ok := ctx.Deadline(); err != nil && ok && time.Until(d) < 100*time.Millisecond {
		if own {
			return fmt.Errorf("provider %s: %s did not answer within %s (--plugin-call-timeout): %w", p.cfg.Name, method, p.host.opts.CallTimeout, context.DeadlineExceeded)
		}
		return fmt.Errorf("provider %s: %s: %w (%v)", p.cfg.Name, method, context.DeadlineExceeded, err)
	}
	return err
}

// offered lists the protocol versions the host offers, ascending.
func (h *Host) offered() []int {
	var vs []int
	for v := range h.opts.Versions {
		vs = append(vs, v)
	}
	sort.Ints(vs)
	return vs
}
