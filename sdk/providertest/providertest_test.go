package providertest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bulwark-iac/bulwark/sdk"
)

// note is a test provider that keeps the contract (unless a flaw is set):
// one type, note, kept in a JSON file in the data folder.
type note struct {
	flaw string // which rule to break; "" keeps them all

	mu     sync.Mutex
	path   string
	memory []*record // the world when flaw is "memory_only"
}

type record struct {
	ID, Name, Key string
	Attrs         sdk.Attributes
}

func (n *note) GetSchema(context.Context, *sdk.GetSchemaRequest) (*sdk.GetSchemaResponse, error) {
	attrs := []sdk.Attribute{
		{Name: "text", Type: sdk.TypeString, Required: true, ForceNew: true},
		{Name: "pinned", Type: sdk.TypeBool},
		{Name: "id", Type: sdk.TypeString, Computed: true},
	}
	if n.flaw == "schema_duplicate_attribute" {
		attrs = append(attrs, sdk.Attribute{Name: "pinned", Type: sdk.TypeNumber})
	}
	rt := sdk.ResourceType{Name: "note", Attributes: attrs}
	if n.flaw == "claims_coexist" {
		// Notes are kept by name, one at a time: a claim that a note with
		// another text can exist beside the first is false.
		rt.Coexistence = sdk.Coexistence{WhenDiffers: []string{"text"}}
	}
	return &sdk.GetSchemaResponse{ProviderName: "note", ProviderVersion: "0.0.1",
		ResourceTypes: []sdk.ResourceType{rt},
		DataSources: []sdk.DataSourceType{{Name: "note", Attributes: []sdk.Attribute{
			{Name: "id", Type: sdk.TypeString, Required: true},
			{Name: "text", Type: sdk.TypeString, Computed: true},
		}}},
		Capabilities: sdk.Capabilities{IdempotencyKeys: n.flaw != "legacy" && n.flaw != "claims_foreign_undeclared", DeleteChecksKey: n.flaw != "legacy"}}, nil
}

