package stack_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bulwark-iac/bulwark/core/secrets"
	"github.com/bulwark-iac/bulwark/core/spec"
	"github.com/bulwark-iac/bulwark/core/stack"
)

// A passphrase stack: a second teammate with only the passphrase opens it;
// a wrong passphrase is refused before anything is written, naming the
// provider and not the passphrase; a rotation to a new passphrase leaves the
// old one refused and the values as they were.
func TestPassphraseProviderAndRotate(t *testing.T) {
	e := newEnv(t)
	ss := &secretStarter{w: e.w, leak: map[string]bool{}}
	opts := func(src *secrets.Source) func(*stack.Options) {
		return func(o *stack.Options) {
			o.Starter = ss.starter()
			o.Secrets = src
		}
	}
	with := func(src *secrets.Source) stack.Options {
		o := e.opts()
		opts(src)(&o)
		return o
	}
	dir := stack.StackDir(e.stateDir, "s")
	snapshot := func() [][]byte {
		var out [][]byte
		for _, n := range []string{"state.json", "journal.jsonl"} {
			b, err := os.ReadFile(filepath.Join(dir, n))
			if err != nil && !errors.Is(err, os.ErrNotExist) {
				t.Fatal(err)
			}
			out = append(out, b)
		}
		return append(out, journalBytes(t, dir))
	}
	const pass, pass2, wrong = "correct-horse-1", "battery-staple-2", "wrong-passphrase-3"

	// Alice: the provider is chosen at the first apply; no key file.
	e.mustApply(t, parseSpec(t, secretSpec(fakeSecret)), opts(&secrets.Source{Passphrase: pass, Provider: secrets.ProviderPassphrase, KDF: testKDF()}))
	st, err := stack.LoadState(parseSpec(t, secretSpec(fakeSecret)), with(&secrets.Source{}))
	if err != nil {
		t.Fatal(err)
	}
	if st.Secrets.Name() != secrets.ProviderPassphrase || st.Secrets.Salt == "" || st.Secrets.Verifier == "" {
		t.Fatalf("recorded provider %+v", st.Secrets)
	}
	noClear(t, "state.json", snapshot()[0])
	for _, b := range snapshot() {
		if bytes.Contains(b, []byte(pass)) {
			t.Fatal("the passphrase is in what bulwark wrote")
		}
	}

	// Bob: the passphrase alone opens it.
	pv, err := stack.Plan(e.ctx, parseSpec(t, secretSpec(fakeSecret)), with(&secrets.Source{Passphrase: pass}))
	if err != nil {
		t.Fatal(err)
	}
	if pv.HasChanges() {
		t.Errorf("a re-plan has changes: %+v", pv.Changes)
	}

	// A wrong passphrase: plan and apply refuse, nothing is written.
	before := snapshot()
	for _, run := range []func() error{
		func() error {
			_, err := stack.Plan(e.ctx, parseSpec(t, secretSpec(fakeSecret)), with(&secrets.Source{Passphrase: wrong}))
			return err
		},
		func() error {
			_, err := stack.Apply(e.ctx, parseSpec(t, secretSpec(fakeSecret2)), with(&secrets.Source{Passphrase: wrong}))
			return err
		},
		func() error {
			_, err := stack.RotateSecrets(e.ctx, parseSpec(t, secretSpec(fakeSecret)), with(&secrets.Source{Passphrase: wrong, NewPassphrase: pass2}))
			return err
		},
	} {
		err := run()
		var wk *secrets.WrongKeyError
		if !errors.As(err, &wk) || wk.Provider != secrets.ProviderPassphrase {
			t.Fatalf("wrong passphrase: %v", err)
		}
		if strings.Contains(err.Error(), wrong) || strings.Contains(err.Error(), pass) {
			t.Fatalf("the error quotes a passphrase: %v", err)
		}
	}
	if _, err := stack.Apply(e.ctx, parseSpec(t, secretSpec(fakeSecret2)), with(&secrets.Source{})); !errors.Is(err, secrets.ErrNoKey) {
		t.Fatalf("no passphrase: %v", err)
	}
	if !equalAll(before, snapshot()) {
		t.Fatal("a refused command changed the state or the journal")
	}
	// Another provider than the recorded one is refused.
	if _, err := stack.Apply(e.ctx, parseSpec(t, secretSpec(fakeSecret)), with(&secrets.Source{Passphrase: pass, Provider: secrets.ProviderKeyFile})); err == nil || !strings.Contains(err.Error(), "secrets rotate") {
		t.Fatalf("another provider: %v", err)
	}

	// Rotation to a new passphrase.
	res, err := stack.RotateSecrets(e.ctx, parseSpec(t, secretSpec(fakeSecret)), with(&secrets.Source{Passphrase: pass, NewPassphrase: pass2, KDF: testKDF()}))
	if err != nil {
		t.Fatal(err)
	}
	if code := stack.ExitCode(res, nil); code != stack.ExitOK || res.Secrets != secrets.ProviderPassphrase {
		t.Fatalf("rotate: exit %d %v", code, res.Err)
	}
	if _, err := stack.Plan(e.ctx, parseSpec(t, secretSpec(fakeSecret)), with(&secrets.Source{Passphrase: pass})); !errors.Is(err, secrets.ErrWrongKey) {
		t.Fatalf("the old passphrase after rotation: %v", err)
	}
	opened, err := stack.LoadOpened(parseSpec(t, secretSpec(fakeSecret)), with(&secrets.Source{Passphrase: pass2}))
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range opened.Resources {
		if r.Config["secret"] == fakeSecret {
			found = true
		}
	}
	if !found {
		t.Fatal("the rotated state does not open to the same values")
	}
	pv, err = stack.Plan(e.ctx, parseSpec(t, secretSpec(fakeSecret)), with(&secrets.Source{Passphrase: pass2}))
	if err != nil || pv.HasChanges() {
		t.Fatalf("plan after rotation: %v %+v", err, pv)
	}
	for _, b := range snapshot() {
		if bytes.Contains(b, []byte(pass2)) || bytes.Contains(b, []byte(fakeSecret)) {
			t.Fatal("a passphrase or a secret is in what bulwark wrote")
		}
	}
}

