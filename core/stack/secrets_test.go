package stack_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/bulwark-iac/bulwark/core/events"
	"github.com/bulwark-iac/bulwark/core/plan"
	"github.com/bulwark-iac/bulwark/core/pluginhost"
	"github.com/bulwark-iac/bulwark/core/providers"
	"github.com/bulwark-iac/bulwark/core/secrets"
	"github.com/bulwark-iac/bulwark/core/stack"
)

const (
	fakeToken   = "tok-provider-cfg-51c2a9"
	fakeSecret  = "s3cr3t-attribute-7b1e"
	fakeSecret2 = "another-s3cr3t-value-0d4f"
)

// secretStarter starts fake providers whose schema marks a "secret"
// attribute and a "token" config key sensitive, and whose errors quote
// both, as a careless plugin's would.
type secretStarter struct {
	w *fakeWorld

	mu   sync.Mutex
	leak map[string]bool // Create of these names fails, quoting the values
}

func (s *secretStarter) Leak(name string, on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.leak[name] = on
}

func (s *secretStarter) starter() func() stack.Starter {
	return func() stack.Starter { return secretHost{s} }
}

type secretHost struct{ s *secretStarter }

func (h secretHost) Start(ctx context.Context, cfg pluginhost.Config) (stack.Provider, error) {
	p := &secretProvider{fakeProvider: &fakeProvider{w: h.s.w, source: cfg.Source}, s: h.s}
	p.token, _ = cfg.Config["token"].(string)
	if cfg.Check != nil {
		// As the real host does: before Configure.
		if err := cfg.Check(p.Schema()); err != nil {
			return nil, err
		}
	}
	if p.token == "" {
		return nil, fmt.Errorf("configure: no token")
	}
	return p, nil
}

func (secretHost) Close() {}

type secretProvider struct {
	*fakeProvider
	s     *secretStarter
	token string
}

func (p *secretProvider) Schema() *providers.GetSchemaResponse {
	s := p.fakeProvider.Schema()
	for i := range s.ResourceTypes {
		s.ResourceTypes[i].Attributes = append(s.ResourceTypes[i].Attributes, providers.Attribute{Name: "secret", Type: providers.TypeString, Sensitive: true})
	}
	s.ProviderConfig = []providers.Attribute{{Name: "token", Type: providers.TypeString, Required: true, Sensitive: true}}
	return s
}

func (p *secretProvider) Create(ctx context.Context, req *providers.CreateRequest) (*providers.CreateResponse, error) {
	p.s.mu.Lock()
	leak := p.s.leak[req.Name]
	p.s.mu.Unlock()
	if leak {
		return nil, fmt.Errorf("backend refused %s: secret %q with token %s", req.Name, req.Config["secret"], p.token)
	}
	return p.fakeProvider.Create(ctx, req)
}

func secretSpec(secret string) string {
	return fmt.Sprintf(`version: 1
stack: s
providers:
  fake: {config: {token: %s}}
resources:
  - name: db
    type: s3_bucket
    config: {secret: %q, size: 1}
  - name: app
    type: compute
    depends_on: [db]
    intervention: true
    config: {secret: %q}
`, fakeToken, secret, fakeSecret2)
}

// planShows is everything a view of the plan can show a person, for the
// checks that no secret is in it: the plan's data (cmd/bulwark's text view,
// internal/planview, is drawn from it and masks the sensitive attributes
// the data holds) and its refusal's words.
func planShows(t interface{ Fatal(...any) }, pv *stack.Preview) []byte {
	b, err := json.Marshal(pv)
	if err != nil {
		t.Fatal(err)
	}
	if err := pv.Err(); err != nil {
		b = append(b, err.Error()...)
	}
	return b
}

// changesSensitive reports whether the plan updates resource's sensitive
// attr: a view shows the change as "attr: (sensitive) -> (sensitive)".
func changesSensitive(pv *stack.Preview, resource, attr string) bool {
	for _, c := range pv.Changes {
		if c.Resource == resource && c.Action == plan.Update && slices.Contains(c.Sensitive, attr) {
			before, had := c.Before[attr]
			after, has := c.After[attr]
			return had && has && !plan.Equal(before, after)
		}
	}
	return false
}

