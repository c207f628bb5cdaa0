package providertest

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bulwark-iac/bulwark/sdk"
)

// unknownAttribute is the attribute the suite adds to a config to see it
// rejected.
const unknownAttribute = "providertest_unknown_attribute"

// cleanupTimeout bounds the Delete a resource's cleanup makes.
const cleanupTimeout = time.Minute

// opener returns a provider instance living for t: the host side, and the
// provider itself when the suite reaches it through a transport in this
// process (nil otherwise).
type opener func(t *testing.T) (host, raw sdk.Provider)

// suite is one run of the checks.
type suite struct {
	cfg     Config
	open    opener
	served  bool // sdk.Serve's server is between the suite and the provider
	dataDir string
	runID   string
	schema  *sdk.GetSchemaResponse
}

func run(t *testing.T, cfg Config, served bool, open opener) {
	t.Helper()
	if len(cfg.Resources) == 0 {
		t.Fatal("providertest: Config.Resources is empty: name at least one resource to create")
	}
	for i, r := range cfg.Resources {
		if r.Type == "" || r.Name == "" {
			t.Fatalf("providertest: Config.Resources[%d] needs a Type and a Name", i)
		}
	}
	s := &suite{cfg: cfg, open: open, served: served, dataDir: cfg.DataDir, runID: strings.ToLower(rand.Text()[:10])}
	if s.dataDir == "" {
		s.dataDir = t.TempDir()
	} else if err := os.MkdirAll(s.dataDir, 0o700); err != nil {
		t.Fatalf("providertest: data folder: %v", err)
	}
	p, raw := open(t)
	t.Run("schema", func(t *testing.T) { s.checkSchema(t, p, raw) })
	if !t.Run("configure", func(t *testing.T) { s.configure(t, p) }) {
		return // nothing below can work
	}
	for _, r := range cfg.Resources {
		t.Run(r.Type+"."+r.Name, func(t *testing.T) { s.checkResource(t, p, r) })
	}
}

func (s *suite) checkSchema(t *testing.T, p, raw sdk.Provider) {
	resp, err := p.GetSchema(t.Context(), &sdk.GetSchemaRequest{})
	if resp == nil {
		resp = &sdk.GetSchemaResponse{}
	}
	must(t, "GetSchema", s.fold(t, "GetSchema", err, resp.Diagnostics))
	s.schema = resp
	if resp.ProviderName == "" {
		t.Error("GetSchema: no provider name")
	}
	if resp.ProviderVersion == "" {
		t.Error("GetSchema: no provider version")
	}
	types := map[string]bool{}
	for _, rt := range resp.ResourceTypes {
		if rt.Name == "" {
			t.Error("GetSchema: a resource type has no name")
		}
		if types[rt.Name] {
			t.Errorf("GetSchema: resource type %q appears twice", rt.Name)
		}
		types[rt.Name] = true
		attrs := map[string]bool{}
		for _, a := range rt.Attributes {
			where := fmt.Sprintf("GetSchema: %s.%s", rt.Name, a.Name)
			switch {
			case a.Name == "":
				t.Errorf("GetSchema: an attribute of %s has no name", rt.Name)
			case attrs[a.Name]:
				t.Errorf("%s appears twice", where)
			}
			attrs[a.Name] = true
			if a.Type < sdk.TypeString || a.Type > sdk.TypeMap {
				t.Errorf("%s has no valid type (%d)", where, a.Type)
			}
			if a.Computed && a.Required {
				t.Errorf("%s is computed (set by the provider, never configured) and also required", where)
			}
			if a.Computed && a.ForceNew {
				t.Errorf("%s is computed (never configured) and also force_new (a configured change replaces the resource)", where)
			}
		}
	}
	dataTypes := map[string]bool{}
	for _, dt := range resp.DataSources {
		if dt.Name == "" {
			t.Error("GetSchema: a data source has no name")
		}
		if dataTypes[dt.Name] {
			t.Errorf("GetSchema: data source %q appears twice", dt.Name)
		}
		dataTypes[dt.Name] = true
		attrs := map[string]bool{}
		for _, a := range dt.Attributes {
			where := fmt.Sprintf("GetSchema: data source %s.%s", dt.Name, a.Name)
			switch {
			case a.Name == "":
				t.Errorf("GetSchema: an attribute of data source %s has no name", dt.Name)
			case attrs[a.Name]:
				t.Errorf("%s appears twice", where)
			}
			attrs[a.Name] = true
			if a.Type < sdk.TypeString || a.Type > sdk.TypeMap {
				t.Errorf("%s has no valid type (%d)", where, a.Type)
			}
			if a.Computed && a.Required {
				t.Errorf("%s is computed (a result) and also required (an argument)", where)
			}
			if a.ForceNew {
				t.Errorf("%s is force_new, which means nothing for data that is only read", where)
			}
		}
	}
	cfgKeys := map[string]bool{}
	for _, a := range resp.ProviderConfig {
		where := fmt.Sprintf("GetSchema: provider config key %q", a.Name)
		switch {
		case a.Name == "":
			t.Error("GetSchema: a provider config key has no name")
		case cfgKeys[a.Name]:
			t.Errorf("%s appears twice", where)
		}
		cfgKeys[a.Name] = true
		if a.Type < sdk.TypeString || a.Type > sdk.TypeMap {
			t.Errorf("%s has no valid type (%d)", where, a.Type)
		}
		if a.Computed || a.ForceNew {
			t.Errorf("%s is computed or force_new, which a provider config key cannot be", where)
		}
	}
	if len(resp.ProviderConfig) > 0 {
		for k := range s.cfg.ProviderConfig {
			if !cfgKeys[k] {
				t.Errorf("Config.ProviderConfig sets %q, which the provider config schema (GetSchemaResponse.ProviderConfig) lacks", k)
			}
		}
	}
	for _, r := range s.cfg.Resources {
		if !types[r.Type] {
			t.Errorf("GetSchema: the configured resource type %q is not in the schema (types: %s)", r.Type, strings.Join(slices.Sorted(maps.Keys(types)), ", "))
		}
	}
	again, err := p.GetSchema(t.Context(), &sdk.GetSchemaRequest{})
	if err == nil && again != nil && !reflect.DeepEqual(canonical(again), canonical(resp)) {
		t.Errorf("GetSchema is not stable: a second call returned\n%+v\nthe first\n%+v", canonical(again), canonical(resp))
	}
	if raw != nil {
		direct, err := raw.GetSchema(t.Context(), &sdk.GetSchemaRequest{})
		if err == nil && direct != nil {
			want := canonical(direct)
			// sdk.Serve sets Import, ReadMany, ValidateMany and
			// CreateMany for a provider that implements Importer,
			// BatchReader, BatchValidator and BatchCreator, and
			// CreateReadsBack and DeleteReadsBack for every provider.
			want.Capabilities.CreateReadsBack, want.Capabilities.DeleteReadsBack = true, true
			_, want.Capabilities.Import = raw.(sdk.Importer)
			_, want.Capabilities.ReadMany = raw.(sdk.BatchReader)
			_, want.Capabilities.ValidateMany = raw.(sdk.BatchValidator)
			_, want.Capabilities.CreateMany = raw.(sdk.BatchCreator)
			// ReadData for one that implements DataReader, whose data
			// sources are offered only then.
			if _, want.Capabilities.ReadData = raw.(sdk.DataReader); !want.Capabilities.ReadData {
				want.DataSources = nil
			}
			// SchemaValidation for one that says its validation is its
			// schema (SchemaValidator).
			sv, ok := raw.(sdk.SchemaValidator)
			want.Capabilities.SchemaValidation = ok && sv.ValidatesBySchema()
			if got := canonical(resp); !reflect.DeepEqual(want, got) {
				t.Errorf("the schema changed on its way through gRPC: the provider built (with Capabilities.Import, ReadMany, ValidateMany, CreateMany, ReadData, SchemaValidation and the read-backs set by sdk.Serve)\n%+v\nthe host received\n%+v", want, got)
			}
		}
	}
}

