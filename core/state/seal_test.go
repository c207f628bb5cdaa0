package state

import (
	"encoding/json"
	"errors"
	"github.com/bulwark-iac/bulwark/core/protection"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bulwark-iac/bulwark/core/secrets"
)

const (
	clearSecret = "hunter2-attribute-value"
	clearToken  = "tok-provider-config-9f8e7d"
	specText    = "version: 1\nstack: demo\nproviders:\n  mock: {config: {token: " + clearToken + "}}\n"
)

func box(t *testing.T) *secrets.Box {
	t.Helper()
	k, err := secrets.NewKey("test key")
	if err != nil {
		t.Fatal(err)
	}
	return k.Box("stack demo")
}

func sensitiveSecret(r *Resource) []string {
	if r.Type == "s3_bucket" {
		return []string{"secret"}
	}
	return nil
}

// writeSensitive records a resource with a sensitive value in its config,
// attributes and prior, and a revision whose spec holds a token.
func writeSensitive(t *testing.T, s *Store) {
	t.Helper()
	err := s.Mutate(func(st *State) error {
		st.Resources["b"] = &Resource{
			Name: "b", Type: "s3_bucket", ID: "b-1", Protection: protection.Ephemeral,
			Config:     map[string]any{"secret": clearSecret, "size": 1.0},
			Attributes: map[string]any{"secret": clearSecret, "size": 1.0, "arn": "mock:b"},
			Prior:      &Prior{Op: "op_1", Config: map[string]any{"secret": "old-" + clearSecret}},
		}
		st.Revisions = append(st.Revisions, Revision{N: 1, Op: "op_1", File: "s.yaml", Spec: specText, Status: RevisionApplied})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestSealedStateHoldsNoSecretInClear(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "demo")
	b := box(t)
	var revealed []any
	s, err := OpenSealed(dir, "demo", Sealing{Sealer: b, Reveal: func(v any) { revealed = append(revealed, v) }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetSensitive(sensitiveSecret); err != nil {
		t.Fatal(err)
	}
	writeSensitive(t, s)
	raw, err := os.ReadFile(filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	for _, clear := range []string{clearSecret, clearToken} {
		if strings.Contains(string(raw), clear) {
			t.Errorf("state.json holds %q in clear:\n%s", clear, raw)
		}
	}
	if !strings.Contains(string(raw), secrets.Prefix) {
		t.Errorf("state.json holds no sealed value:\n%s", raw)
	}
	if len(revealed) == 0 {
		t.Error("Reveal was told nothing")
	}
	// In memory, and after reopening with the key, the values are clear.
	for _, st := range []*State{s.Snapshot(), reopen(t, dir, b).Snapshot()} {
		r := st.Resources["b"]
		if r.Config["secret"] != clearSecret || r.Attributes["secret"] != clearSecret || r.Prior.Config["secret"] != "old-"+clearSecret {
			t.Errorf("values not clear in memory: %+v", r)
		}
		if st.Revisions[0].Spec != specText {
			t.Errorf("revision spec = %q", st.Revisions[0].Spec)
		}
		if r.Config["size"] != 1.0 {
			t.Errorf("a value that is not sensitive changed: %v", r.Config["size"])
		}
	}
	// LoadSealed opens them too; Load leaves them sealed.
	st, err := LoadSealed(filepath.Join(dir, FileName), Sealing{Sealer: b})
	if err != nil || st.Resources["b"].Config["secret"] != clearSecret {
		t.Fatalf("LoadSealed: %v, %v", err, st)
	}
	st, err = Load(filepath.Join(dir, FileName))
	if err != nil || !secrets.IsSealed(st.Resources["b"].Config["secret"].(string)) {
		t.Fatalf("Load: %v, %v", err, st)
	}
}

func reopen(t *testing.T, dir string, b *secrets.Box) *Store {
	t.Helper()
	s, err := OpenSealed(dir, "demo", Sealing{Sealer: b})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSealedStateWrongKey(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "demo")
	s, err := OpenSealed(dir, "demo", Sealing{Sealer: box(t)})
	if err != nil {
		t.Fatal(err)
	}
	s.SetSensitive(sensitiveSecret)
	writeSensitive(t, s)
	_, err = OpenSealed(dir, "demo", Sealing{Sealer: box(t)})
	if !errors.Is(err, secrets.ErrCannotOpen) || !strings.Contains(err.Error(), "test key") {
		t.Fatalf("open with another key: %v", err)
	}
}

func TestStoreWithoutSealerKeepsSealedValues(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "demo")
	b := box(t)
	s, _ := OpenSealed(dir, "demo", Sealing{Sealer: b})
	s.SetSensitive(sensitiveSecret)
	writeSensitive(t, s)
	// ack: no key, a write of something else.
	plain, err := Open(dir, "demo")
	if err != nil {
		t.Fatal(err)
	}
	if err := plain.Mutate(func(st *State) error { st.Interventions = nil; return nil }); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(filepath.Join(dir, FileName))
	if strings.Contains(string(raw), clearSecret) || strings.Contains(string(raw), clearToken) {
		t.Fatalf("a write without the key put a value in clear:\n%s", raw)
	}
	if got := reopen(t, dir, b).Snapshot().Resources["b"].Config["secret"]; got != clearSecret {
		t.Fatalf("after a keyless write the value opens as %v", got)
	}
}

func TestOldClearStateIsSealedOnOpen(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "demo")
	old, _ := Open(dir, "demo")
	writeSensitive(t, old) // no sealing: as before this change
	raw, _ := os.ReadFile(filepath.Join(dir, FileName))
	if !strings.Contains(string(raw), clearSecret) {
		t.Fatal("setup: the old state should hold the value in clear")
	}
	b := box(t)
	s, err := OpenSealed(dir, "demo", Sealing{Sealer: b})
	if err != nil {
		t.Fatalf("an old state does not load: %v", err)
	}
	if got := s.Snapshot().Resources["b"].Config["secret"]; got != clearSecret {
		t.Fatalf("old value = %v", got)
	}
	// A backup of the old state, taken before sealing existed.
	backup := filepath.Join(dir, "backups", "state-op_0.json")
	os.MkdirAll(filepath.Dir(backup), 0o700)
	os.WriteFile(backup, raw, 0o600)
	if resealed, err := s.SetSensitive(sensitiveSecret); err != nil || !resealed {
		t.Fatalf("SetSensitive = %v, %v; want a reseal", resealed, err)
	}
	if again, err := s.SetSensitive(sensitiveSecret); err != nil || again {
		t.Fatalf("a second SetSensitive = %v, %v; want nothing to do", again, err)
	}
	if ok, err := ResealFile(backup, Sealing{Sealer: b}, sensitiveSecret); err != nil || !ok {
		t.Fatalf("ResealFile = %v, %v", ok, err)
	}
	braw, _ := os.ReadFile(backup)
	for _, clear := range []string{clearSecret, clearToken} {
		if strings.Contains(string(braw), clear) {
			t.Errorf("the resealed backup still holds %q", clear)
		}
	}
	if bst, err := LoadSealed(backup, Sealing{Sealer: b}); err != nil || bst.Resources["b"].Config["secret"] != clearSecret {
		t.Fatalf("the resealed backup opens as %v, %v", bst, err)
	}
	if ok, err := ResealFile(backup, Sealing{Sealer: b}, sensitiveSecret); err != nil || ok {
		t.Fatalf("a second ResealFile = %v, %v; want nothing to do", ok, err)
	}
	raw, _ = os.ReadFile(filepath.Join(dir, FileName))
	for _, clear := range []string{clearSecret, clearToken} {
		if strings.Contains(string(raw), clear) {
			t.Errorf("after opening with the schema known, state.json still holds %q", clear)
		}
	}
	if got := reopen(t, dir, b).Snapshot(); got.Resources["b"].Attributes["secret"] != clearSecret || got.Revisions[0].Spec != specText {
		t.Fatalf("resealed state reopens as %+v", got.Resources["b"])
	}
}

// TestSealedOutputsAndVariables: a sensitive output's value and a revision's
// sensitive variable values are sealed in the file and opened on load; the
// others stay in clear, as they are shown.
func TestSealedOutputsAndVariables(t *testing.T) {
	const pw, url = "s3cr3t-variable-pw", "postgres://app:s3cr3t-variable-pw@db"
	dir := filepath.Join(t.TempDir(), "demo")
	b := box(t)
	var revealed []any
	sl := Sealing{Sealer: b, Reveal: func(v any) { revealed = append(revealed, v) }}
	s, err := OpenSealed(dir, "demo", sl)
	if err != nil {
		t.Fatal(err)
	}
	err = s.Mutate(func(st *State) error {
		st.Outputs = map[string]Output{
			"url":  {Value: url, Sensitive: true},
			"port": {Value: 5432.0, Sensitive: true},
			"name": {Value: "plain-output-name", Description: "d"},
		}
		st.Revisions = append(st.Revisions, Revision{N: 1, Op: "op_1", Spec: "version: 1", Status: RevisionApplied,
			Variables: map[string]any{"pw": pw, "env": "plain-env"}, SensitiveVariables: []string{"pw"}})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	for _, clear := range []string{pw, "5432"} {
		if strings.Contains(string(raw), clear) {
			t.Errorf("state.json holds %q in clear:\n%s", clear, raw)
		}
	}
	for _, plain := range []string{"plain-output-name", "plain-env"} {
		if !strings.Contains(string(raw), plain) {
			t.Errorf("state.json lost %q:\n%s", plain, raw)
		}
	}
	for _, tc := range []struct {
		name string
		sl   Sealing
		open bool
	}{{"with the key", sl, true}, {"without a key", Sealing{}, false}} {
		t.Run(tc.name, func(t *testing.T) {
			st, err := LoadSealed(filepath.Join(dir, FileName), tc.sl)
			if err != nil {
				t.Fatal(err)
			}
			got, gotPort, gotPw := st.Outputs["url"].Value, st.Outputs["port"].Value, st.Revisions[0].Variables["pw"]
			if tc.open {
				if got != url || gotPort != 5432.0 || gotPw != pw {
					t.Errorf("opened %v, %v, %v", got, gotPort, gotPw)
				}
				return
			}
			for _, v := range []any{got, gotPort, gotPw} {
				if sv, ok := v.(string); !ok || !secrets.IsSealed(sv) {
					t.Errorf("without a key %v is not left sealed", v)
				}
			}
		})
	}
	if len(revealed) == 0 {
		t.Error("Reveal was told nothing")
	}
}

// A provider's private data is stored sealed whatever it holds, opened on
// load byte for byte, and a Store without the key keeps it sealed as it is.
func TestPrivateDataIsSealed(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "demo")
	b := box(t)
	s, err := OpenSealed(dir, "demo", Sealing{Sealer: b})
	if err != nil {
		t.Fatal(err)
	}
	priv := []byte(`{"token":"` + clearSecret + `"}` + "\x00\xff")
	if err := s.Mutate(func(st *State) error {
		r := &Resource{Name: "b", Type: "network", ID: "b-1", Protection: protection.Ephemeral}
		r.SetPrivate(priv)
		r.SetPrivate(nil) // empty keeps what is recorded
		st.Resources["b"] = r
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	r := s.Snapshot().Resources["b"]
	if strings.Contains(string(raw), clearSecret) || strings.Contains(string(raw), r.Private.Text()) {
		t.Errorf("state.json holds the private data in clear:\n%s", raw)
	}
	if !strings.Contains(string(raw), `"private": "`+secrets.Prefix) && !strings.Contains(string(raw), `"private":"`+secrets.Prefix) {
		t.Errorf("state.json holds no sealed private data:\n%s", raw)
	}

	st, err := LoadSealed(filepath.Join(dir, FileName), Sealing{Sealer: b})
	if err != nil {
		t.Fatal(err)
	}
	if got := st.Resources["b"].PrivateData(); string(got) != string(priv) {
		t.Errorf("loaded private data %q, want %q", got, priv)
	}

	// Without the key: sealed in memory (PrivateData is nil), written back
	// as it was.
	nokey, err := Open(dir, "demo")
	if err != nil {
		t.Fatal(err)
	}
	if got := nokey.Snapshot().Resources["b"].PrivateData(); got != nil {
		t.Errorf("private data without the key: %q, want nil", got)
	}
	if err := nokey.Mutate(func(*State) error { return nil }); err != nil {
		t.Fatal(err)
	}
	st, err = LoadSealed(filepath.Join(dir, FileName), Sealing{Sealer: b})
	if err != nil {
		t.Fatal(err)
	}
	if got := st.Resources["b"].PrivateData(); string(got) != string(priv) {
		t.Errorf("after a write without the key: %q, want %q", got, priv)
	}
}

// TestSensitiveIDIsSealed: a resource whose ID holds a
// secret (SensitiveID in its Sensitive) is stored with the ID sealed, by
// each way a store seals (the whole state, one resource), and opened clear,
// told to Reveal; without a key the ID stays sealed; a state that holds it
// clear is reported so.
func TestSensitiveIDIsSealed(t *testing.T) {
	const id = "bk-" + clearSecret
	newRes := func() *Resource {
		return &Resource{Name: "b", Type: "s3_bucket", ID: id, Protection: protection.Ephemeral,
			Config:     map[string]any{"bucket": id},
			Attributes: map[string]any{"bucket": id, "arn": "arn:aws:s3:::" + id},
			Sensitive:  []string{SensitiveID, "arn", "bucket"}}
	}
	b := box(t)
	seals := []struct {
		name string
		seal func(t *testing.T, sl Sealing) *Resource
	}{
		{"SealResource", func(t *testing.T, sl Sealing) *Resource {
			r, err := SealResource(newRes(), sl)
			if err != nil {
				t.Fatal(err)
			}
			return r
		}},
		{"SealState", func(t *testing.T, sl Sealing) *Resource {
			st := &State{Stack: "demo", Resources: map[string]*Resource{"b": newRes()}}
			out, err := SealState(st, sl)
			if err != nil {
				t.Fatal(err)
			}
			if st.Resources["b"].ID != id {
				t.Fatalf("SealState changed the state it was given: id %q", st.Resources["b"].ID)
			}
			return out.Resources["b"]
		}},
		{"file", func(t *testing.T, sl Sealing) *Resource {
			dir := filepath.Join(t.TempDir(), "demo")
			s, err := OpenSealed(dir, "demo", sl)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Mutate(func(st *State) error { st.Resources["b"] = newRes(); return nil }); err != nil {
				t.Fatal(err)
			}
			if got := s.Snapshot().Resources["b"]; got == nil || got.ID != id {
				t.Fatalf("in memory the id is %v, want it clear", got)
			}
			st, err := Load(filepath.Join(dir, FileName))
			if err != nil {
				t.Fatal(err)
			}
			return st.Resources["b"]
		}},
	}
	for _, tc := range seals {
		t.Run(tc.name, func(t *testing.T) {
			sealed := tc.seal(t, Sealing{Sealer: b})
			raw, err := json.Marshal(sealed)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(raw), clearSecret) {
				t.Fatalf("the stored form holds the secret in clear: %s", raw)
			}
			if !secrets.IsSealed(sealed.ID) {
				t.Fatalf("id %q is not sealed", sealed.ID)
			}
			// Without a key it stays sealed, and nothing is revealed.
			noKey := *sealed
			if err := OpenResource(&noKey, Sealing{}); err != nil || noKey.ID != sealed.ID {
				t.Fatalf("opened without a key: %v, id %q", err, noKey.ID)
			}
			var revealed []any
			opened := *sealed
			opened.Config, opened.Attributes = maps.Clone(sealed.Config), maps.Clone(sealed.Attributes)
			if err := OpenResource(&opened, Sealing{Sealer: b, Reveal: func(v any) { revealed = append(revealed, v) }}); err != nil {
				t.Fatal(err)
			}
			if opened.ID != id || opened.Attributes["arn"] != "arn:aws:s3:::"+id {
				t.Fatalf("opened: id %q, attributes %v", opened.ID, opened.Attributes)
			}
			if !slices.Contains(revealed, any(id)) {
				t.Fatalf("the id was not revealed: %v", revealed)
			}
		})
	}
	// A state holding such an id in clear says so (it is resealed).
	clear, err := OpenState(&State{Resources: map[string]*Resource{"b": newRes()}}, Sealing{Sealer: b})
	if err != nil || !clear {
		t.Fatalf("OpenState of a clear id: clear %v, %v", clear, err)
	}
}

// TestRetainedMarkSurvivesSealing: a resource's retained mark (and its
// prior's) is written and read back through a sealed store, a keyless
// write and a keyless load alike; a state written before the mark existed
// loads with none.
func TestRetainedMarkSurvivesSealing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "demo")
	b := box(t)
	s, err := OpenSealed(dir, "demo", Sealing{Sealer: b})
	if err != nil {
		t.Fatal(err)
	}
	s.SetSensitive(sensitiveSecret)
	writeSensitive(t, s)
	if err := s.Mutate(func(st *State) error {
		st.Resources["b"].RetainedBy = "op_9"
		st.Resources["b"].Prior.RetainedBy = "op_8"
		st.Resources["old"] = &Resource{Name: "old", Type: "generic", ID: "g-1", Protection: protection.Durable}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	plain, err := Open(dir, "demo")
	if err != nil {
		t.Fatal(err)
	}
	if err := plain.Mutate(func(st *State) error { st.Interventions = nil; return nil }); err != nil {
		t.Fatal(err)
	}
	keyless, err := Load(filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	for name, st := range map[string]*State{"sealed": reopen(t, dir, b).Snapshot(), "keyless": keyless} {
		r := st.Resources["b"]
		if r.RetainedBy != "op_9" || r.Prior == nil || r.Prior.RetainedBy != "op_8" {
			t.Errorf("%s: retained mark lost: %q, prior %+v", name, r.RetainedBy, r.Prior)
		}
		if st.Resources["old"].RetainedBy != "" {
			t.Errorf("%s: a resource never retained reads as retained", name)
		}
	}
	raw, _ := os.ReadFile(filepath.Join(dir, FileName))
	if !strings.Contains(string(raw), `"retained_by":"op_9"`) || strings.Count(string(raw), "retained_by") != 2 {
		t.Errorf("state.json does not hold the mark once per marked record:\n%s", raw)
	}
}
