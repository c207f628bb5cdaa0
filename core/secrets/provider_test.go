package secrets

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// fastSource is a Source with only a passphrase, whose new configs derive
// their key with testKDF.
func fastSource(pass string) *Source {
	return &Source{Passphrase: pass, KDF: testKDF()}
}

// testKDF is an argon2id far cheaper than DefaultKDF (which takes 64 MiB
// and three passes each time a key is derived: under the race detector,
// seconds on a loaded machine), for the tests that need a passphrase
// provider to work, not to be strong.
func testKDF() *KDF {
	return &KDF{Name: "argon2id", Time: 1, MemoryKiB: 64, Threads: 1}
}

func TestPassphraseProviderRoundTrip(t *testing.T) {
	ctx := context.Background()
	// The default derivation (no KDF in the Source), as the CLI's.
	cfg, k, err := (&Source{}).NewConfig(ctx, ProviderPassphrase, "correct horse")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Provider != ProviderPassphrase || cfg.Salt == "" || cfg.Verifier == "" || cfg.KDF == nil || cfg.KDF.Name != "argon2id" {
		t.Fatalf("config %+v", cfg)
	}
	if cfg.KDF.MemoryKiB < 19*1024 || cfg.KDF.Time < 1 {
		t.Fatalf("KDF too weak: %+v", cfg.KDF)
	}
	if cfg.KeyID != k.ID() {
		t.Fatalf("key id %s, config says %s", k.ID(), cfg.KeyID)
	}
	// Nothing of the passphrase or the key is in the config.
	for _, s := range []string{cfg.Salt, cfg.Verifier, cfg.WrappedKey} {
		if strings.Contains(s, "correct horse") || strings.Contains(s, k.Encode()) {
			t.Fatalf("config holds a secret: %+v", cfg)
		}
	}
	sealed, err := k.Box("stack s").SealValue("v4lue")
	if err != nil {
		t.Fatal(err)
	}
	// A teammate with the passphrase alone gets the same key.
	k2, err := fastSource("correct horse").Resolve(ctx, cfg, false)
	if err != nil {
		t.Fatal(err)
	}
	if v, err := k2.Box("stack s").OpenValue(sealed); err != nil || v != "v4lue" {
		t.Fatalf("open with the derived key: %v %v", v, err)
	}
	// A second config of the same passphrase has another salt, so another key.
	cfg3, k3, err := fastSource("").NewConfig(ctx, ProviderPassphrase, "correct horse")
	if err != nil {
		t.Fatal(err)
	}
	if cfg3.Salt == cfg.Salt || k3.ID() == k.ID() {
		t.Fatal("two configs share a salt or a key")
	}
}

func TestPassphraseProviderRefusesWrongPassphrase(t *testing.T) {
	ctx := context.Background()
	cfg, _, err := fastSource("").NewConfig(ctx, ProviderPassphrase, "correct horse")
	if err != nil {
		t.Fatal(err)
	}
	_, err = fastSource("battery staple").Resolve(ctx, cfg, false)
	var wrong *WrongKeyError
	if !errors.As(err, &wrong) || !errors.Is(err, ErrWrongKey) {
		t.Fatalf("wrong passphrase: %v", err)
	}
	if wrong.Provider != ProviderPassphrase || strings.Contains(err.Error(), "battery staple") || strings.Contains(err.Error(), "correct horse") {
		t.Fatalf("error %q: want the provider named and no passphrase", err)
	}
	// No passphrase at all: no key, said as such.
	if _, err := fastSource("").Resolve(ctx, cfg, false); !errors.Is(err, ErrNoKey) || !strings.Contains(err.Error(), EnvPassphrase) {
		t.Fatalf("no passphrase: %v", err)
	}
	// The new passphrase of a rotation opens the config made with it.
	if _, err := (&Source{Passphrase: "battery staple", NewPassphrase: "correct horse"}).Resolve(ctx, cfg, false); err != nil {
		t.Fatalf("new passphrase: %v", err)
	}
	// A damaged verifier is refused, not taken as a match.
	bad := cfg.Clone()
	bad.Verifier = strings.Replace(bad.Verifier, bad.Verifier[len(bad.Verifier)-4:], "AAAA", 1)
	if _, err := fastSource("correct horse").Resolve(ctx, bad, false); err == nil {
		t.Fatal("a damaged verifier opened")
	}
}

