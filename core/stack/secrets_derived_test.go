package stack_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bulwark-iac/bulwark/core/events"
	"github.com/bulwark-iac/bulwark/core/inspect"
	"github.com/bulwark-iac/bulwark/core/pluginhost"
	"github.com/bulwark-iac/bulwark/core/providers"
	"github.com/bulwark-iac/bulwark/core/secrets"
	"github.com/bulwark-iac/bulwark/core/stack"
	"github.com/bulwark-iac/bulwark/core/state"
)

// bucketStarter starts fake providers that, as the aws one does for a
// bucket, make the id and an arn from the config's bucket name.
type bucketStarter struct{ w *fakeWorld }

func (s bucketStarter) Start(_ context.Context, cfg pluginhost.Config) (stack.Provider, error) {
	return &bucketProvider{&fakeProvider{w: s.w, source: cfg.Source}}, nil
}

func (bucketStarter) Close() {}

type bucketProvider struct{ *fakeProvider }

func (p *bucketProvider) Schema() *providers.GetSchemaResponse {
	s := p.fakeProvider.Schema()
	for i := range s.ResourceTypes {
		s.ResourceTypes[i].Attributes = append(s.ResourceTypes[i].Attributes,
			providers.Attribute{Name: "bucket", Type: providers.TypeString, ForceNew: true},
			providers.Attribute{Name: "arn", Type: providers.TypeString, Computed: true})
	}
	return s
}

func (p *bucketProvider) Create(ctx context.Context, req *providers.CreateRequest) (*providers.CreateResponse, error) {
	resp, err := p.fakeProvider.Create(ctx, req)
	bucket, _ := req.Config["bucket"].(string)
	if err != nil || resp.Diagnostics.HasError() || bucket == "" {
		return resp, err
	}
	w := p.w
	w.mu.Lock()
	defer w.mu.Unlock()
	r := w.resources[resp.ID]
	delete(w.resources, resp.ID)
	r.ID, r.Attrs["arn"] = bucket, "arn:fake:::"+bucket
	w.resources[r.ID] = r
	resp.ID, resp.Attributes = r.ID, map[string]any{"bucket": bucket, "arn": r.Attrs["arn"]}
	for k, v := range r.Attrs {
		resp.Attributes[k] = v
	}
	return resp, nil
}

