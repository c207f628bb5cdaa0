package secrets

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"strings"

	"golang.org/x/crypto/argon2"

	"github.com/bulwark-iac/bulwark/sdk/hugeheap"
)

// A stack's secrets provider says where the key that seals its state comes
// from. It is recorded in the state (Config), never the key itself:
//
//   - keyfile: today's key (BULWARK_SECRETS_KEY, --secrets-key-file or the
//     per-user key file). A state that records no provider is keyfile.
//   - passphrase: the key is derived from BULWARK_SECRETS_PASSPHRASE with
//     argon2id; the salt, the KDF's parameters and a verifier (a known text
//     sealed under the key, so a wrong passphrase is told apart from a
//     damaged value) are in the state.
//   - awskms://KEY-ID-or-ARN[?region=R]: a random data key wrapped by AWS
//     KMS (GenerateDataKey); the wrapped key is in the state and opened by
//     KMS Decrypt. The KMS client lives outside core (Source.KMS).
const (
	ProviderKeyFile    = "keyfile"
	ProviderPassphrase = "passphrase"
	KMSScheme          = "awskms://"

	// EnvPassphrase holds a passphrase stack's passphrase.
	EnvPassphrase = "BULWARK_SECRETS_PASSPHRASE"
	// EnvNewPassphrase holds the passphrase `secrets rotate` seals under
	// when its new provider is passphrase.
	EnvNewPassphrase = "BULWARK_SECRETS_NEW_PASSPHRASE"
	// EnvNewKey holds the key (base64 of 32 bytes) `secrets rotate` seals
	// under when its new provider is keyfile.
	EnvNewKey = "BULWARK_SECRETS_NEW_KEY"
	// FlagProvider chooses a new stack's provider (and rotate's target).
	FlagProvider = "--secrets-provider"
)

// ErrWrongKey is the cause of every refusal of a key that is not the one a
// stack's state was sealed with.
var ErrWrongKey = errors.New("wrong secrets key")

// WrongKeyError says that the key a provider gave does not open the stack's
// state. It names the provider (and the key file or KMS key), never the key
// or the passphrase.
type WrongKeyError struct {
	Provider string // "passphrase", "awskms://…", "keyfile (key file /x)"
	Why      string
}

func (e *WrongKeyError) Error() string {
	return fmt.Sprintf("secrets provider %s: %s", e.Provider, e.Why)
}

func (e *WrongKeyError) Unwrap() error { return ErrWrongKey }

// KDF is how a passphrase provider derives its key (argon2id).
type KDF struct {
	Name      string `json:"name"` // "argon2id"
	Time      uint32 `json:"time"`
	MemoryKiB uint32 `json:"memory_kib"`
	Threads   uint8  `json:"threads"`
}

// DefaultKDF is RFC 9106's second recommended argon2id setting (64 MiB):
// what a new passphrase provider records unless its Source says otherwise.
func DefaultKDF() KDF {
	return KDF{Name: "argon2id", Time: 3, MemoryKiB: 64 * 1024, Threads: 4}
}

// Config is a stack's secrets provider as its state records it: what it
// takes to find the key again, and nothing that opens it.
type Config struct {
	Provider string `json:"provider"`
	// KeyID is the key's public fingerprint (Key.ID).
	KeyID string `json:"key_id,omitempty"`
	// Salt (base64), KDF and Verifier are a passphrase provider's.
	Salt     string `json:"salt,omitempty"`
	KDF      *KDF   `json:"kdf,omitempty"`
	Verifier string `json:"verifier,omitempty"`
	// WrappedKey is an awskms provider's data key as KMS encrypted it
	// (base64).
	WrappedKey string `json:"wrapped_key,omitempty"`
	// Next is the provider an unfinished `secrets rotate` seals under: while
	// it is set, values sealed under either key open.
	Next *Config `json:"next,omitempty"`
}