// A state that asks for more than any derivation bulwark makes (edited by
// hand, or by someone who cannot open it) is refused at once, before any
// memory is taken: not obeyed until the machine runs out of memory.
func TestPassphraseProviderRefusesAnOversizedKDF(t *testing.T) {
	ctx := context.Background()
	cfg, _, err := fastSource("").NewConfig(ctx, ProviderPassphrase, "correct horse")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		edit func(*KDF)
	}{
		{"4 TiB", func(k *KDF) { k.MemoryKiB = 1<<32 - 1 }},
		{"just over 4 GiB", func(k *KDF) { k.MemoryKiB = maxKDFMemoryKiB + 1 }},
		{"65 passes", func(k *KDF) { k.Time = maxKDFTime + 1 }},
		{"4 billion passes", func(k *KDF) { k.Time = 1<<32 - 1 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := cfg.Clone()
			tc.edit(bad.KDF)
			_, err := fastSource("correct horse").Resolve(ctx, bad, false)
			if err == nil || !strings.Contains(err.Error(), "beyond") || strings.Contains(err.Error(), "correct horse") {
				t.Fatalf("Resolve: %v; want it refused, naming the bound and not the passphrase", err)
			}
		})
	}
}

func TestKeyFileProviderChecksKeyID(t *testing.T) {
	ctx := context.Background()
	a, _ := NewKey("a")
	b, _ := NewKey("b")
	cfg, k, err := (&Source{Env: a.Encode()}).NewConfig(ctx, ProviderKeyFile, "")
	if err != nil || k.ID() != a.ID() || cfg.KeyID != a.ID() {
		t.Fatalf("keyfile config %+v %v", cfg, err)
	}
	if _, err := (&Source{Env: b.Encode()}).Resolve(ctx, cfg, false); !errors.Is(err, ErrWrongKey) || !strings.Contains(err.Error(), "keyfile") {
		t.Fatalf("another key: %v", err)
	}
	// No config: today's key, whatever it is.
	if got, err := (&Source{Env: b.Encode()}).Resolve(ctx, nil, false); err != nil || got.ID() != b.ID() {
		t.Fatalf("unrecorded: %v", err)
	}
}

func TestCheckProvider(t *testing.T) {
	for _, ok := range []string{"keyfile", "passphrase", "awskms://alias/x", "awskms://1234?region=eu-west-1"} {
		if err := CheckProvider(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "gcpkms://x", "awskms://", "Passphrase"} {
		if err := CheckProvider(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// fakeKMS wraps by XOR with a pad: enough to prove the plumbing.
type fakeKMS struct{ fail bool }

func (f fakeKMS) GenerateDataKey(_ context.Context, size int) ([]byte, []byte, error) {
	k, _ := NewKey("")
	plain := k.bytes[:size]
	wrapped := make([]byte, size)
	for i := range plain {
		wrapped[i] = plain[i] ^ 0x5a
	}
	return append([]byte(nil), plain...), wrapped, nil
}

func (f fakeKMS) Decrypt(_ context.Context, w []byte) ([]byte, error) {
	if f.fail {
		return nil, errors.New("AccessDeniedException")
	}
	out := make([]byte, len(w))
	for i := range w {
		out[i] = w[i] ^ 0x5a
	}
	return out, nil
}

func TestKMSProviderPlumbing(t *testing.T) {
	ctx := context.Background()
	open := func(fail bool) KMSOpener {
		return func(context.Context, string) (KMS, error) { return fakeKMS{fail: fail}, nil }
	}
	cfg, k, err := (&Source{KMS: open(false)}).NewConfig(ctx, "awskms://alias/team", "")
	if err != nil || cfg.WrappedKey == "" || cfg.KeyID != k.ID() {
		t.Fatalf("%+v %v", cfg, err)
	}
	got, err := (&Source{KMS: open(false)}).Resolve(ctx, cfg, false)
	if err != nil || got.ID() != k.ID() {
		t.Fatalf("resolve: %v", err)
	}
	_, err = (&Source{KMS: open(true)}).Resolve(ctx, cfg, false)
	if !errors.Is(err, ErrWrongKey) || !strings.Contains(err.Error(), "awskms://alias/team") {
		t.Fatalf("refused decrypt: %v", err)
	}
	if _, _, err := (&Source{}).NewConfig(ctx, "awskms://alias/team", ""); err == nil {
		t.Fatal("no KMS client: accepted")
	}
}