func (n *note) Configure(_ context.Context, req *sdk.ConfigureRequest) (*sdk.ConfigureResponse, error) {
	for k := range req.Config {
		return &sdk.ConfigureResponse{Diagnostics: sdk.Diagnostics{sdk.AttributeErrorf([]string{k}, "unknown key")}}, nil
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.path = filepath.Join(req.DataDir, "notes.json")
	if n.flaw == "writes_when_read_only" && req.ReadOnly {
		// Persists something in a plan, as the mock's counters once were.
		stamp := []byte(strconv.FormatInt(time.Now().UnixNano(), 10))
		if err := os.WriteFile(filepath.Join(req.DataDir, "configured"), stamp, 0o600); err != nil {
			return nil, err
		}
	}
	return &sdk.ConfigureResponse{}, nil
}

func (n *note) ValidateResource(context.Context, *sdk.ValidateResourceRequest) (*sdk.ValidateResourceResponse, error) {
	return &sdk.ValidateResourceResponse{}, nil
}

func (n *note) load() ([]*record, error) {
	if n.flaw == "memory_only" {
		return n.memory, nil
	}
	b, err := os.ReadFile(n.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	var rs []*record
	if err == nil {
		err = json.Unmarshal(b, &rs)
	}
	return rs, err
}

func (n *note) save(rs []*record) error {
	if n.flaw == "memory_only" {
		n.memory = rs
		return nil
	}
	b, err := json.Marshal(rs)
	if err != nil {
		return err
	}
	tmp := n.path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, n.path)
}

func find(rs []*record, match func(*record) bool) (int, *record) {
	for i, r := range rs {
		if match(r) {
			return i, r
		}
	}
	return -1, nil
}

func (n *note) Read(_ context.Context, req *sdk.ReadRequest) (*sdk.ReadResponse, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	rs, err := n.load()
	if err != nil {
		return nil, err
	}
	var r *record
	switch {
	case req.ID != "":
		_, r = find(rs, func(r *record) bool { return r.ID == req.ID })
	case req.IdempotencyKey != "":
		if n.flaw != "no_read_by_key" {
			_, r = find(rs, func(r *record) bool { return r.Key == req.IdempotencyKey })
		}
	default:
		_, r = find(rs, func(r *record) bool { return r.Name == req.Name })
	}
	if r == nil {
		if n.flaw == "absent_is_error" {
			return nil, fmt.Errorf("%s not found", req.Name)
		}
		return &sdk.ReadResponse{}, nil
	}
	attrs := r.Attrs
	if n.flaw == "forgets_attributes" {
		attrs = sdk.Attributes{"id": r.ID}
	}
	key := r.Key
	if n.flaw == "forgets_key" || n.flaw == "legacy" {
		key = ""
	}
	return &sdk.ReadResponse{Exists: true, ID: r.ID, Attributes: attrs, IdempotencyKey: key}, nil
}

// ReadData reads a note by id (the data source note): its text.
func (n *note) ReadData(_ context.Context, req *sdk.ReadDataRequest) (*sdk.ReadDataResponse, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	rs, err := n.load()
	if err != nil {
		return nil, err
	}
	id, _ := req.Config["id"].(string)
	_, r := find(rs, func(r *record) bool { return r.ID == id })
	if r == nil {
		return nil, fmt.Errorf("no note %q", id)
	}
	out := sdk.Attributes{"id": r.ID, "text": r.Attrs["text"]}
	switch n.flaw {
	case "data_forgets_result":
		delete(out, "text")
	case "data_unstable":
		out["text"] = strconv.FormatInt(time.Now().UnixNano(), 10)
	}
	return &sdk.ReadDataResponse{Attributes: out}, nil
}

func attributes(id string, cfg sdk.Attributes) sdk.Attributes {
	a := sdk.Attributes{"id": id}
	for k, v := range cfg {
		a[k] = v
	}
	return a
}

func (n *note) Create(_ context.Context, req *sdk.CreateRequest) (*sdk.CreateResponse, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	rs, err := n.load()
	if err != nil {
		return nil, err
	}
	if _, r := find(rs, func(r *record) bool { return r.Key == req.IdempotencyKey }); r != nil && n.flaw != "create_ignores_key" {
		return &sdk.CreateResponse{ID: r.ID, Attributes: r.Attrs}, nil
	}
	if _, r := find(rs, func(r *record) bool { return r.Name == req.Name }); r != nil && n.flaw != "create_ignores_key" {
		switch n.flaw {
		case "claims_foreign", "claims_foreign_undeclared":
			// Adopts what another Create made, as "already in place".
			return &sdk.CreateResponse{ID: r.ID, Attributes: r.Attrs}, nil
		case "conflict_uncoded", "legacy":
			return nil, fmt.Errorf("note %s already exists", req.Name)
		}
		return nil, sdk.Conflict(fmt.Sprintf("note %s already exists (id %s)", req.Name, r.ID), r.Key)
	}
	id := fmt.Sprintf("note-%s-%d", req.Name, len(rs)+1)
	r := &record{ID: id, Name: req.Name, Key: req.IdempotencyKey, Attrs: attributes(id, req.Config)}
	if err := n.save(append(rs, r)); err != nil {
		return nil, err
	}
	return &sdk.CreateResponse{ID: r.ID, Attributes: r.Attrs}, nil
}

func (n *note) Update(_ context.Context, req *sdk.UpdateRequest) (*sdk.UpdateResponse, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	rs, err := n.load()
	if err != nil {
		return nil, err
	}
	_, r := find(rs, func(r *record) bool { return r.ID == req.ID })
	if r == nil {
		return nil, fmt.Errorf("no note %s", req.ID)
	}
	if n.flaw == "update_changes_id" {
		r.ID += "-v2"
	}
	r.Attrs = attributes(r.ID, req.Config)
	return &sdk.UpdateResponse{Attributes: r.Attrs}, n.save(rs)
}

func (n *note) Delete(_ context.Context, req *sdk.DeleteRequest) (*sdk.DeleteResponse, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	rs, err := n.load()
	if err != nil {
		return nil, err
	}
	i, _ := find(rs, func(r *record) bool { return r.ID == req.ID })
	if i < 0 {
		if n.flaw == "delete_gone_fails" {
			return nil, fmt.Errorf("no note %s", req.ID)
		}
		return &sdk.DeleteResponse{}, nil
	}
	if r := rs[i]; req.ExpectedKey != "" && r.Key != req.ExpectedKey && n.flaw != "delete_ignores_key" {
		return nil, sdk.DeleteConflict(fmt.Sprintf("delete %s: note %s", req.Name, r.ID), r.Key)
	}
	return &sdk.DeleteResponse{}, n.save(append(rs[:i], rs[i+1:]...))
}

func newNote(flaw string) func(*testing.T) sdk.Provider {
	if strings.HasPrefix(flaw, "batch") {
		return func(*testing.T) sdk.Provider { return batchNote{&note{flaw: flaw}} }
	}
	if strings.HasPrefix(flaw, "claim") {
		return func(*testing.T) sdk.Provider { return claimingNote{importingNote{&note{flaw: flaw}}} }
	}
	return func(*testing.T) sdk.Provider { return &note{flaw: flaw} }
}

// batchNote is a note that implements sdk.BatchCreator: each Create of the
// call as Create answers it (unless a batch flaw is set).
type batchNote struct{ *note }

func (n batchNote) CreateMany(ctx context.Context, req *sdk.CreateManyRequest) (*sdk.CreateManyResponse, error) {
	out := &sdk.CreateManyResponse{}
	for _, r := range req.Creates {
		if n.flaw == "batch_ignores_key" {
			n.mu.Lock()
			rs, err := n.load()
			if err != nil {
				n.mu.Unlock()
				return nil, err
			}
			id := fmt.Sprintf("note-%s-%d", r.Name, len(rs)+1)
			rec := &record{ID: id, Name: r.Name + "-copy", Key: r.IdempotencyKey + "-copy", Attrs: attributes(id, r.Config)}
			err = n.save(append(rs, rec))
			n.mu.Unlock()
			if err != nil {
				return nil, err
			}
			out.Results = append(out.Results, &sdk.CreateResponse{ID: id, Attributes: rec.Attrs})
			continue
		}
		resp, err := n.Create(ctx, r)
		if err != nil {
			if n.flaw == "batch_fails_together" {
				return nil, err
			}
			resp = &sdk.CreateResponse{Diagnostics: sdk.DiagnosticsFromError(err)}
		}
		out.Results = append(out.Results, resp)
	}
	return out, nil
}

// A BatchCreator is checked directly and through gRPC, where sdk.Serve
// declares Capabilities.CreateMany for it.
func TestRunBatchCreator(t *testing.T) {
	t.Run("in-process", func(t *testing.T) { Run(t, newNote("batch"), noteConfig) })
	t.Run("grpc", func(t *testing.T) { RunGRPC(t, newNote("batch"), noteConfig) })
}

var noteConfig = Config{Resources: []Resource{
	{Type: "note", Name: "first", Config: map[string]any{"text": "hello"}, Update: map[string]any{"text": "hello", "pinned": true},
		Replacement: map[string]any{"text": "bye"},
		Data: []Data{{Type: "note",
			Config: func(id string, _ map[string]any) map[string]any { return map[string]any{"id": id} },
			Want:   func(id string, _ map[string]any) map[string]any { return map[string]any{"id": id, "text": "hello"} }}}},
	{Type: "note", Name: "second", Config: map[string]any{"text": "again", "pinned": false}, Replacement: map[string]any{"text": "anew"}},
}}

func TestRun(t *testing.T)     { Run(t, newNote(""), noteConfig) }
func TestRunGRPC(t *testing.T) { RunGRPC(t, newNote(""), noteConfig) }

// importingNote is a note that implements sdk.Importer.
type importingNote struct{ *note }

func (n importingNote) Import(ctx context.Context, req *sdk.ImportRequest) (*sdk.ImportResponse, error) {
	r, err := n.Read(ctx, &sdk.ReadRequest{Type: req.Type, Name: req.Name, ID: req.ID, Config: req.Config})
	if err != nil {
		return nil, err
	}
	return &sdk.ImportResponse{Exists: r.Exists, ID: r.ID, Attributes: r.Attributes, IdempotencyKey: r.IdempotencyKey}, nil
}

// An Importer is checked directly and through gRPC, where sdk.Serve
// declares Capabilities.Import for it.
func TestRunImporter(t *testing.T) {
	newImporter := func(*testing.T) sdk.Provider { return importingNote{&note{}} }
	t.Run("in-process", func(t *testing.T) { Run(t, newImporter, noteConfig) })
	t.Run("grpc", func(t *testing.T) { RunGRPC(t, newImporter, noteConfig) })
}

// claimingNote is a note that stamps and releases claims (sdk.Importer
// with a claim key, sdk.Releaser), unless a claim flaw is set.
type claimingNote struct{ importingNote }

func (n claimingNote) Import(ctx context.Context, req *sdk.ImportRequest) (*sdk.ImportResponse, error) {
	if req.ClaimKey == "" {
		return n.importingNote.Import(ctx, req)
	}
	var out *sdk.ImportResponse
	err := n.rekey(req.ID, func(r *record) error {
		if n.flaw != "claims_over_a_live_claim" && !sdk.Claimable(r.Key, req.ClaimKey, req.ReplacesKey) {
			return sdk.Conflict("note "+r.Name+" is claimed", r.Key)
		}
		r.Key = req.ClaimKey
		out = &sdk.ImportResponse{Exists: true, ID: r.ID, Attributes: r.Attrs, IdempotencyKey: r.Key, Claimed: true}
		return nil
	})
	if out == nil && err == nil {
		out = &sdk.ImportResponse{}
	}
	return out, err
}

func (n claimingNote) Release(_ context.Context, req *sdk.ReleaseRequest) (*sdk.ReleaseResponse, error) {
	err := n.rekey(req.ID, func(r *record) error {
		switch {
		case r.Key == sdk.ReleasedKey(req.Key):
		case r.Key != req.Key && n.flaw != "claim_released_by_anyone":
			return sdk.Conflict("note "+r.Name+" carries another claim", r.Key)
		default:
			r.Key = sdk.ReleasedKey(req.Key)
		}
		return nil
	})
	return &sdk.ReleaseResponse{Released: err == nil}, err
}

// rekey changes the record with id through f, and saves it (nothing when
// there is none).
func (n claimingNote) rekey(id string, f func(*record) error) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	rs, err := n.load()
	if err != nil {
		return err
	}
	_, r := find(rs, func(r *record) bool { return r.ID == id })
	if r == nil {
		return nil
	}
	if err := f(r); err != nil {
		return err
	}
	return n.save(rs)
}