// canonical is the part of a schema the contract carries, with empty and
// nil lists made the same.
func canonical(s *sdk.GetSchemaResponse) sdk.GetSchemaResponse {
	out := sdk.GetSchemaResponse{ProviderName: s.ProviderName, ProviderVersion: s.ProviderVersion, Capabilities: s.Capabilities}
	if len(s.ProviderConfig) > 0 {
		out.ProviderConfig = slices.Clone(s.ProviderConfig)
	}
	for _, rt := range s.ResourceTypes {
		c := sdk.ResourceType{Name: rt.Name, Description: rt.Description}
		if len(rt.Attributes) > 0 {
			c.Attributes = slices.Clone(rt.Attributes)
		}
		out.ResourceTypes = append(out.ResourceTypes, c)
	}
	for _, dt := range s.DataSources {
		c := sdk.DataSourceType{Name: dt.Name, Description: dt.Description}
		if len(dt.Attributes) > 0 {
			c.Attributes = slices.Clone(dt.Attributes)
		}
		out.DataSources = append(out.DataSources, c)
	}
	return out
}

func (s *suite) configure(t *testing.T, p sdk.Provider) {
	t.Helper()
	resp, err := p.Configure(t.Context(), &sdk.ConfigureRequest{Config: s.cfg.ProviderConfig, DataDir: s.dataDir})
	if resp == nil {
		resp = &sdk.ConfigureResponse{}
	}
	must(t, "Configure", s.fold(t, "Configure", err, resp.Diagnostics))
}

// need is what a resource check relies on the checks before it for.
type need int

const (
	needNothing  need = iota
	needConfig        // config_matches_schema passed: Resource.Config fits the schema, so a failure is the provider's
	needResource      // create passed: rc.id names a resource made under rc.key, which the checks before may have changed
)

// resourceCheck is one named check of a resource, a subtest of the
// resource's test under name (the names are the suite's interface: a
// failure says which rule is broken, and authors -run them).
type resourceCheck struct {
	name  string
	needs need // the check runs only when what it needs was established
	gives need // what the check establishes for the checks after it when it passes
	run   func(t *testing.T, rc *resourceRun)
}

// resourceRun is the state the checks of one resource share, in order:
// each check sees what the checks before it left (the resource create
// made, its attributes and private data as last read or updated, every id
// a Create returned, which the cleanup deletes).
type resourceRun struct {
	s       *suite
	p       sdk.Provider
	r       Resource
	c       *calls
	key     string             // the idempotency key of the suite's Creates
	create  *sdk.CreateRequest // the Create of the resource under key
	id      string             // what create returned
	attrs   sdk.Attributes     // as last read
	private []byte             // the provider's private data, as the host keeps it
	created []string           // every id a Create returned
}

// delete deletes the resource as the host does, with its last attributes
// and private data (and, of a provider that declares
// Capabilities.DeleteChecksKey, the key it was created under).
func (rc *resourceRun) delete(t *testing.T) {
	t.Helper()
	req := &sdk.DeleteRequest{Type: rc.r.Type, Name: rc.r.Name, ID: rc.id, Attributes: rc.attrs, Protection: sdk.ProtectionEphemeral, Private: rc.private}
	if rc.s.checksKeys() {
		req.ExpectedKey = rc.key
	}
	resp, err := rc.p.Delete(t.Context(), req)
	if resp == nil {
		resp = &sdk.DeleteResponse{}
	}
	must(t, "Delete", rc.s.fold(t, "Delete", err, resp.Diagnostics))
}

// checkResource runs the lifecycle checks of one resource: resourceChecks(),
// in order, each as a subtest. A check whose need was not established (the
// Config does not fit the schema, or create failed) is not run: there is
// nothing it could judge.
func (s *suite) checkResource(t *testing.T, p sdk.Provider, r Resource) {
	key := fmt.Sprintf("providertest-%s-%s.%s", s.runID, r.Type, r.Name)
	rc := &resourceRun{
		s: s, p: p, r: r, c: &calls{s: s, p: p, r: r}, key: key,
		create: &sdk.CreateRequest{Type: r.Type, Name: r.Name, Config: r.Config, IdempotencyKey: key, Protection: sdk.ProtectionEphemeral},
	}
	have := needNothing
	for _, check := range resourceChecks() {
		if check.needs > have {
			continue
		}
		if !t.Run(check.name, func(t *testing.T) { check.run(t, rc) }) || check.gives <= have {
			continue
		}
		have = check.gives
		if have == needConfig {
			// Whatever happens from here, what the Creates made is
			// deleted when the test ends.
			t.Cleanup(func() { s.cleanup(t, p, r, key, rc.created) })
		}
	}
}