// Name is the provider as a message names it.
func (c *Config) Name() string {
	if c == nil || c.Provider == "" {
		return ProviderKeyFile
	}
	return c.Provider
}

// Clone is a deep copy.
func (c *Config) Clone() *Config {
	if c == nil {
		return nil
	}
	out := *c
	if c.KDF != nil {
		k := *c.KDF
		out.KDF = &k
	}
	out.Next = c.Next.Clone()
	return &out
}

// CheckProvider refuses a provider name bulwark does not know.
func CheckProvider(p string) error {
	switch {
	case p == ProviderKeyFile, p == ProviderPassphrase:
		return nil
	case strings.HasPrefix(p, KMSScheme):
		id, _, _ := strings.Cut(strings.TrimPrefix(p, KMSScheme), "?")
		if id == "" {
			return fmt.Errorf("%s %q: no KMS key: want awskms://KEY-ID-or-ARN[?region=REGION]", FlagProvider, p)
		}
		return nil
	}
	return fmt.Errorf("%s %q: unknown secrets provider: want keyfile, passphrase or awskms://KEY-ID-or-ARN[?region=REGION]", FlagProvider, p)
}

// KMS wraps and unwraps data keys (AWS KMS's GenerateDataKey and Decrypt).
type KMS interface {
	GenerateDataKey(ctx context.Context, size int) (plain, wrapped []byte, err error)
	Decrypt(ctx context.Context, wrapped []byte) ([]byte, error)
}

// KMSOpener returns the KMS client of an awskms:// provider.
type KMSOpener func(ctx context.Context, provider string) (KMS, error)

// verifierContext is what a passphrase provider's verifier is sealed in.
const verifierContext = "secrets provider verifier"

const verifierText = "bulwark"

// maxKDFTime and maxKDFMemoryKiB bound the derivation a state may ask
// for, well above RFC 9106's recommended settings (2 GiB and one pass; 64
// MiB and three). A state beyond either (edited by hand, or by someone who
// cannot open it) is refused with an error, not obeyed until the machine
// runs out of memory or time.
const (
	maxKDFTime      = 64
	maxKDFMemoryKiB = 4 << 20
)

func deriveKey(pass string, salt []byte, k KDF) (*Key, error) {
	if k.Name != "argon2id" || k.Time == 0 || k.MemoryKiB == 0 || k.Threads == 0 {
		return nil, fmt.Errorf("secrets provider passphrase: unknown key derivation %q in the state", k.Name)
	}
	if k.Time > maxKDFTime || k.MemoryKiB > maxKDFMemoryKiB {
		return nil, fmt.Errorf("secrets provider passphrase: the state asks for an argon2id of %d pass(es) over %d MiB, beyond the %d passes and %d MiB bulwark derives at most: was the state changed by hand?",
			k.Time, k.MemoryKiB>>10, maxKDFTime, maxKDFMemoryKiB>>10)
	}
	// argon2id fills MemoryKiB of fresh memory, and each first touch of a
	// 4 KiB page is a page fault: on the 2-core VMs CI runs on, the default
	// (64 MiB) took 1.1 s and 2.1 CPU-seconds, half of them the kernel's.
	// Marked for huge pages first (hugeheap), it took 0.2 s and 0.3 (a
	// process of its own each time, as every bulwark command is). The
	// derivation is the same; only the memory under it differs. (A KDF of
	// less than hugeheap.MinSize, as tests record, is left alone.)
	hugeheap.Prepare(uintptr(k.MemoryKiB) << 10)
	b := argon2.IDKey([]byte(pass), salt, k.Time, k.MemoryKiB, k.Threads, KeySize)
	key := &Key{source: ProviderPassphrase + " (" + EnvPassphrase + ")"}
	copy(key.bytes[:], b)
	return key, nil
}