// A provider that stamps claims has them checked (the claims subtest runs,
// it is not skipped), directly and through gRPC.
func TestRunClaims(t *testing.T) {
	newClaiming := func(*testing.T) sdk.Provider { return claimingNote{importingNote{&note{}}} }
	t.Run("in-process", func(t *testing.T) { Run(t, newClaiming, noteConfig) })
	t.Run("grpc", func(t *testing.T) { RunGRPC(t, newClaiming, noteConfig) })
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^TestFlawed$", "-test.v")
	cmd.Env = append(os.Environ(), "PROVIDERTEST_FLAW=claims_kept")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestFlawed/note.first/claims") {
		t.Fatalf("the claims check did not run and pass: %v\n%s", err, out)
	}
}

// RunPlugin is called first thing: this test's body also runs in the plugin
// process.
func TestRunPlugin(t *testing.T) { RunPlugin(t, newNote(""), noteConfig) }

func TestRunPluginInSubtest(t *testing.T) {
	t.Run("as plugin", func(t *testing.T) {
		RunPlugin(t, newNote(""), Config{Resources: noteConfig.Resources[1:]})
	})
}

func TestSharedDataDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "made")
	cfg := noteConfig
	cfg.DataDir = dir
	RunGRPC(t, newNote(""), cfg)
	b, err := os.ReadFile(filepath.Join(dir, "notes.json"))
	if err != nil || strings.TrimSpace(string(b)) != "[]" {
		t.Fatalf("the suite left %q (%v) in the data folder; it should clean up", b, err)
	}
}

