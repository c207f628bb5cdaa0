package stack

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"

	"github.com/bulwark-iac/bulwark/core/failpoint"
	"github.com/bulwark-iac/bulwark/core/nofollow"
	"github.com/bulwark-iac/bulwark/core/parallel"
	"github.com/bulwark-iac/bulwark/core/pluginhost"
	"github.com/bulwark-iac/bulwark/core/providerlock"
	"github.com/bulwark-iac/bulwark/core/providers"
	"github.com/bulwark-iac/bulwark/core/spec"
	"github.com/bulwark-iac/bulwark/core/state"
)

// Provider is what an operation needs of a running provider.
// *pluginhost.Plugin is one; unit tests use in-process fakes.
type Provider interface {
	Source() string
	Protocol() int
	Schema() *providers.GetSchemaResponse
	ValidateResource(ctx context.Context, req *providers.ValidateResourceRequest) (providers.Diagnostics, error)
	Read(ctx context.Context, req *providers.ReadRequest) (*providers.ReadResponse, error)
	Create(ctx context.Context, req *providers.CreateRequest) (*providers.CreateResponse, error)
	Update(ctx context.Context, req *providers.UpdateRequest) (*providers.UpdateResponse, error)
	// Import reads a resource by id for a take-over: the provider's Import
	// when it has one, else Read by id.
	Import(ctx context.Context, req *providers.ImportRequest) (*providers.ImportResponse, error)
	// Delete is called by deleteResource alone.
	Delete(ctx context.Context, req *providers.DeleteRequest) (*providers.DeleteResponse, error)

	// The optional abilities are asked about, never found by asserting a
	// type. ReadsMany says whether ReadMany is one call (else it reads one
	// after the other); ValidatesMany the same for ValidateMany.
	ReadsMany() bool
	ReadMany(ctx context.Context, reqs []*providers.ReadRequest) ([]pluginhost.ReadResult, error)
	ValidatesMany() bool
	ValidateMany(ctx context.Context, reqs []*providers.ValidateResourceRequest) ([]pluginhost.ValidateResult, error)
	// Release gives up a claim; a provider that cannot answers an error
	// that wraps providers.ErrReleaseUnsupported.
	Release(ctx context.Context, req *providers.ReleaseRequest) (*providers.ReleaseResponse, error)
	// ReadData reads a data source (the schema's Capabilities.ReadData).
	ReadData(ctx context.Context, req *providers.ReadDataRequest) (*providers.ReadDataResponse, error)
}

// Starter starts the providers of one command and stops them all on Close.
type Starter interface {
	Start(ctx context.Context, cfg pluginhost.Config) (Provider, error)
	Close()
}

// plugins starts real plugin processes.
type plugins struct{ h *pluginhost.Host }

func (p plugins) Start(ctx context.Context, cfg pluginhost.Config) (Provider, error) {
	pl, err := p.h.Start(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return pl, nil
}

func (p plugins) Close() { p.h.Close() }

// providerFor returns the source and config of a local provider name: from
// the spec when it declares it, else (a resource recorded in the state under
// a provider the spec no longer declares) the recorded source with its
// default config.
func (s *session) providerFor(name, recordedSource string) (string, map[string]any) {
	if p, ok := s.sp.Providers[name]; ok {
		// A value not known without the variables' values (validate's
		// spec, resolve.ExpandUnknown) is left out, as for a resource.
		cfg, _ := knownConfig(p.Config)
		return p.Source, cfg
	}
	if recordedSource != "" {
		return recordedSource, nil
	}
	return name, nil
}

// startProviders starts the named local providers, each with its own data
// folder under the stack's folder.
func (s *session) startProviders(ctx context.Context, names []string, st *state.State) error {
	sources := map[string]string{}
	for _, r := range st.Resources {
		sources[r.Provider] = r.Source
	}
	sort.Strings(names)
	names = slices.Compact(names)
	large := s.largeWork(st)
	var cfgs []pluginhost.Config
	for _, n := range names {
		if _, ok := s.plugins[n]; ok {
			continue
		}
		src, cfg := s.providerFor(n, sources[n])
		pc := pluginhost.Config{Name: n, Source: src, Config: cfg, DataDir: filepath.Join(s.dataRoot(), n), ReadOnly: s.readOnly(), HugeHeap: large[n]}
		// The data folders are made here, never through a link planted in
		// their place (the host's MkdirAll would follow it).
		// Nor through a stack folder that is a link (on a backend off this
		// machine the file backend, which refuses one, never looks at it).
		if err := nofollow.CheckDir(s.dir); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("provider %s: data folder: %w", n, err)
		}
		var above []string
		for d := filepath.Dir(s.dataRoot()); s.dataDir == "" && len(above) < 2; d = filepath.Dir(d) {
			if _, err := os.Lstat(d); !errors.Is(err, os.ErrNotExist) {
				break
			}
			above = append(above, d)
		}
		if made, err := nofollow.Mkdir(s.dataRoot(), 0o700); err != nil {
			return fmt.Errorf("provider %s: data folder: %w", n, err)
		} else if made && s.dataDir == "" {
			s.freshData, s.freshDirs = s.dataRoot(), above
		}
		if _, err := nofollow.Mkdir(pc.DataDir, 0o700); err != nil {
			return fmt.Errorf("provider %s: data folder: %w", n, err)
		}
		if terraformSource(src) {
			var constraint string
			if sp, ok := s.sp.Providers[n]; ok {
				constraint = sp.Version
			}
			if err := s.terraformPlugin(ctx, &pc, src, constraint); err != nil {
				return err
			}
			// A saved plan's apply runs the bytes the plan read through
			// (the host refuses others: pluginhost's verifiedCopy).
			pc.SHA256 = s.opts.savedTerraform[src]
		} else if lf := s.opts.ProviderLock; lf != nil {
			e, ok := lf.Providers[src]
			if !ok {
				return &providerlock.NotPinnedError{Source: src, Path: s.opts.LockPath}
			}
			pc.SHA256 = e.SHA256
		}
		pc.Check = func(schema *providers.GetSchemaResponse) error { return s.checkProvider(n, schema) }
		cfgs = append(cfgs, pc)
	}
	// The processes start at once (each start is a fork, an exec and a
	// handshake); the first failure in name order is the one reported.
	started := make([]Provider, len(cfgs))
	err := parallel.ForEach(ctx, len(cfgs), len(cfgs), func(ctx context.Context, i int) error {
		p, err := s.host.Start(ctx, cfgs[i])
		started[i] = p
		return err
	})
	if err != nil {
		return err
	}
	for i, pc := range cfgs {
		s.plugins[pc.Name] = failProvider{started[i], s.opts.Failpoint}
		s.learnSecrets(pc.Name, started[i].Schema(), st)
	}
	if s.store != nil {
		s.store.SetSensitiveOf(s.sensitiveOf)
		if _, err := s.store.Reseal(ctx); err != nil {
			return err
		}
	}
	return nil
}