// resourceChecks are the checks of one resource, in the order they run: a
// new check is one row, placed after the checks whose effects it relies on
// (and before those that undo them: delete). Each runs against the same
// provider instance unless it says otherwise, and records what it changes
// in the resourceRun. A function, not a package variable, so no test can
// change the table another runs.
func resourceChecks() []resourceCheck {
	return []resourceCheck{
		// Before anything exists: the Config and validation.
		{name: "config_matches_schema", needs: needNothing, gives: needConfig, run: func(t *testing.T, rc *resourceRun) { rc.s.checkConfig(t, rc.r) }},
		{name: "validate", needs: needConfig, run: func(t *testing.T, rc *resourceRun) {
			resp, err := rc.p.ValidateResource(t.Context(), &sdk.ValidateResourceRequest{Type: rc.r.Type, Name: rc.r.Name, Config: rc.r.Config})
			if resp == nil {
				resp = &sdk.ValidateResourceResponse{}
			}
			must(t, "ValidateResource of Config", rc.s.fold(t, "ValidateResource", err, resp.Diagnostics))
		}},
		{name: "validate_rejects_unknown_attribute", needs: needConfig, run: func(t *testing.T, rc *resourceRun) {
			cfg := maps.Clone(rc.r.Config)
			if cfg == nil {
				cfg = map[string]any{}
			}
			cfg[unknownAttribute] = "x"
			resp, err := rc.p.ValidateResource(t.Context(), &sdk.ValidateResourceRequest{Type: rc.r.Type, Name: rc.r.Name, Config: cfg})
			if err != nil && rc.s.served {
				t.Fatalf("ValidateResource: %v", err)
			}
			var ds sdk.Diagnostics
			if resp != nil {
				ds = resp.Diagnostics
			}
			ds = append(ds, sdk.DiagnosticsFromError(err)...)
			if !ds.HasError() {
				if !rc.s.served {
					t.Skip("not checked in-process against the raw provider: sdk.Serve rejects an unknown attribute before the provider sees it, and Run does not go through sdk.Serve (RunGRPC does)")
				}
				t.Fatalf("ValidateResource accepted the unknown attribute %q", unknownAttribute)
			}
			for _, d := range ds {
				if d.Severity != sdk.SeverityWarning && len(d.AttributePath) > 0 && d.AttributePath[0] == unknownAttribute {
					return
				}
			}
			t.Errorf("ValidateResource rejected the unknown attribute %q, but no error diagnostic's AttributePath names it: %#v", unknownAttribute, ds)
		}},
		{name: "validate_many", needs: needConfig, run: func(t *testing.T, rc *resourceRun) {
			batch, ok := rc.p.(sdk.BatchValidator)
			if !ok || rc.s.served && !rc.s.schema.Capabilities.ValidateMany {
				t.Skip("the provider does not implement sdk.BatchValidator: the host validates one resource a call")
			}
			reqs := []*sdk.ValidateResourceRequest{{Type: rc.r.Type, Name: rc.r.Name, Config: rc.r.Config}, {Type: rc.r.Type, Name: rc.r.Name, Config: rc.r.Config}}
			resp, err := batch.ValidateMany(t.Context(), &sdk.ValidateManyRequest{Resources: reqs})
			if resp == nil {
				resp = &sdk.ValidateManyResponse{}
			}
			must(t, "ValidateMany", rc.s.fold(t, "ValidateMany", err, resp.Diagnostics))
			if len(resp.Results) != len(reqs) {
				t.Fatalf("ValidateMany of %d configs answered %d results, want one per config, in order", len(reqs), len(resp.Results))
			}
			for i, res := range resp.Results {
				if res == nil {
					t.Errorf("ValidateMany result %d is nil", i)
				} else if err := rc.s.fold(t, fmt.Sprintf("ValidateMany result %d", i), nil, res.Diagnostics); err != nil {
					t.Errorf("ValidateMany result %d of Config: %v", i, err)
				}
			}
		}},
		{name: "read_absent", needs: needConfig, run: func(t *testing.T, rc *resourceRun) {
			absent := rc.r.Name + "-absent-" + rc.s.runID
			for _, req := range []*sdk.ReadRequest{
				{Type: rc.r.Type, Name: absent, Config: rc.r.Config},
				{Type: rc.r.Type, Name: absent, IdempotencyKey: rc.key + "-never-used", Config: rc.r.Config},
			} {
				if rr := rc.c.read(t, req); rr.Exists {
					t.Errorf("%s of a resource never created: Exists=true (id %q)", describe(req), rr.ID)
				}
			}
		}},
		// The resource: made once under the key, then read, made again, contested.
		{name: "create", needs: needConfig, gives: needResource, run: func(t *testing.T, rc *resourceRun) {
			resp := rc.c.create(t, rc.create)
			if resp.ID == "" {
				t.Fatal("Create returned no ID")
			}
			rc.id, rc.attrs = resp.ID, resp.Attributes
			if len(resp.Private) > 0 {
				rc.private = resp.Private
			}
			rc.created = append(rc.created, rc.id)
		}},
		{name: "read_by_id", needs: needResource, run: func(t *testing.T, rc *resourceRun) {
			rr := rc.c.find(t, &sdk.ReadRequest{Type: rc.r.Type, Name: rc.r.Name, ID: rc.id, Config: rc.r.Config, Private: rc.private}, rc.id)
			rc.attrs = rr.Attributes
			if len(rr.Private) > 0 {
				rc.private = rr.Private
			}
			checkAttributes(t, "Read by ID", rc.r.Config, rr.Attributes)
		}},
		{name: "read_by_idempotency_key", needs: needResource, run: func(t *testing.T, rc *resourceRun) {
			rc.c.find(t, &sdk.ReadRequest{Type: rc.r.Type, Name: rc.r.Name, IdempotencyKey: rc.key, Config: rc.r.Config}, rc.id)
		}},
		{name: "create_same_key_again", needs: needResource, run: func(t *testing.T, rc *resourceRun) {
			resp := rc.c.create(t, rc.create)
			rc.created = append(rc.created, resp.ID)
			if resp.ID != rc.id {
				t.Errorf("a second Create with idempotency key %q returned id %q; the first returned %q", rc.key, resp.ID, rc.id)
			}
			rr := rc.c.read(t, &sdk.ReadRequest{Type: rc.r.Type, Name: rc.r.Name, Config: rc.r.Config})
			if !rr.Exists || rr.ID != rc.id {
				t.Errorf("after a second Create with the same key, Read by type and name found exists=%v id %q, want the first Create's %q", rr.Exists, rr.ID, rc.id)
			}
		}},
		{name: "read_reports_key", needs: needResource, run: func(t *testing.T, rc *resourceRun) {
			if !rc.s.keys() {
				t.Skip(skipKeys)
			}
			for _, req := range []*sdk.ReadRequest{
				{Type: rc.r.Type, Name: rc.r.Name, ID: rc.id, Config: rc.r.Config},
				{Type: rc.r.Type, Name: rc.r.Name, IdempotencyKey: rc.key, Config: rc.r.Config},
				{Type: rc.r.Type, Name: rc.r.Name, Config: rc.r.Config},
			} {
				if rr := rc.c.find(t, req, rc.id); rr.IdempotencyKey != rc.key {
					t.Errorf("%s: IdempotencyKey %q, want %q, the key of the Create that made it", describe(req), rr.IdempotencyKey, rc.key)
				}
			}
		}},
		{name: "create_conflict", needs: needResource, run: func(t *testing.T, rc *resourceRun) {
			before := rc.c.find(t, &sdk.ReadRequest{Type: rc.r.Type, Name: rc.r.Name, ID: rc.id, Config: rc.r.Config}, rc.id)
			other := rc.key + "-other"
			what := fmt.Sprintf("Create(key %q) of %s %s, which a Create under key %q made", other, rc.r.Type, rc.r.Name, rc.key)
			resp, err := rc.p.Create(t.Context(), &sdk.CreateRequest{Type: rc.r.Type, Name: rc.r.Name, Config: rc.r.Config, IdempotencyKey: other, Protection: sdk.ProtectionEphemeral})
			if resp == nil {
				resp = &sdk.CreateResponse{}
			}
			failed := rc.s.fold(t, what, err, resp.Diagnostics)
			switch {
			case failed == nil && resp.ID == rc.id:
				t.Errorf("%s returned that resource (id %q): it claimed what another Create made. A provider never takes over an identity that is taken; it fails with sdk.Conflict", what, rc.id)
			case failed == nil && resp.ID != "":
				rc.created = append(rc.created, resp.ID)
				if rc.s.keys() {
					t.Errorf("%s succeeded (id %q): with Capabilities.IdempotencyKeys it must fail with a conflict diagnostic (sdk.Conflict)", what, resp.ID)
				} else {
					t.Logf("%s made another resource (id %q); allowed without Capabilities.IdempotencyKeys. Deleting it.", what, resp.ID)
				}
				// Out of the way of the checks below, which find by name.
				rc.s.deleteQuietly(t, rc.p, rc.r, resp.ID)
			case failed == nil:
				t.Errorf("%s succeeded with no ID", what)
			case rc.s.keys() && !sdk.IsConflict(failed):
				t.Errorf("%s failed, but not with a conflict diagnostic (sdk.Conflict, Code %q), which the host needs to tell a taken identity from a failure: %v", what, sdk.CodeConflict, failed)
			case !rc.s.keys():
				t.Logf("%s failed (%v); whether with a conflict diagnostic is not checked: %s", what, failed, skipKeys)
			}
			after := rc.c.find(t, &sdk.ReadRequest{Type: rc.r.Type, Name: rc.r.Name, ID: rc.id, Config: rc.r.Config}, rc.id)
			if after.IdempotencyKey != before.IdempotencyKey {
				t.Errorf("after %s, the resource reports key %q, before %q: it was claimed", what, after.IdempotencyKey, before.IdempotencyKey)
			}
			if b, a := normalize(t, "attributes before", before.Attributes), normalize(t, "attributes after", after.Attributes); !reflect.DeepEqual(b, a) {
				t.Errorf("after %s, the resource's attributes are\n%s\nbefore\n%s\nit must be left untouched", what, jsonText(a), jsonText(b))
			}
			if rr := rc.c.read(t, &sdk.ReadRequest{Type: rc.r.Type, Name: rc.r.Name, IdempotencyKey: other, Config: rc.r.Config}); rr.Exists && rr.ID == rc.id {
				t.Errorf("Read by the conflicting key %q finds the existing resource %q: it was claimed", other, rc.id)
			}
		}},
		{name: "coexist", needs: needResource, run: func(t *testing.T, rc *resourceRun) { rc.s.checkCoexist(t, rc.c, rc.r, rc.id, rc.key, &rc.created) }},
		{name: "create_many", needs: needResource, run: func(t *testing.T, rc *resourceRun) {
			batch, ok := rc.s.creator(rc.p)
			if !ok {
				t.Skip(skipCreateMany)
			}
			other := rc.key + "-many-other"
			// The key that made the resource, and another key for the same
			// identity, side by side: the one failing must not fail the other.
			reqs := []*sdk.CreateRequest{
				rc.create,
				{Type: rc.r.Type, Name: rc.r.Name, Config: rc.r.Config, IdempotencyKey: other, Protection: sdk.ProtectionEphemeral},
			}
			results := rc.c.createMany(t, batch, reqs)
			for i, res := range results {
				if reqs[i].IdempotencyKey == other {
					continue
				}
				if err := rc.s.fold(t, fmt.Sprintf("CreateMany result %d", i), nil, res.Diagnostics); err != nil {
					t.Errorf("CreateMany result %d, the key %q that made %s again, failed: %v (one Create failing must neither fail nor hide another)", i, rc.key, rc.id, err)
					continue
				}
				rc.created = append(rc.created, res.ID)
				if res.ID != rc.id {
					t.Errorf("CreateMany result %d, under the key %q that made %s, returned id %q: a second resource", i, rc.key, rc.id, res.ID)
					rc.s.deleteQuietly(t, rc.p, rc.r, res.ID) // out of the way of the checks below
				}
			}
			res := results[1]
			what := fmt.Sprintf("CreateMany result 1, Create(key %q) of %s %s, which a Create under key %q made", other, rc.r.Type, rc.r.Name, rc.key)
			failed := rc.s.fold(t, what, nil, res.Diagnostics)
			switch {
			case failed == nil && res.ID == rc.id:
				t.Errorf("%s returned that resource (id %q): it claimed what another Create made", what, rc.id)
			case failed == nil && res.ID != "":
				rc.created = append(rc.created, res.ID)
				if rc.s.keys() {
					t.Errorf("%s succeeded (id %q): with Capabilities.IdempotencyKeys it must fail with a conflict diagnostic (sdk.Conflict), as Create does", what, res.ID)
				}
				rc.s.deleteQuietly(t, rc.p, rc.r, res.ID)
			case failed != nil && rc.s.keys() && !sdk.IsConflict(failed):
				t.Errorf("%s failed, but not with a conflict diagnostic (sdk.Conflict): %v", what, failed)
			}
			rc.c.find(t, &sdk.ReadRequest{Type: rc.r.Type, Name: rc.r.Name, IdempotencyKey: rc.key, Config: rc.r.Config}, rc.id)
		}},
		{name: "import", needs: needResource, run: func(t *testing.T, rc *resourceRun) {
			imp, ok := rc.p.(sdk.Importer)
			if !ok || rc.s.served && !rc.s.schema.Capabilities.Import {
				t.Skip("the provider does not implement sdk.Importer: the host imports a resource with Read by ID (read_by_id)")
			}
			resp, err := imp.Import(t.Context(), &sdk.ImportRequest{Type: rc.r.Type, Name: rc.r.Name, ID: rc.id, Config: rc.r.Config})
			if resp == nil {
				resp = &sdk.ImportResponse{}
			}
			must(t, "Import", rc.s.fold(t, "Import", err, resp.Diagnostics))
			if !resp.Exists || resp.ID != rc.id {
				t.Fatalf("Import by ID %q: Exists=%v ID %q, want the resource", rc.id, resp.Exists, resp.ID)
			}
			checkAttributes(t, "Import", rc.r.Config, resp.Attributes)
			if rc.s.keys() && resp.IdempotencyKey != rc.key {
				t.Errorf("Import by ID %q: IdempotencyKey %q, want %q, the key of the Create that made it", rc.id, resp.IdempotencyKey, rc.key)
			}
		}},
		{name: "claims", needs: needResource, run: func(t *testing.T, rc *resourceRun) { rc.s.checkClaims(t, rc.p, rc.r, rc.id, rc.key) }},
		{name: "read_many", needs: needResource, run: func(t *testing.T, rc *resourceRun) {
			batch, ok := rc.p.(sdk.BatchReader)
			if !ok || rc.s.served && !rc.s.schema.Capabilities.ReadMany {
				t.Skip("the provider does not implement sdk.BatchReader: the host makes single Reads")
			}
			reads := []*sdk.ReadRequest{
				{Type: rc.r.Type, Name: rc.r.Name, ID: rc.id, Config: rc.r.Config},
				{Type: rc.r.Type, Name: "providertest-absent-" + rc.s.runID, Config: rc.r.Config},
				{Type: rc.r.Type, Name: rc.r.Name, IdempotencyKey: rc.key, Config: rc.r.Config},
				{Type: rc.r.Type, Name: rc.r.Name, Config: rc.r.Config},
			}
			resp, err := batch.ReadMany(t.Context(), &sdk.ReadManyRequest{Reads: reads})
			if resp == nil {
				resp = &sdk.ReadManyResponse{}
			}
			must(t, "ReadMany", rc.s.fold(t, "ReadMany", err, resp.Diagnostics))
			if len(resp.Results) != len(reads) {
				t.Fatalf("ReadMany of %d reads answered %d results, want one per read, in order", len(reads), len(resp.Results))
			}
			for i, req := range reads {
				got := resp.Results[i]
				if got == nil {
					t.Errorf("ReadMany result %d (%+v) is nil", i, req)
					continue
				}
				if err := rc.s.fold(t, fmt.Sprintf("ReadMany result %d", i), nil, got.Diagnostics); err != nil {
					t.Errorf("ReadMany result %d (%+v): %v", i, req, err)
					continue
				}
				single, err := rc.p.Read(t.Context(), req)
				if err != nil || single == nil {
					t.Errorf("Read %+v: %v", req, err)
					continue
				}
				if got.Exists != single.Exists || got.ID != single.ID || got.IdempotencyKey != single.IdempotencyKey ||
					!reflect.DeepEqual(normalize(t, "ReadMany attributes", got.Attributes), normalize(t, "Read attributes", single.Attributes)) {
					t.Errorf("ReadMany result %d answers %+v with\n%+v\nRead answers\n%+v", i, req, got, single)
				}
			}
			if resp.Results[0].ID != rc.id || !resp.Results[0].Exists || resp.Results[1].Exists {
				t.Errorf("ReadMany: the resource by ID is %+v, the absent one %+v", resp.Results[0], resp.Results[1])
			}
		}},
		// Other sessions: a restarted provider, another data folder, a plan.
		{name: "read_by_key_after_restart", needs: needResource, run: func(t *testing.T, rc *resourceRun) {
			fresh, _ := rc.s.open(t)
			rc.s.configure(t, fresh)
			(&calls{s: rc.s, p: fresh, r: rc.r}).find(t, &sdk.ReadRequest{Type: rc.r.Type, Name: rc.r.Name, IdempotencyKey: rc.key, Config: rc.r.Config}, rc.id)
		}},
		{name: "elsewhere", needs: needResource, run: func(t *testing.T, rc *resourceRun) {
			if !rc.s.cfg.Elsewhere {
				t.Skip("Config.Elsewhere is not set: the provider may keep what it needs in its data folder")
			}
			other, _ := rc.s.open(t)
			dir := t.TempDir()
			resp, err := other.Configure(t.Context(), &sdk.ConfigureRequest{Config: rc.s.cfg.ProviderConfig, DataDir: dir})
			if resp == nil {
				resp = &sdk.ConfigureResponse{}
			}
			must(t, "Configure (another data folder)", rc.s.fold(t, "Configure (another data folder)", err, resp.Diagnostics))
			oc := &calls{s: rc.s, p: other, r: rc.r}
			// A crash before Create answered leaves the host only the key it
			// journaled: no id, no private data.
			oc.find(t, &sdk.ReadRequest{Type: rc.r.Type, Name: rc.r.Name, IdempotencyKey: rc.key, Config: rc.r.Config}, rc.id)
			oc.find(t, &sdk.ReadRequest{Type: rc.r.Type, Name: rc.r.Name, ID: rc.id, Config: rc.r.Config, Private: rc.private}, rc.id)
			again := oc.create(t, rc.create)
			rc.created = append(rc.created, again.ID)
			if again.ID != rc.id {
				t.Errorf("a Create with idempotency key %q on another data folder returned id %q; the first returned %q", rc.key, again.ID, rc.id)
			}
			if len(again.Private) > 0 {
				rc.private = again.Private
			}
		}},
		{name: "read_only_session", needs: needResource, run: func(t *testing.T, rc *resourceRun) {
			before := snapshot(t, rc.s.dataDir)
			fresh, _ := rc.s.open(t)
			resp, err := fresh.Configure(t.Context(), &sdk.ConfigureRequest{Config: rc.s.cfg.ProviderConfig, DataDir: rc.s.dataDir, ReadOnly: true})
			if resp == nil {
				resp = &sdk.ConfigureResponse{}
			}
			must(t, "Configure (ReadOnly)", rc.s.fold(t, "Configure (ReadOnly)", err, resp.Diagnostics))
			fc := &calls{s: rc.s, p: fresh, r: rc.r}
			if _, err := fresh.GetSchema(t.Context(), &sdk.GetSchemaRequest{}); err != nil {
				t.Fatalf("GetSchema (ReadOnly): %v", err)
			}
			vr, err := fresh.ValidateResource(t.Context(), &sdk.ValidateResourceRequest{Type: rc.r.Type, Name: rc.r.Name, Config: rc.r.Config})
			if vr == nil {
				vr = &sdk.ValidateResourceResponse{}
			}
			must(t, "ValidateResource (ReadOnly)", rc.s.fold(t, "ValidateResource (ReadOnly)", err, vr.Diagnostics))
			fc.find(t, &sdk.ReadRequest{Type: rc.r.Type, Name: rc.r.Name, ID: rc.id, Config: rc.r.Config}, rc.id)
			fc.find(t, &sdk.ReadRequest{Type: rc.r.Type, Name: rc.r.Name, IdempotencyKey: rc.key, Config: rc.r.Config}, rc.id)
			fc.find(t, &sdk.ReadRequest{Type: rc.r.Type, Name: rc.r.Name, Config: rc.r.Config}, rc.id)
			fc.read(t, &sdk.ReadRequest{Type: rc.r.Type, Name: rc.r.Name + "-absent-" + rc.s.runID, IdempotencyKey: rc.key + "-never-used", Config: rc.r.Config})
			if after := snapshot(t, rc.s.dataDir); !reflect.DeepEqual(before, after) {
				t.Errorf("a session configured with ReadOnly (a plan) changed the data folder; it must write nothing anywhere:\n%s", snapshotDiff(before, after))
			}
		}},
		{name: "read_data", needs: needResource, run: func(t *testing.T, rc *resourceRun) { rc.s.checkData(t, rc) }},
		// Change, then removal.
		{name: "update", needs: needResource, run: func(t *testing.T, rc *resourceRun) {
			if rc.r.Update == nil {
				t.Skip("Resource.Update is not set")
			}
			resp, err := rc.p.Update(t.Context(), &sdk.UpdateRequest{Type: rc.r.Type, Name: rc.r.Name, ID: rc.id, PriorAttributes: rc.attrs, Config: rc.r.Update, Protection: sdk.ProtectionEphemeral, Private: rc.private})
			if resp == nil {
				resp = &sdk.UpdateResponse{}
			}
			must(t, "Update", rc.s.fold(t, "Update", err, resp.Diagnostics))
			if len(resp.Private) > 0 {
				rc.private = resp.Private
			}
			rr := rc.c.find(t, &sdk.ReadRequest{Type: rc.r.Type, Name: rc.r.Name, ID: rc.id, Config: rc.r.Update}, rc.id)
			rc.attrs = rr.Attributes
			checkAttributes(t, "Read by ID after Update", rc.r.Update, rr.Attributes)
			rc.c.find(t, &sdk.ReadRequest{Type: rc.r.Type, Name: rc.r.Name, Config: rc.r.Update}, rc.id)
		}},
		{name: "delete_protected", needs: needResource, run: func(t *testing.T, rc *resourceRun) {
			if !rc.s.served {
				t.Skip("not checked in-process against the raw provider: sdk.Serve refuses a protected Delete before the provider sees it, and Run does not go through sdk.Serve (RunGRPC does)")
			}
			resp, err := rc.p.Delete(t.Context(), &sdk.DeleteRequest{Type: rc.r.Type, Name: rc.r.Name, ID: rc.id, Attributes: rc.attrs, Protection: sdk.ProtectionProtected})
			if err != nil {
				t.Fatalf("Delete (protected): %v", err)
			}
			if resp == nil || !resp.Diagnostics.HasError() {
				t.Errorf("a Delete carrying ProtectionProtected was not refused with an error diagnostic: %+v", resp)
			}
			rc.c.find(t, &sdk.ReadRequest{Type: rc.r.Type, Name: rc.r.Name, ID: rc.id, Config: rc.r.Config}, rc.id)
		}},
		{name: "delete_checks_key", needs: needResource, run: func(t *testing.T, rc *resourceRun) {
			if !rc.s.checksKeys() {
				t.Skip("the provider does not declare Capabilities.DeleteChecksKey: the host reads a resource before deleting it")
			}
			resp, err := rc.p.Delete(t.Context(), &sdk.DeleteRequest{Type: rc.r.Type, Name: rc.r.Name, ID: rc.id, Attributes: rc.attrs, Protection: sdk.ProtectionEphemeral, Private: rc.private, ExpectedKey: rc.key + "-not-it"})
			var ds sdk.Diagnostics
			if resp != nil {
				ds = resp.Diagnostics
			}
			if e := ds.Err(); e != nil && err == nil {
				err = e
			}
			if !sdk.IsConflict(err) {
				t.Errorf("a Delete expecting another key than the resource's was not refused with a conflict diagnostic (sdk.DeleteConflict): %v", err)
			}
			rc.c.find(t, &sdk.ReadRequest{Type: rc.r.Type, Name: rc.r.Name, ID: rc.id, Config: rc.r.Config}, rc.id)
		}},
		{name: "delete", needs: needResource, run: func(t *testing.T, rc *resourceRun) {
			rc.delete(t)
			for _, req := range []*sdk.ReadRequest{
				{Type: rc.r.Type, Name: rc.r.Name, ID: rc.id, Config: rc.r.Config},
				{Type: rc.r.Type, Name: rc.r.Name, IdempotencyKey: rc.key, Config: rc.r.Config},
				{Type: rc.r.Type, Name: rc.r.Name, Config: rc.r.Config},
			} {
				if rr := rc.c.read(t, req); rr.Exists {
					t.Errorf("%s after Delete: Exists=true (id %q)", describe(req), rr.ID)
				}
			}
		}},
		{name: "delete_again", needs: needResource, run: func(t *testing.T, rc *resourceRun) { rc.delete(t) }},
		{name: "create_many_fresh", needs: needResource, run: func(t *testing.T, rc *resourceRun) {
			batch, ok := rc.s.creator(rc.p)
			if !ok {
				t.Skip(skipCreateMany)
			}
			fresh := rc.key + "-many"
			req := &sdk.CreateRequest{Type: rc.r.Type, Name: rc.r.Name, Config: rc.r.Config, IdempotencyKey: fresh, Protection: sdk.ProtectionEphemeral}
			made := rc.c.createMany(t, batch, []*sdk.CreateRequest{req})[0]
			must(t, "CreateMany of a fresh key", rc.s.fold(t, "CreateMany of a fresh key", nil, made.Diagnostics))
			if made.ID == "" {
				t.Fatal("CreateMany of a fresh key returned no ID")
			}
			rc.created = append(rc.created, made.ID)
			checkAttributes(t, "CreateMany", rc.r.Config, made.Attributes)
			rc.c.find(t, &sdk.ReadRequest{Type: rc.r.Type, Name: rc.r.Name, IdempotencyKey: fresh, Config: rc.r.Config}, made.ID)
			again := rc.c.createMany(t, batch, []*sdk.CreateRequest{req})[0]
			must(t, "CreateMany of that key again", rc.s.fold(t, "CreateMany of that key again", nil, again.Diagnostics))
			if again.ID != made.ID {
				rc.created = append(rc.created, again.ID)
				t.Errorf("a second CreateMany with idempotency key %q returned id %q; the first returned %q", fresh, again.ID, made.ID)
			}
			single := rc.c.create(t, req)
			if single.ID != made.ID {
				t.Errorf("a Create with idempotency key %q returned id %q; the CreateMany under it returned %q", fresh, single.ID, made.ID)
			}
			rc.s.deleteQuietly(t, rc.p, rc.r, made.ID)
		}},
	}
}