func equalAll(a, b [][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

// A key file stack (recorded as nothing, as before providers) rotated to a
// new key given in BULWARK_SECRETS_NEW_KEY: the old key is refused after,
// naming the key file provider.
func TestRotateKeyFileToANewKey(t *testing.T) {
	e := newEnv(t)
	ss := &secretStarter{w: e.w, leak: map[string]bool{}}
	oldKey, _ := secrets.NewKey("old")
	newKey, _ := secrets.NewKey("new")
	with := func(src *secrets.Source) stack.Options {
		o := e.opts()
		o.Starter = ss.starter()
		o.Secrets = src
		return o
	}
	sp := func() *spec.Spec { return parseSpec(t, secretSpec(fakeSecret)) }
	e.mustApply(t, sp(), func(o *stack.Options) { *o = with(&secrets.Source{Env: oldKey.Encode()}) })
	if _, err := stack.RotateSecrets(e.ctx, sp(), with(&secrets.Source{Env: oldKey.Encode()})); !errors.Is(err, secrets.ErrNoKey) || !strings.Contains(err.Error(), secrets.EnvNewKey) {
		t.Fatalf("rotate without a new key: %v", err)
	}
	res, err := stack.RotateSecrets(e.ctx, sp(), with(&secrets.Source{Env: oldKey.Encode(), NewKey: newKey.Encode()}))
	if err != nil || stack.ExitCode(res, nil) != stack.ExitOK {
		t.Fatalf("rotate: %v %v", err, res)
	}
	_, err = stack.Plan(e.ctx, sp(), with(&secrets.Source{Env: oldKey.Encode()}))
	var wk *secrets.WrongKeyError
	if !errors.As(err, &wk) || !strings.HasPrefix(wk.Provider, "keyfile") {
		t.Fatalf("the old key after rotation: %v", err)
	}
	pv, err := stack.Plan(e.ctx, sp(), with(&secrets.Source{Env: newKey.Encode()}))
	if err != nil || pv.HasChanges() {
		t.Fatalf("plan with the new key: %v %+v", err, pv)
	}
}

// testKDF is a cheap argon2id for the passphrase providers these tests
// make: every open of a stack derives its key again, and the default
// (64 MiB, three passes) takes seconds under the race detector on a
// loaded machine. secrets' own tests check the default.
func testKDF() *secrets.KDF {
	return &secrets.KDF{Name: "argon2id", Time: 1, MemoryKiB: 64, Threads: 1}
}
