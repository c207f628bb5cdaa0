package secrets

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// EnvKey is the environment variable that holds the key (base64).
const EnvKey = "BULWARK_SECRETS_KEY"

// KeySize is the key's length in bytes (AES-256).
const KeySize = 32

// FlagKeyFile is the command-line flag that names a key file.
const FlagKeyFile = "--secrets-key-file"

// ErrNoKey is returned when a key is needed, none is configured and the
// default key file does not exist (and may not be created).
var ErrNoKey = errors.New("no secrets key")

// Key is an AES-256 key and where it came from.
type Key struct {
	bytes  [KeySize]byte
	source string // for messages: "BULWARK_SECRETS_KEY", "key file /x/secrets.key"
}

// Source says where the key came from, for messages.
func (k *Key) Source() string { return k.source }

// ID is a short public fingerprint of the key (8 hex digits): the same key
// has the same id, and the id reveals nothing of the key.
func (k *Key) ID() string {
	h := sha256.New()
	h.Write([]byte("bulwark secrets key id\x00"))
	h.Write(k.bytes[:])
	return hex.EncodeToString(h.Sum(nil)[:4])
}

// ParseKey reads a key from its text: the standard base64 encoding of 32
// bytes, whitespace around it ignored. source names where the text came from.
func ParseKey(text, source string) (*Key, error) {
	t := strings.TrimSpace(text)
	b, err := base64.StdEncoding.DecodeString(t)
	if err != nil {
		// Accept the unpadded form too; never quote the text itself.
		if b, err = base64.RawStdEncoding.DecodeString(t); err != nil {
			return nil, fmt.Errorf("secrets key from %s: not base64 (want the standard base64 of %d bytes, e.g. `head -c %d /dev/urandom | base64`)", source, KeySize, KeySize)
		}
	}
	if len(b) != KeySize {
		return nil, fmt.Errorf("secrets key from %s: %d bytes, want %d (the standard base64 of %d random bytes)", source, len(b), KeySize, KeySize)
	}
	k := &Key{source: source}
	copy(k.bytes[:], b)
	return k, nil
}

// NewKey returns a fresh random key.
func NewKey(source string) (*Key, error) {
	k := &Key{source: source}
	if _, err := io.ReadFull(rand.Reader, k.bytes[:]); err != nil {
		return nil, fmt.Errorf("secrets key: %w", err)
	}
	return k, nil
}

// Encode returns the key's text form (what ParseKey reads).
func (k *Key) Encode() string { return base64.StdEncoding.EncodeToString(k.bytes[:]) }

// ReadKeyFile reads a key file. A file that group or others may read or
// write is refused.
func ReadKeyFile(path string) (*Key, error) {
	source := "key file " + path
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("secrets key: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("secrets key: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("secrets key: %s is not a regular file", path)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return nil, fmt.Errorf("secrets key: %s is accessible by group or others (mode %04o): run `chmod 600 %s`", path, perm, path)
	}
	b, err := io.ReadAll(io.LimitReader(f, 4096))
	if err != nil {
		return nil, fmt.Errorf("secrets key: %w", err)
	}
	return ParseKey(string(b), source)
}

// DefaultKeyFile is where bulwark keeps the key when none is configured:
// os.UserConfigDir()/bulwark/secrets.key.
func DefaultKeyFile() (string, error) {
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("secrets key: no user config folder for the default key file (%w): set %s or pass %s", err, EnvKey, FlagKeyFile)
	}
	return filepath.Join(dir, "bulwark", "secrets.key"), nil
}