// skipCreateMany says why the CreateMany checks are skipped.
const skipCreateMany = "the provider does not implement sdk.BatchCreator: the host makes single Creates"

// creator is p's CreateMany, when the provider has one (through gRPC: when
// sdk.Serve declared Capabilities.CreateMany).
func (s *suite) creator(p sdk.Provider) (sdk.BatchCreator, bool) {
	batch, ok := p.(sdk.BatchCreator)
	if !ok || s.served && !s.schema.Capabilities.CreateMany {
		return nil, false
	}
	return batch, true
}

// snapshot returns what is below dir: each entry's path relative to dir,
// with its mode and, for a file, its content.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		v := fi.Mode().String()
		if fi.Mode().IsRegular() {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			v += " " + string(b)
		}
		out[filepath.ToSlash(rel)] = v
		return nil
	})
	if err != nil {
		t.Fatalf("snapshot of the data folder: %v", err)
	}
	return out
}

// snapshotDiff names the entries two snapshots disagree on.
func snapshotDiff(before, after map[string]string) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(before)) {
		switch v, ok := after[k]; {
		case !ok:
			fmt.Fprintf(&b, "  removed %s\n", k)
		case v != before[k]:
			fmt.Fprintf(&b, "  changed %s\n", k)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(after)) {
		if _, ok := before[k]; !ok {
			fmt.Fprintf(&b, "  added %s\n", k)
		}
	}
	return b.String()
}