// NewConfig makes a new provider's config and key: a fresh salt for a
// passphrase (pass), a fresh data key for awskms, the Source's key file for
// keyfile.
func (s *Source) NewConfig(ctx context.Context, provider, pass string) (*Config, *Key, error) {
	if err := CheckProvider(provider); err != nil {
		return nil, nil, err
	}
	switch {
	case provider == ProviderKeyFile:
		k, err := s.newKey()
		if err != nil {
			return nil, nil, err
		}
		return &Config{Provider: ProviderKeyFile, KeyID: k.ID()}, k, nil
	case provider == ProviderPassphrase:
		if pass == "" {
			return nil, nil, fmt.Errorf("%w: secrets provider passphrase: %s is not set", ErrNoKey, EnvPassphrase)
		}
		salt := make([]byte, 16)
		if _, err := io.ReadFull(rand.Reader, salt); err != nil {
			return nil, nil, fmt.Errorf("secrets provider passphrase: %w", err)
		}
		kdf := DefaultKDF()
		if s.KDF != nil {
			kdf = *s.KDF
		}
		k, err := deriveKey(pass, salt, kdf)
		if err != nil {
			return nil, nil, err
		}
		v, err := k.Box(verifierContext).Seal([]byte(verifierText))
		if err != nil {
			return nil, nil, err
		}
		return &Config{Provider: ProviderPassphrase, KeyID: k.ID(), Salt: base64.StdEncoding.EncodeToString(salt), KDF: &kdf, Verifier: v}, k, nil
	default:
		kms, err := s.kms(ctx, provider)
		if err != nil {
			return nil, nil, err
		}
		plain, wrapped, err := kms.GenerateDataKey(ctx, KeySize)
		if err != nil {
			return nil, nil, fmt.Errorf("secrets provider %s: generate a data key: %w", provider, err)
		}
		if len(plain) != KeySize {
			return nil, nil, fmt.Errorf("secrets provider %s: KMS gave a data key of %d bytes, want %d", provider, len(plain), KeySize)
		}
		k := &Key{source: provider}
		copy(k.bytes[:], plain)
		clear(plain)
		return &Config{Provider: provider, KeyID: k.ID(), WrappedKey: base64.StdEncoding.EncodeToString(wrapped)}, k, nil
	}
}

// newKey is the key a new keyfile config records: BULWARK_SECRETS_NEW_KEY's
// when set (a rotation), else the Source's key.
func (s *Source) newKey() (*Key, error) {
	if s != nil && s.NewKey != "" {
		return ParseKey(s.NewKey, EnvNewKey)
	}
	return s.Key(true)
}

func (s *Source) kms(ctx context.Context, provider string) (KMS, error) {
	if s == nil || s.KMS == nil {
		return nil, fmt.Errorf("secrets provider %s: this bulwark has no KMS client", provider)
	}
	k, err := s.KMS(ctx, provider)
	if err != nil {
		return nil, fmt.Errorf("secrets provider %s: %w", provider, err)
	}
	return k, nil
}