// failProvider passes the "provider" failpoint after every mutation a
// provider returns from, before anything records its result.
type failProvider struct {
	Provider
	fp *failpoint.Set
}

func (p failProvider) Create(ctx context.Context, req *providers.CreateRequest) (*providers.CreateResponse, error) {
	resp, err := p.Provider.Create(ctx, req)
	p.fp.HitAt("provider", "create")
	return resp, err
}

func (p failProvider) Update(ctx context.Context, req *providers.UpdateRequest) (*providers.UpdateResponse, error) {
	resp, err := p.Provider.Update(ctx, req)
	p.fp.HitAt("provider", "update")
	return resp, err
}

func (p failProvider) Delete(ctx context.Context, req *providers.DeleteRequest) (*providers.DeleteResponse, error) {
	resp, err := p.Provider.Delete(ctx, req)
	p.fp.HitAt("provider", "delete")
	return resp, err
}

// provider is the running provider of a local name (false: none runs).
func (s *session) provider(name string) (Provider, bool) {
	p := s.plugins[name]
	return p, p != nil
}

func (s *session) schemas() map[string]*providers.GetSchemaResponse {
	out := map[string]*providers.GetSchemaResponse{}
	for n, p := range s.plugins {
		out[n] = p.Schema()
	}
	return out
}

// providersFor lists the local providers a converge of sp over st talks to:
// the spec's, and the ones that made recorded resources the spec drops or
// moves to another provider (they are deleted through them).
func providersFor(sp *spec.Spec, st *state.State) []string {
	names := sp.ProvidersUsed()
	provider := make(map[string]string, len(sp.Resources)) // Spec.Resource walks the list
	for _, r := range sp.Resources {
		if _, dup := provider[r.Name]; !dup {
			provider[r.Name] = r.Provider
		}
	}
	for _, n := range st.Names() {
		if p, ok := provider[n]; !ok || p != st.Resources[n].Provider {
			names = append(names, st.Resources[n].Provider)
		}
	}
	return names
}

// HugeHeapResources is how many resources of one provider make a command
// large enough to prepare the heaps for it (sdk/hugeheap): the plugin's,
// and the host's once. Below it the collection Prepare costs (a few
// milliseconds of CPU in each process) buys less than it saves.
const HugeHeapResources = 100

// largeWork is which providers have at least HugeHeapResources resources
// in the spec or the state. When one does, the host's own heap is prepared
// too, once per process, beside the plugins' start.
func (s *session) largeWork(st *state.State) map[string]bool {
	inSpec, inState := map[string]int{}, map[string]int{}
	for _, r := range s.sp.Resources {
		inSpec[r.Provider]++
	}
	for _, r := range st.Resources {
		inState[r.Provider]++
	}
	large := map[string]bool{}
	for n, c := range inSpec {
		if c >= HugeHeapResources {
			large[n] = true
		}
	}
	for n, c := range inState {
		if c >= HugeHeapResources {
			large[n] = true
		}
	}
	if len(large) > 0 {
		s.opts.prepareHeap()
	}
	return large
}