// skipKeys says why the ownership checks are skipped.
const skipKeys = "skipped: the provider does not declare Capabilities.IdempotencyKeys in GetSchema, so the host treats it conservatively (whatever Read finds by natural identity that a state does not record is someone else's). Declare it once Read reports the key each resource was created under and a Create of a taken identity fails with sdk.Conflict"

// keys reports whether the provider declares the IdempotencyKeys
// capability.
func (s *suite) keys() bool { return s.schema != nil && s.schema.Capabilities.IdempotencyKeys }

// checksKeys says the provider declares Capabilities.DeleteChecksKey.
func (s *suite) checksKeys() bool { return s.schema != nil && s.schema.Capabilities.DeleteChecksKey }

// deleteQuietly deletes the resource id, reporting a failure.
func (s *suite) deleteQuietly(t *testing.T, p sdk.Provider, r Resource, id string) {
	t.Helper()
	resp, err := p.Delete(t.Context(), &sdk.DeleteRequest{Type: r.Type, Name: r.Name, ID: id, Protection: sdk.ProtectionEphemeral})
	if resp == nil {
		resp = &sdk.DeleteResponse{}
	}
	if err := s.fold(t, "Delete", err, resp.Diagnostics); err != nil {
		t.Errorf("Delete of %s %s (id %s): %v", r.Type, r.Name, id, err)
	}
}