// TestFlawed is run by TestFlawedProvidersFail in a child process, with the
// flaw to test in $PROVIDERTEST_FLAW; it fails on purpose.
func TestFlawed(t *testing.T) {
	flaw := os.Getenv("PROVIDERTEST_FLAW")
	if flaw == "" {
		t.Skip("run by TestFlawedProvidersFail")
	}
	RunGRPC(t, newNote(flaw), noteConfig)
}

// Every flaw makes the subtests named for the broken rule fail, and only
// those: the checks can fail, and say which rule is broken.
func TestFlawedProvidersFail(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for flaw, want := range map[string][]string{
		"schema_duplicate_attribute": {"schema"},
		"no_read_by_key":             {"first/read_by_idempotency_key", "first/read_reports_key", "first/read_by_key_after_restart", "first/read_only_session", "second/read_by_idempotency_key", "second/read_reports_key", "second/read_by_key_after_restart", "second/read_only_session"},
		"absent_is_error":            {"first/read_absent", "first/create_conflict", "first/read_only_session", "first/delete", "second/read_absent", "second/create_conflict", "second/read_only_session", "second/delete"},
		"forgets_attributes":         {"first/read_by_id", "first/update", "second/read_by_id"},
		"create_ignores_key":         {"first/create_same_key_again", "first/create_conflict", "first/delete", "second/create_same_key_again", "second/create_conflict", "second/delete"},
		"update_changes_id":          {"first/update", "first/delete_protected", "first/delete_checks_key", "first/delete"},
		"delete_gone_fails":          {"first/delete_again", "second/delete_again"},
		"memory_only":                {"first/read_by_key_after_restart", "first/read_only_session", "first/read_data", "second/read_by_key_after_restart", "second/read_only_session"},
		// Ownership: a provider that takes over a taken identity
		// fails, whether or not it declares the capability.
		"claims_foreign":            {"first/create_conflict", "second/create_conflict"},
		"claims_foreign_undeclared": {"first/create_conflict", "second/create_conflict"},
		"conflict_uncoded":          {"first/create_conflict", "second/create_conflict"},
		"forgets_key":               {"first/read_reports_key", "second/read_reports_key"},
		"writes_when_read_only":     {"first/read_only_session", "first/read_data", "second/read_only_session"},
		// Data sources: every result answered, the same each time.
		"data_forgets_result": {"first/read_data"},
		"data_unstable":       {"first/read_data"},
		// CreateMany (sdk.BatchCreator): each Create keeps its key, and
		// one failing fails no other.
		"batch_ignores_key":    {"first/create_many", "first/create_many_fresh", "second/create_many", "second/create_many_fresh"},
		"batch_fails_together": {"first/create_many", "second/create_many"},
		// Claims: a second import of the same id is refused,
		// and only the holder releases a claim.
		"claims_over_a_live_claim": {"first/claims", "second/claims"},
		"claim_released_by_anyone": {"first/claims", "second/claims"},
		// Coexistence: a type that says two can exist at once must hold
		// both (the host makes the new one before it deletes the old one).
		"claims_coexist": {"first/coexist", "second/coexist"},
		// A Delete that says it checks the owner must: one expecting
		// another key deletes nothing.
		"delete_ignores_key": {"first/delete_checks_key", "second/delete_checks_key"},
	} {
		t.Run(flaw, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(exe, "-test.run=^TestFlawed$", "-test.v")
			cmd.Env = append(os.Environ(), "PROVIDERTEST_FLAW="+flaw)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("the suite passed a provider with the flaw %s:\n%s", flaw, out)
			}
			failed := map[string]bool{}
			for _, m := range regexp.MustCompile(`--- FAIL: TestFlawed/(\S+)`).FindAllStringSubmatch(string(out), -1) {
				name := strings.TrimPrefix(m[1], "note.")
				if strings.Count(name, "/") == 1 || name == "schema" || name == "configure" {
					failed[name] = true
				}
			}
			for _, w := range want {
				if !failed[w] {
					t.Errorf("flaw %s: subtest %s did not fail", flaw, w)
				}
				delete(failed, w)
			}
			for f := range failed {
				t.Errorf("flaw %s: subtest %s failed too", flaw, f)
			}
			if t.Failed() {
				t.Logf("output:\n%s", out)
			}
		})
	}
}