// Source finds the key of one command: Env (the value of
// BULWARK_SECRETS_KEY) when set, else File (--secrets-key-file) when set,
// else the default key file Default, created when missing if the caller
// allows it. It is safe for concurrent use and resolves the key once.
type Source struct {
	Env     string // BULWARK_SECRETS_KEY's value ("" when unset)
	File    string // --secrets-key-file ("" when not given)
	Default string // the default key file ("" when there is none)
	// Notice is told, once, when the default key file is created.
	Notice io.Writer
	// Forbidden are folders no key file may be in (the state folder: the
	// key never goes where the state goes).
	Forbidden []string
	// Passphrase is BULWARK_SECRETS_PASSPHRASE's value, NewPassphrase
	// BULWARK_SECRETS_NEW_PASSPHRASE's (see Resolve).
	Passphrase    string
	NewPassphrase string
	// NewKey is BULWARK_SECRETS_NEW_KEY's value: the key `secrets rotate`
	// moves a stack to when its new provider is keyfile.
	NewKey string
	// KMS opens an awskms:// provider's client (nil: none in this build).
	KMS KMSOpener
	// Provider is --secrets-provider: a new stack's provider, and the one
	// `secrets rotate` moves to ("": keyfile for a new stack, the same one
	// for rotate).
	Provider string
	// KDF is the key derivation a new passphrase provider records (nil:
	// DefaultKDF). The CLI never sets it; tests make it cheap, since every
	// open of a stack derives its key again. A stack's recorded KDF is
	// what opens it, whatever this says.
	KDF *KDF

	mu       sync.Mutex
	key      *Key
	resolved map[string]*Key // by config (see Resolve)
}

// Key returns the key. With create, a missing default key file is created
// (and Notice told); without, it is ErrNoKey.
func (s *Source) Key(create bool) (*Key, error) {
	if s == nil {
		return nil, fmt.Errorf("%w: set %s or pass %s", ErrNoKey, EnvKey, FlagKeyFile)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.key != nil {
		return s.key, nil
	}
	var k *Key
	var err error
	switch {
	case s.Env != "":
		k, err = ParseKey(s.Env, EnvKey)
	case s.File != "":
		if err = s.allowed(s.File); err == nil {
			k, err = ReadKeyFile(s.File)
			if k != nil {
				k.source = "key file " + s.File + " (" + FlagKeyFile + ")"
			}
		}
	case s.Default != "":
		if err = s.allowed(s.Default); err != nil {
			break
		}
		k, err = ReadKeyFile(s.Default)
		if errors.Is(err, fs.ErrNotExist) {
			if !create {
				return nil, fmt.Errorf("%w: %s is not set, no %s was given and %s does not exist", ErrNoKey, EnvKey, FlagKeyFile, s.Default)
			}
			k, err = s.create()
		}
	default:
		return nil, fmt.Errorf("%w: set %s or pass %s", ErrNoKey, EnvKey, FlagKeyFile)
	}
	if err != nil {
		return nil, err
	}
	s.key = k
	return k, nil
}

// allowed refuses a key file inside a forbidden folder.
func (s *Source) allowed(path string) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return fmt.Errorf("secrets key: %w", err)
	}
	for _, dir := range s.Forbidden {
		d, err := filepath.Abs(dir)
		if err != nil {
			continue
		}
		if rel, err := filepath.Rel(d, abs); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return fmt.Errorf("secrets key: %s is inside the state folder %s: the key must be kept apart from the states it opens", path, dir)
		}
	}
	return nil
}

// create makes the default key file: a fresh key written to a temporary
// file, then linked into place, so two commands racing to create it agree
// on one key and nobody ever reads a half-written file.
func (s *Source) create() (*Key, error) {
	path := s.Default
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("secrets key: create %s: %w", dir, err)
	}
	k, err := NewKey("key file " + path)
	if err != nil {
		return nil, err
	}
	tmp, err := os.CreateTemp(dir, ".secrets.key-*")
	if err != nil {
		return nil, fmt.Errorf("secrets key: create %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	_, werr := tmp.WriteString(k.Encode() + "\n")
	if werr == nil {
		werr = tmp.Chmod(0o600)
	}
	if werr == nil {
		werr = tmp.Sync()
	}
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return nil, fmt.Errorf("secrets key: create %s: %w", path, werr)
	}
	if err := os.Link(tmp.Name(), path); errors.Is(err, fs.ErrExist) {
		// Another command made it first: use that one.
		return ReadKeyFile(path)
	} else if err != nil {
		return nil, fmt.Errorf("secrets key: create %s: %w", path, err)
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	if s.Notice != nil {
		fmt.Fprintf(s.Notice, "bulwark: created a secrets key in %s (mode 0600); it opens the sealed values in your stacks' states: back it up, and set %s or pass %s to use another\n", path, EnvKey, FlagKeyFile)
	}
	return k, nil
}