// cleanup deletes what the suite's Creates made and is still there: every
// id a Create returned, and what Read by the idempotency key finds.
func (s *suite) cleanup(t *testing.T, p sdk.Provider, r Resource, key string, created []string) {
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	if rr, err := p.Read(ctx, &sdk.ReadRequest{Type: r.Type, Name: r.Name, IdempotencyKey: key, Config: r.Config}); err == nil && rr != nil && rr.Exists && rr.ID != "" {
		created = append(created, rr.ID)
	}
	slices.Sort(created)
	for _, id := range slices.Compact(created) {
		rr, err := p.Read(ctx, &sdk.ReadRequest{Type: r.Type, Name: r.Name, ID: id, Config: r.Config})
		if err == nil && rr != nil && !rr.Exists && !rr.Diagnostics.HasError() {
			continue // gone
		}
		var attrs sdk.Attributes
		if rr != nil {
			attrs = rr.Attributes
		}
		resp, err := p.Delete(ctx, &sdk.DeleteRequest{Type: r.Type, Name: r.Name, ID: id, Attributes: attrs, Protection: sdk.ProtectionEphemeral})
		if resp == nil {
			resp = &sdk.DeleteResponse{}
		}
		if err := s.fold(t, "Delete", err, resp.Diagnostics); err != nil {
			t.Errorf("cleanup: could not delete %s %s (id %s): %v", r.Type, r.Name, id, err)
		}
	}
}

// checkConfig checks the Resource against the schema: mistakes here are the
// suite's user's, not the provider's.
func (s *suite) checkConfig(t *testing.T, r Resource) {
	if s.schema == nil {
		t.Fatal("no schema (see the schema check)")
	}
	rt, ok := s.schema.ResourceType(r.Type)
	if !ok {
		t.Fatalf("Config names resource type %q, which the schema lacks", r.Type)
	}
	cfg := normalize(t, "Config", r.Config)
	if ds := sdk.CheckConfig(rt, cfg); ds.HasError() {
		t.Fatalf("Resource %s.%s: Config does not match the provider's schema (fix the Config): %v", r.Type, r.Name, ds)
	}
	if r.Update == nil {
		return
	}
	upd := normalize(t, "Update", r.Update)
	if ds := sdk.CheckConfig(rt, upd); ds.HasError() {
		t.Fatalf("Resource %s.%s: Update does not match the provider's schema (fix the Update): %v", r.Type, r.Name, ds)
	}
	for _, a := range rt.Attributes {
		if a.ForceNew && !reflect.DeepEqual(cfg[a.Name], upd[a.Name]) {
			t.Fatalf("Resource %s.%s: Update changes the force_new attribute %q (a replace, not an Update): keep it as in Config", r.Type, r.Name, a.Name)
		}
	}
}

// calls makes the suite's calls about one resource, failing the test on an
// error.
type calls struct {
	s *suite
	p sdk.Provider
	r Resource
}

func (c *calls) read(t *testing.T, req *sdk.ReadRequest) *sdk.ReadResponse {
	t.Helper()
	resp, err := c.p.Read(t.Context(), req)
	if resp == nil {
		resp = &sdk.ReadResponse{}
	}
	must(t, describe(req), c.s.fold(t, describe(req), err, resp.Diagnostics))
	return resp
}

// find reads and requires the resource with id.
func (c *calls) find(t *testing.T, req *sdk.ReadRequest, id string) *sdk.ReadResponse {
	t.Helper()
	rr := c.read(t, req)
	if !rr.Exists {
		t.Fatalf("%s: Exists=false, want id %q", describe(req), id)
	}
	if rr.ID != id {
		t.Fatalf("%s: found id %q, want %q", describe(req), rr.ID, id)
	}
	return rr
}

func (c *calls) create(t *testing.T, req *sdk.CreateRequest) *sdk.CreateResponse {
	t.Helper()
	resp, err := c.p.Create(t.Context(), req)
	if resp == nil {
		resp = &sdk.CreateResponse{}
	}
	what := fmt.Sprintf("Create(key %q)", req.IdempotencyKey)
	must(t, what, c.s.fold(t, what, err, resp.Diagnostics))
	return resp
}