// A provider written before the ownership rules (no capability, no key on
// Read, a plain error for a taken name) still passes, and the output says
// which checks were skipped and why.
func TestLegacyProviderPassesAndIsTold(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^TestFlawed$", "-test.v")
	cmd.Env = append(os.Environ(), "PROVIDERTEST_FLAW=legacy")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the suite failed a legacy provider: %v\n%s", err, out)
	}
	for _, want := range []string{
		"--- SKIP: TestFlawed/note.first/read_reports_key",
		"does not declare Capabilities.IdempotencyKeys",
		"whether with a conflict diagnostic is not checked",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the output does not say %q:\n%s", want, out)
		}
	}
}

func TestRunPattern(t *testing.T) {
	for name, want := range map[string]string{
		"TestX":               "^TestX$",
		"TestX/as_plugin#01":  "^TestX$/^as_plugin#01$",
		"TestX/a.b(c)/[d]+e*": `^TestX$/^a\.b\(c\)$/^\[d\]\+e\*$`,
	} {
		if got := runPattern(name); got != want {
			t.Errorf("runPattern(%q) = %q, want %q", name, got, want)
		}
	}
}

// TestResourceChecksOrder checks the table of resource checks: each name
// once (they are subtest names authors -run), and each check placed after
// a check that establishes what it needs.
func TestResourceChecksOrder(t *testing.T) {
	seen := map[string]bool{}
	have := needNothing
	for _, c := range resourceChecks() {
		if seen[c.name] {
			t.Errorf("check %q is in the table twice", c.name)
		}
		seen[c.name] = true
		if c.needs > have {
			t.Errorf("check %q needs %d, but no check before it establishes more than %d", c.name, c.needs, have)
		}
		have = max(have, c.gives)
	}
}