// noClear fails when any clear value is in b.
func noClear(t *testing.T, what string, b []byte) {
	t.Helper()
	for _, v := range []string{fakeToken, fakeSecret, fakeSecret2, "new-" + fakeSecret} {
		if bytes.Contains(b, []byte(v)) {
			t.Errorf("%s holds %q in clear:\n%s", what, v, b)
		}
	}
}

func TestSecretsNeverInClear(t *testing.T) {
	e := newEnv(t)
	ss := &secretStarter{w: e.w, leak: map[string]bool{"app": true}}
	key, err := secrets.NewKey("test")
	if err != nil {
		t.Fatal(err)
	}
	var evs syncBuffer
	opts := func() stack.Options {
		o := e.opts()
		o.Starter = ss.starter()
		o.Events = events.NewWriter(&evs, nil)
		o.Secrets = &secrets.Source{Env: key.Encode()}
		return o
	}
	dir := stack.StackDir(e.stateDir, "s")
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}

	// A failing Create whose error quotes the secret and the token: the
	// error, the journal, the events, the output and the intervention the
	// state records all mask them.
	res, err := stack.Apply(e.ctx, parseSpec(t, secretSpec(fakeSecret)), opts())
	if err != nil {
		t.Fatal(err)
	}
	if code := stack.ExitCode(res, nil); code != stack.ExitIntervention {
		t.Fatalf("exit %d, want %d (err %v)", code, stack.ExitIntervention, res.Err)
	}
	if !strings.Contains(res.Err.Error(), secrets.Mask) {
		t.Errorf("the error does not show the mask: %v", res.Err)
	}
	noClear(t, "the error", []byte(res.Err.Error()))
	noClear(t, "the journal", journalBytes(t, dir))
	noClear(t, "state.json", read("state.json"))
	noClear(t, "the events", []byte(evs.String()))
	noClear(t, "the output", []byte(e.out.String()))
	if _, err := stack.Ack(e.stateDir, res.Op, nil); err != nil {
		t.Fatal(err)
	}
	noClear(t, "state.json after ack", read("state.json"))

	// It converges once the provider stops failing; plan then has nothing
	// to do, though the state holds every sensitive value sealed.
	ss.Leak("app", false)
	e.mustApply(t, parseSpec(t, secretSpec(fakeSecret)), func(o *stack.Options) { *o = opts() })
	noClear(t, "state.json", read("state.json"))
	if !bytes.Contains(read("state.json"), []byte(secrets.Prefix)) {
		t.Error("state.json holds no sealed value")
	}
	pv, err := stack.Plan(e.ctx, parseSpec(t, secretSpec(fakeSecret)), opts())
	if err != nil {
		t.Fatal(err)
	}
	if pv.HasChanges() {
		t.Errorf("a re-plan has changes: %+v", pv.Changes)
	}

	// A changed secret: an update, planned and applied; the plan (text and
	// JSON) and the backup the update writes mask it.
	changed := parseSpec(t, secretSpec("new-"+fakeSecret))
	pv, err = stack.Plan(e.ctx, changed, opts())
	if err != nil {
		t.Fatal(err)
	}
	if !pv.HasChanges() {
		t.Error("a changed secret plans no change")
	}
	noClear(t, "the plan", planShows(t, pv))
	if !changesSensitive(pv, "db", "secret") {
		t.Errorf("the plan does not hold the masked change: %+v", pv.Changes)
	}
	js, err := json.Marshal(pv)
	if err != nil {
		t.Fatal(err)
	}
	noClear(t, "plan --json", js)
	e.mustApply(t, changed, func(o *stack.Options) { *o = opts() })
	noClear(t, "state.json", read("state.json"))
	backups, _ := filepath.Glob(filepath.Join(dir, "backups", "*"))
	if len(backups) == 0 {
		t.Fatal("the update wrote no backup")
	}
	for _, b := range backups {
		raw, _ := os.ReadFile(b)
		noClear(t, b, raw)
	}
	noClear(t, "the journal", journalBytes(t, dir))
	noClear(t, "the events", []byte(evs.String()))

	// rollback opens the sealed spec of revision 1 and converges to it.
	res, err = stack.Rollback(e.ctx, parseSpec(t, secretSpec("new-"+fakeSecret)), opts(), 1)
	if code := stack.ExitCode(res, err); code != stack.ExitOK {
		t.Fatalf("rollback: exit %d, err %v %v", code, err, resErr(res))
	}
	if got := e.w.ByName("db").Attrs["secret"]; got != fakeSecret {
		t.Errorf("after rollback the secret is %v", got)
	}
	noClear(t, "state.json", read("state.json"))

	// Another key cannot open the state, and says which key it tried.
	other, _ := secrets.NewKey("x")
	o := opts()
	o.Secrets = &secrets.Source{Env: other.Encode()}
	_, err = stack.Plan(e.ctx, changed, o)
	if !errors.Is(err, secrets.ErrCannotOpen) || !strings.Contains(err.Error(), secrets.EnvKey) {
		t.Errorf("plan with another key: %v", err)
	}
	_, err = stack.Apply(e.ctx, changed, o)
	if !errors.Is(err, secrets.ErrCannotOpen) {
		t.Errorf("apply with another key: %v", err)
	}
}