// createMany calls CreateMany, failing the test on an error of the whole
// call or a result count that is not one per Create.
func (c *calls) createMany(t *testing.T, batch sdk.BatchCreator, reqs []*sdk.CreateRequest) []*sdk.CreateResponse {
	t.Helper()
	resp, err := batch.CreateMany(t.Context(), &sdk.CreateManyRequest{Creates: reqs})
	if resp == nil {
		resp = &sdk.CreateManyResponse{}
	}
	must(t, "CreateMany", c.s.fold(t, "CreateMany", err, resp.Diagnostics))
	if len(resp.Results) != len(reqs) {
		t.Fatalf("CreateMany of %d Creates answered %d results, want one per Create, in order", len(reqs), len(resp.Results))
	}
	for i, res := range resp.Results {
		if res == nil {
			t.Fatalf("CreateMany result %d is nil", i)
		}
	}
	return resp.Results
}

// fold returns a call's error, or its error diagnostics as one error; it
// logs warnings.
func (s *suite) fold(t *testing.T, what string, err error, ds sdk.Diagnostics) error {
	t.Helper()
	for _, d := range ds {
		if d.Severity == sdk.SeverityWarning {
			t.Logf("%s: warning: %v", what, d)
		}
	}
	if err != nil {
		if s.served {
			return fmt.Errorf("transport: %w", err)
		}
		return err
	}
	if ds.HasError() {
		return ds
	}
	return nil
}

func must(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// describe names a Read by what it looks up.
func describe(req *sdk.ReadRequest) string {
	switch {
	case req.ID != "":
		return fmt.Sprintf("Read(%s %s by id %q)", req.Type, req.Name, req.ID)
	case req.IdempotencyKey != "":
		return fmt.Sprintf("Read(%s %s by idempotency key %q)", req.Type, req.Name, req.IdempotencyKey)
	}
	return fmt.Sprintf("Read(%s %s by type and name)", req.Type, req.Name)
}

// checkAttributes requires every configured attribute with a value to be
// read back with that value.
func checkAttributes(t *testing.T, what string, config, got sdk.Attributes) {
	t.Helper()
	want := normalize(t, "Config", config)
	have := normalize(t, "attributes read", got)
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if !reflect.DeepEqual(have[k], want[k]) {
			t.Errorf("%s: attribute %q is %s, configured %s", what, k, jsonText(have[k]), jsonText(want[k]))
		}
	}
}

// normalize returns a's JSON round trip (numbers float64, lists []any, as
// attributes travel), without nil values.
func normalize(t *testing.T, what string, a sdk.Attributes) sdk.Attributes {
	t.Helper()
	out := sdk.Attributes{}
	b, err := json.Marshal(a)
	if err == nil {
		var m sdk.Attributes
		if err = json.Unmarshal(b, &m); err == nil {
			for k, v := range m {
				if v != nil {
					out[k] = v
				}
			}
			return out
		}
	}
	t.Fatalf("%s is not JSON: %v", what, err)
	return nil
}