// TestIDComputedFromSecretSealed: a value computed from a secret is a secret.
// With a sensitive variable tok, a bucket named "bk-${var.tok}" gets, from
// its provider, an id and an arn that hold tok. The state and the journal
// hold them sealed; state show, state list and the plan (text and JSON) mask
// them whole; the events and the output hold none of it. In memory the id is
// clear: a re-plan reads the bucket by it and finds nothing to do, and a
// dependent that quotes the id is a secret too.
func TestIDComputedFromSecretSealed(t *testing.T) {
	const tok = "tok-s3cr3t-c0mputed-91e4"
	e := newEnv(t)
	key, err := secrets.NewKey("test")
	if err != nil {
		t.Fatal(err)
	}
	var evs syncBuffer
	// Each call is one command: a Redactor of its own, as the CLI's.
	opts := func() stack.Options {
		o := e.opts()
		o.Starter = func() stack.Starter { return bucketStarter{e.w} }
		o.Events = events.NewWriter(&evs, nil)
		o.Secrets = &secrets.Source{Env: key.Encode()}
		o.Redactor = secrets.NewRedactor()
		return o
	}
	text0 := `version: 1
stack: s
variables:
  tok: {type: string, sensitive: true, default: ` + tok + `}
providers:
  fake: {}
resources:
  - name: b
    type: s3_bucket
    config: {bucket: "bk-${var.tok}"}
  - name: app
    type: compute
    config: {zone: "${b.id}"}
`
	sp := expanded(t, text0, nil)
	e.mustApply(t, sp, func(o *stack.Options) { *o = opts() })
	if got := e.w.ByName("b"); got == nil || got.ID != "bk-"+tok {
		t.Fatalf("the provider made %+v, want the id bk-%s", got, tok)
	}
	if got := e.w.ByName("app"); got == nil || got.Attrs["zone"] != "bk-"+tok {
		t.Fatalf("app was made with %+v, want the zone the id", got)
	}

	dir := stack.StackDir(e.stateDir, "s")
	stored := func() []byte {
		var all []byte
		err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err != nil || !d.Type().IsRegular() || strings.Contains(p, string(filepath.Separator)+"providers"+string(filepath.Separator)) {
				return err
			}
			b, err := os.ReadFile(p)
			all = append(all, b...)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return all
	}
	clear := func(what string, b []byte) {
		t.Helper()
		if i := bytes.Index(b, []byte(tok)); i >= 0 {
			t.Errorf("%s holds the secret in clear: …%s…", what, b[max(0, i-120):min(len(b), i+60)])
		}
	}
	clear("the state folder", stored())
	clear("the journal", journalBytes(t, dir))
	raw := e.state(t, "s").Resources["b"]
	if !secrets.IsSealed(raw.ID) {
		t.Errorf("the stored id is %q, want it sealed", raw.ID)
	}
	for _, k := range []string{state.SensitiveID, "arn", "bucket"} {
		if !strings.Contains(strings.Join(raw.Sensitive, ","), k) {
			t.Errorf("the record lists %v as sensitive, want %s among them", raw.Sensitive, k)
		}
	}

	// state show and state list mask the id and what holds it, whole.
	shown, err := inspect.StateShow(sp, opts(), "b")
	if err != nil {
		t.Fatal(err)
	}
	if shown.ID != secrets.Mask || shown.Attributes["arn"] != secrets.Mask || shown.Config["bucket"] != secrets.Mask {
		t.Errorf("state show: id %q, config %v, attributes %v: want each masked", shown.ID, shown.Config, shown.Attributes)
	}
	app, err := inspect.StateShow(sp, opts(), "app")
	if err != nil {
		t.Fatal(err)
	}
	if app.Config["zone"] != secrets.Mask {
		t.Errorf("state show app: config %v, want the zone (the id) masked", app.Config)
	}
	rep, err := inspect.Status(sp, opts())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rep.Resources {
		if r.Name == "b" && r.ID != secrets.Mask {
			t.Errorf("status shows b's id as %q, want it masked", r.ID)
		}
	}
	list, err := inspect.StateList(sp, opts())
	if err != nil {
		t.Fatal(err)
	}
	js, _ := json.Marshal(list)
	clear("state list", js)

	// The id reaches the provider clear: the re-plan finds everything in
	// place; the plan shows none of it.
	pv, err := stack.Plan(e.ctx, sp, opts())
	if err != nil {
		t.Fatal(err)
	}
	if pv.HasChanges() {
		t.Errorf("a re-plan has changes: %+v", pv.Changes)
	}
	clear("the plan", planShows(t, pv))
	js, err = json.Marshal(pv)
	if err != nil {
		t.Fatal(err)
	}
	clear("plan --json", js)

	// A changed dependent is planned and applied with the id masked.
	changed := expanded(t, strings.Replace(text0, `zone: "${b.id}"`, `zone: "z-${b.id}"`, 1), nil)
	pv, err = stack.Plan(e.ctx, changed, opts())
	if err != nil {
		t.Fatal(err)
	}
	clear("the plan of a change", planShows(t, pv))
	js, _ = json.Marshal(pv)
	clear("plan --json of a change", js)
	// Saved (plan --out), the plan file holds the ids sealed; applied, it
	// opens them to check that reality is what the plan saw.
	planPath := filepath.Join(t.TempDir(), "p.plan")
	if _, err := stack.SavePlan(e.ctx, changed, opts(), planPath, "test"); err != nil {
		t.Fatal(err)
	}
	saved, err := os.ReadFile(planPath)
	if err != nil {
		t.Fatal(err)
	}
	clear("the saved plan", saved)
	p, err := stack.OpenPlan(planPath, opts())
	if err != nil {
		t.Fatal(err)
	}
	js, _ = json.Marshal(stack.PreviewOf(p.File))
	clear("the saved plan shown", js)
	res, err := stack.ApplyPlan(e.ctx, p, opts())
	if code := stack.ExitCode(res, err); code != stack.ExitOK {
		t.Fatalf("apply of the saved plan: exit %d, %v %v", code, err, resErr(res))
	}
	if got := e.w.ByName("app"); got == nil || got.Attrs["zone"] != "z-bk-"+tok {
		t.Fatalf("after the saved plan app is %+v", got)
	}
	clear("the state folder", stored())

	// The teardown deletes by the id, opened from the state.
	res, err = stack.Teardown(e.ctx, changed, opts())
	if code := stack.ExitCode(res, err); code != stack.ExitOK {
		t.Fatalf("teardown: exit %d, %v %v", code, err, resErr(res))
	}
	if n := len(e.w.Names()); n != 0 {
		t.Errorf("after the teardown the world holds %v", e.w.Names())
	}
	var deleted []string
	for _, d := range e.w.Deletes() {
		deleted = append(deleted, d.ID)
	}
	if !strings.Contains(strings.Join(deleted, ","), "bk-"+tok) {
		t.Errorf("the teardown deleted %v, want the bucket by its clear id", deleted)
	}
	clear("the events", []byte(evs.String()))
	clear("the output", []byte(e.out.String()))
	clear("the state folder", stored())
}