func TestProviderConfigCheckedBeforeConfigure(t *testing.T) {
	e := newEnv(t)
	ss := &secretStarter{w: e.w, leak: map[string]bool{}}
	o := e.opts()
	o.Starter = ss.starter()
	sp := parseSpec(t, "version: 1\nstack: s\nproviders:\n  fake:\n    config: {tokn: x}\nresources:\n  - name: db\n    type: s3_bucket\n")
	_, err := stack.Apply(e.ctx, sp, o)
	want := []string{
		`stack.yaml:5:13: provider "fake": missing required config key "token"`,
		`stack.yaml:5:14: provider "fake": unknown config key "tokn" (has: token)`,
	}
	if err == nil || err.Error() != strings.Join(want, "\n") {
		t.Fatalf("apply = %v, want\n%s", err, strings.Join(want, "\n"))
	}
	if len(e.w.Names()) != 0 {
		t.Errorf("a rejected provider config created %v", e.w.Names())
	}
}

// A stack applied before sealing existed: its state and its backups hold
// the values in clear. The next operation loads it as it is and seals both.
func TestOldStateSealedWithItsBackups(t *testing.T) {
	e := newEnv(t)
	ss := &secretStarter{w: e.w, leak: map[string]bool{}}
	old := e.opts()
	old.Starter = ss.starter() // no Secrets: as bulwark wrote states before
	sp := parseSpec(t, secretSpec(fakeSecret))
	e.mustApply(t, sp, func(o *stack.Options) { *o = old })
	// An update (its spec text differs, so it is no no-op): a backup.
	e.mustApply(t, parseSpec(t, secretSpec(fakeSecret)+"# edited\n"), func(o *stack.Options) { *o = old })
	dir := stack.StackDir(e.stateDir, "s")
	files := func() []string {
		b, _ := filepath.Glob(filepath.Join(dir, "backups", "*.json"))
		return append(b, filepath.Join(dir, "state.json"))
	}
	if raw, _ := os.ReadFile(filepath.Join(dir, "state.json")); !bytes.Contains(raw, []byte(fakeSecret)) {
		t.Fatal("setup: the old state should hold the secret in clear")
	}
	if len(files()) < 2 {
		t.Fatal("setup: no backup")
	}
	key, _ := secrets.NewKey("test")
	o := e.opts()
	o.Starter = ss.starter()
	o.Secrets = &secrets.Source{Env: key.Encode()}
	pv, err := stack.Plan(e.ctx, sp, o)
	if err != nil || pv.HasChanges() {
		t.Fatalf("plan of the old state: %v, changes %v", err, pv)
	}
	e.mustApply(t, sp, func(x *stack.Options) { *x = o })
	for _, f := range files() {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		noClear(t, f, raw)
	}
}