func jsonText(v any) string {
	if v == nil {
		return "absent"
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// checkClaims checks the Claims rules (bulwark's docs/architecture.md,
// "Claims") on the resource id, made under key: an Import that carries a
// claim key stamps it, a second Import of the same id under another claim is
// refused with a conflict and changes nothing, a Release by the holder leaves
// the claim released (Read reports sdk.ReleasedKey), a released resource can
// be imported, a Release by a stack that does not hold the claim is refused,
// and ReplacesKey lets the host stamp over a key it names. It ends with the
// resource carrying key again, for the checks that follow. A provider that
// stamps nothing (an Import that answers Claimed false) or releases nothing
// (sdk.ErrReleaseUnsupported) is skipped: the host treats it conservatively.
func (s *suite) checkClaims(t *testing.T, p sdk.Provider, r Resource, id, key string) {
	imp, ok := p.(sdk.Importer)
	if !ok || s.served && !s.schema.Capabilities.Import || !s.keys() {
		t.Skip("the provider does not implement sdk.Importer with idempotency keys: it cannot stamp a claim")
	}
	rel, ok := p.(sdk.Releaser)
	if !ok {
		t.Skip("the provider does not implement sdk.Releaser: the host keeps every claim")
	}
	claimA, claimB := key+".claim-a", key+".claim-b"
	carries := func(what, want string) {
		t.Helper()
		got, err := p.Read(t.Context(), &sdk.ReadRequest{Type: r.Type, Name: r.Name, ID: id, Config: r.Config})
		if err != nil || got == nil || !got.Exists {
			t.Fatalf("%s: Read by ID %q: %+v, %v", what, id, got, err)
		}
		if got.IdempotencyKey != want {
			t.Fatalf("%s: Read by ID %q reports key %q, want %q", what, id, got.IdempotencyKey, want)
		}
	}
	stamp := func(claim, replaces string) (*sdk.ImportResponse, error) {
		resp, err := imp.Import(t.Context(), &sdk.ImportRequest{Type: r.Type, Name: r.Name, ID: id, Config: r.Config, ClaimKey: claim, ReplacesKey: replaces})
		if resp == nil {
			resp = &sdk.ImportResponse{}
		}
		return resp, s.fold(t, "Import", err, resp.Diagnostics)
	}
	release := func(claim string) (*sdk.ReleaseResponse, error) {
		resp, err := rel.Release(t.Context(), &sdk.ReleaseRequest{Type: r.Type, Name: r.Name, ID: id, Key: claim})
		if errors.Is(err, sdk.ErrReleaseUnsupported) {
			t.Skipf("Release: %v", err)
		}
		if resp == nil {
			resp = &sdk.ReleaseResponse{}
		}
		return resp, s.fold(t, "Release", err, resp.Diagnostics)
	}

	// Whatever fails, the resource is left carrying key again, so the
	// checks that follow judge the rest of the contract, not this failure.
	defer func() {
		if !t.Failed() {
			return
		}
		if got, err := p.Read(t.Context(), &sdk.ReadRequest{Type: r.Type, Name: r.Name, ID: id, Config: r.Config}); err == nil && got != nil && got.Exists && got.IdempotencyKey != key {
			_, _ = imp.Import(t.Context(), &sdk.ImportRequest{Type: r.Type, Name: r.Name, ID: id, Config: r.Config, ClaimKey: key, ReplacesKey: got.IdempotencyKey})
		}
	}()

	// The resource carries key, a live claim: another claim is refused.
	if resp, err := stamp(claimA, ""); err == nil {
		if !resp.Claimed {
			t.Skip("Import with a claim key answered Claimed false: the provider stamps no claims")
		}
		t.Fatalf("Import with claim %q of a resource that carries the live key %q succeeded: it must fail with a conflict diagnostic (sdk.Conflict) and change nothing", claimA, key)
	} else if !sdk.IsConflict(err) {
		t.Fatalf("Import with claim %q of a resource claimed under %q failed, but not with a conflict diagnostic (sdk.Conflict): %v", claimA, key, err)
	}
	carries("after a refused Import", key)

	resp, err := release(key)
	must(t, "Release by the holder", err)
	if !resp.Released {
		t.Fatalf("Release by the holder of %q answered Released false", key)
	}
	carries("after Release", sdk.ReleasedKey(key))
	if resp, err := release(key); err != nil || !resp.Released {
		t.Fatalf("Release again (a retry): %+v, %v; want Released", resp, err)
	}

	got, err := stamp(claimA, "")
	must(t, "Import of a released resource", err)
	if !got.Claimed || got.IdempotencyKey != claimA || got.ID != id {
		t.Fatalf("Import with claim %q of a released resource: Claimed %v, key %q, id %q", claimA, got.Claimed, got.IdempotencyKey, got.ID)
	}
	carries("after the claim", claimA)
	if got, err := stamp(claimA, ""); err != nil || !got.Claimed {
		t.Fatalf("Import with the claim the resource carries (a retry): %+v, %v; want Claimed", got, err)
	}

	if _, err := stamp(claimB, ""); !sdk.IsConflict(err) {
		t.Fatalf("a second Import of id %q under claim %q, while it carries %q: %v; want a conflict diagnostic (sdk.Conflict)", id, claimB, claimA, err)
	}
	carries("after a second import was refused", claimA)
	if _, err := release(claimB); !sdk.IsConflict(err) {
		t.Fatalf("Release of claim %q by one that does not hold it (it carries %q): %v; want a conflict diagnostic", claimB, claimA, err)
	}
	carries("after a stranger's Release was refused", claimA)

	// ReplacesKey: the host names a key it may stamp over.
	got, err = stamp(key, claimA)
	must(t, "Import with ReplacesKey", err)
	if !got.Claimed {
		t.Fatalf("Import with claim %q replacing %q: Claimed false", key, claimA)
	}
	carries("after the claim was put back", key)
}

// checkCoexist checks the type's claim that a replacement configured as
// r.Replacement can exist beside the resource id (sdk.Coexistence): the
// host then makes the new one before it deletes the old one, and a claim
// that is wrong fails every such replace (or worse, lets the new one take
// the old one's place).
func (s *suite) checkCoexist(t *testing.T, c *calls, r Resource, id, key string, created *[]string) {
	rt, ok := s.schema.ResourceType(r.Type)
	if !ok {
		t.Skipf("the schema has no type %s", r.Type)
	}
	co := rt.Coexistence
	for _, k := range co.WhenDiffers {
		if _, ok := rt.Attribute(k); !ok {
			t.Errorf("Coexistence.WhenDiffers names %q, which is not an attribute of %s", k, r.Type)
		}
	}
	if r.Replacement == nil {
		t.Skip("no Resource.Replacement configured")
	}
	claims := co.Always
	for _, k := range co.WhenDiffers {
		a, inA := r.Config[k]
		b, inB := r.Replacement[k]
		if inA && inB && jsonText(a) != jsonText(b) {
			claims = true
		}
	}
	if !claims {
		t.Skipf("%s says an instance configured as Replacement cannot exist beside the first (the host deletes first): nothing to check", r.Type)
	}
	other := key + "-replacement"
	resp := c.create(t, &sdk.CreateRequest{Type: r.Type, Name: r.Name, Config: r.Replacement, IdempotencyKey: other, Protection: sdk.ProtectionEphemeral})
	if resp.ID == "" {
		t.Fatalf("%s says the replacement can exist beside %s, but its Create returned no id", r.Type, id)
	}
	*created = append(*created, resp.ID)
	defer s.deleteQuietly(t, c.p, r, resp.ID)
	if resp.ID == id {
		t.Fatalf("the replacement's Create (key %q) returned the first resource's id %q: it took the old one's place", other, id)
	}
	old := c.find(t, &sdk.ReadRequest{Type: r.Type, Name: r.Name, ID: id, Config: r.Config}, id)
	checkAttributes(t, "the first resource, read by id beside its replacement", r.Config, old.Attributes)
	nw := c.find(t, &sdk.ReadRequest{Type: r.Type, Name: r.Name, ID: resp.ID, Config: r.Replacement}, resp.ID)
	checkAttributes(t, "the replacement, read by id", r.Replacement, nw.Attributes)
	if s.keys() && old.IdempotencyKey != key {
		t.Errorf("beside its replacement, the first resource reports key %q, want %q", old.IdempotencyKey, key)
	}
}

// checkData reads each of the resource's data sources in a fresh session
// configured read-only (as a plan reads them): each answers without error,
// with every argument it was given and every result its data source
// declares, the same twice, writing nothing in the data folder; through
// sdk.Serve, a result set in the config is refused before the provider.
func (s *suite) checkData(t *testing.T, rc *resourceRun) {
	if len(rc.r.Data) == 0 {
		t.Skip("Resource.Data is not set")
	}
	if _, ok := rc.p.(sdk.DataReader); !ok {
		t.Fatal("Resource.Data is set, but the provider is no sdk.DataReader")
	}
	before := snapshot(t, s.dataDir)
	fresh, _ := s.open(t)
	cr, err := fresh.Configure(t.Context(), &sdk.ConfigureRequest{Config: s.cfg.ProviderConfig, DataDir: s.dataDir, ReadOnly: true})
	if cr == nil {
		cr = &sdk.ConfigureResponse{}
	}
	must(t, "Configure (ReadOnly)", s.fold(t, "Configure (ReadOnly)", err, cr.Diagnostics))
	schema, err := fresh.GetSchema(t.Context(), &sdk.GetSchemaRequest{})
	if err != nil || schema == nil {
		t.Fatalf("GetSchema: %v", err)
	}
	if s.served && !schema.Capabilities.ReadData {
		t.Error("GetSchema through gRPC: the provider implements sdk.DataReader but Capabilities.ReadData is false")
	}
	dr, ok := fresh.(sdk.DataReader)
	if !ok {
		t.Fatal("a fresh instance is no sdk.DataReader")
	}
	for i, d := range rc.r.Data {
		dt, ok := schema.DataSource(d.Type)
		if !ok {
			t.Errorf("Data[%d]: the schema has no data source %q", i, d.Type)
			continue
		}
		cfg := d.Config(rc.id, maps.Clone(rc.attrs))
		if ds := sdk.CheckDataConfig(dt, cfg); ds.HasError() {
			t.Errorf("Data[%d]: the config %v is not valid for data source %s (a mistake in the test's Config): %v", i, cfg, d.Type, ds)
			continue
		}
		read := func() sdk.Attributes {
			t.Helper()
			resp, err := dr.ReadData(t.Context(), &sdk.ReadDataRequest{Type: d.Type, Name: rc.r.Name + "-data", Config: cfg})
			if resp == nil {
				resp = &sdk.ReadDataResponse{}
			}
			must(t, fmt.Sprintf("ReadData %s %v", d.Type, cfg), s.fold(t, "ReadData", err, resp.Diagnostics))
			return resp.Attributes
		}
		got := read()
		for _, a := range dt.Attributes {
			if _, set := cfg[a.Name]; (set || a.Computed) && !hasKey(got, a.Name) {
				t.Errorf("ReadData %s: the answer lacks %q (every argument given and every result must be there, null when it has no value)", d.Type, a.Name)
			}
		}
		if d.Want != nil {
			for k, v := range d.Want(rc.id, maps.Clone(rc.attrs)) {
				if !reflect.DeepEqual(got[k], v) {
					t.Errorf("ReadData %s: %s = %#v, want %#v", d.Type, k, got[k], v)
				}
			}
		}
		if again := read(); !reflect.DeepEqual(again, got) {
			t.Errorf("ReadData %s is not stable: a second read answered\n%v\nthe first\n%v", d.Type, again, got)
		}
		if s.served {
			for _, a := range dt.Attributes {
				if !a.Computed || a.Required {
					continue
				}
				bad := maps.Clone(cfg)
				bad[a.Name] = got[a.Name]
				if bad[a.Name] == nil {
					bad[a.Name] = "providertest"
				}
				resp, err := dr.ReadData(t.Context(), &sdk.ReadDataRequest{Type: d.Type, Name: rc.r.Name + "-data", Config: bad})
				if err == nil && resp != nil && !resp.Diagnostics.HasError() {
					t.Errorf("ReadData %s with the result %q set in its config was accepted; sdk.Serve refuses it", d.Type, a.Name)
				}
				break
			}
		}
	}
	if after := snapshot(t, s.dataDir); !reflect.DeepEqual(before, after) {
		t.Errorf("reading data in a session configured with ReadOnly changed the data folder; a read must write nothing anywhere:\n%s", snapshotDiff(before, after))
	}
}

func hasKey(m map[string]any, k string) bool {
	_, ok := m[k]
	return ok
}