// Resolve returns the key of the provider cfg records (nil: keyfile, as a
// state written before providers), checked against what cfg says of it: a
// wrong passphrase, a key file holding another key or a wrapped key KMS
// will not open is a *WrongKeyError. A passphrase provider tries
// BULWARK_SECRETS_PASSPHRASE, then BULWARK_SECRETS_NEW_PASSPHRASE (the
// state of a rotation to a new passphrase). With create, a missing default
// key file is made (keyfile only).
func (s *Source) Resolve(ctx context.Context, cfg *Config, create bool) (*Key, error) {
	if cfg == nil || cfg.Provider == "" || cfg.Provider == ProviderKeyFile {
		k, err := s.Key(create)
		if err != nil {
			return nil, err
		}
		if cfg != nil && cfg.KeyID != "" && k.ID() != cfg.KeyID && s.NewKey != "" {
			// The key a rotation to a new key file seals under.
			if nk, nerr := ParseKey(s.NewKey, EnvNewKey); nerr == nil && nk.ID() == cfg.KeyID {
				return nk, nil
			}
		}
		if cfg != nil && cfg.KeyID != "" && k.ID() != cfg.KeyID {
			return nil, &WrongKeyError{Provider: "keyfile (" + k.Source() + ")", Why: fmt.Sprintf("this key (id %s) is not the key the stack's state is sealed with (id %s): give that key with %s or %s", k.ID(), cfg.KeyID, EnvKey, FlagKeyFile)}
		}
		return k, nil
	}
	if s == nil {
		return nil, fmt.Errorf("%w: secrets provider %s", ErrNoKey, cfg.Provider)
	}
	s.mu.Lock()
	if k, ok := s.resolved[cfg.KeyID+"/"+cfg.Salt+cfg.WrappedKey]; ok {
		s.mu.Unlock()
		return k, nil
	}
	s.mu.Unlock()
	var k *Key
	var err error
	if cfg.Provider == ProviderPassphrase {
		k, err = s.passphraseKey(cfg)
	} else {
		k, err = s.kmsKey(ctx, cfg)
	}
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	if s.resolved == nil {
		s.resolved = map[string]*Key{}
	}
	s.resolved[cfg.KeyID+"/"+cfg.Salt+cfg.WrappedKey] = k
	s.mu.Unlock()
	return k, nil
}

func (s *Source) passphraseKey(cfg *Config) (*Key, error) {
	if s.Passphrase == "" && s.NewPassphrase == "" {
		return nil, fmt.Errorf("%w: the stack's secrets provider is passphrase and %s is not set", ErrNoKey, EnvPassphrase)
	}
	salt, err := base64.StdEncoding.DecodeString(cfg.Salt)
	if err != nil || len(salt) == 0 || cfg.KDF == nil || cfg.Verifier == "" {
		return nil, fmt.Errorf("secrets provider passphrase: the state's record of it is damaged (salt, kdf or verifier)")
	}
	for _, p := range []string{s.Passphrase, s.NewPassphrase} {
		if p == "" {
			continue
		}
		k, err := deriveKey(p, salt, *cfg.KDF)
		if err != nil {
			return nil, err
		}
		if plain, err := k.Box(verifierContext).Open(cfg.Verifier); err == nil && subtle.ConstantTimeCompare(plain, []byte(verifierText)) == 1 {
			return k, nil
		}
	}
	which := EnvPassphrase
	if s.NewPassphrase != "" {
		which += " (nor " + EnvNewPassphrase + ")"
	}
	return nil, &WrongKeyError{Provider: ProviderPassphrase, Why: "the passphrase in " + which + " is not the stack's: nothing was changed"}
}

func (s *Source) kmsKey(ctx context.Context, cfg *Config) (*Key, error) {
	kms, err := s.kms(ctx, cfg.Provider)
	if err != nil {
		return nil, err
	}
	wrapped, err := base64.StdEncoding.DecodeString(cfg.WrappedKey)
	if err != nil || len(wrapped) == 0 {
		return nil, fmt.Errorf("secrets provider %s: the state's wrapped data key is damaged", cfg.Provider)
	}
	plain, err := kms.Decrypt(ctx, wrapped)
	if err != nil {
		return nil, &WrongKeyError{Provider: cfg.Provider, Why: fmt.Sprintf("KMS did not decrypt the stack's data key (%v): nothing was changed", err)}
	}
	if len(plain) != KeySize {
		return nil, &WrongKeyError{Provider: cfg.Provider, Why: fmt.Sprintf("KMS decrypted a data key of %d bytes, want %d", len(plain), KeySize)}
	}
	k := &Key{source: cfg.Provider}
	copy(k.bytes[:], plain)
	clear(plain)
	if cfg.KeyID != "" && k.ID() != cfg.KeyID {
		return nil, &WrongKeyError{Provider: cfg.Provider, Why: fmt.Sprintf("the data key KMS decrypted (id %s) is not the one the state was sealed with (id %s)", k.ID(), cfg.KeyID)}
	}
	return k, nil
}
