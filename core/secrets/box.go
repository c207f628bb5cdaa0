package secrets

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Prefix starts every sealed value.
const Prefix = "sealed:v1:"

// ErrCannotOpen is the cause of every failure to open a sealed value: the
// wrong key, another context, or a value that was altered.
var ErrCannotOpen = errors.New("cannot open a sealed value")

// IsSealed reports whether s has the form of a sealed value.
func IsSealed(s string) bool { return strings.HasPrefix(s, Prefix) }

// Box seals and opens values under one key and one context.
type Box struct {
	key  *Key
	id   string
	aead cipher.AEAD
	ad   []byte
}

// Box returns a Box that binds what it seals to context (e.g. "stack demo"):
// a value sealed in one context does not open in another.
func (k *Key) Box(context string) *Box {
	block, err := aes.NewCipher(k.bytes[:])
	if err != nil {
		panic(fmt.Sprintf("secrets: %v", err)) // a 32-byte key is always valid
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		panic(fmt.Sprintf("secrets: %v", err))
	}
	return &Box{key: k, id: k.ID(), aead: aead, ad: []byte("bulwark/v1\x00" + context)}
}

// StackContext is the context a stack's state seals its values in, so a
// value sealed for one stack does not open in another.
func StackContext(stack string) string { return "stack " + stack }

// Key is the key the Box seals under.
func (b *Box) Key() *Key { return b.key }

// Seal encrypts plain under a fresh random nonce.
func (b *Box) Seal(plain []byte) (string, error) {
	nonce := make([]byte, b.aead.NonceSize(), b.aead.NonceSize()+len(plain)+b.aead.Overhead())
	if _, err := io.ReadFull(rand.Reader, nonce); err != nil {
		return "", fmt.Errorf("seal: %w", err)
	}
	ct := b.aead.Seal(nonce, nonce, plain, b.ad)
	return Prefix + b.id + ":" + base64.RawURLEncoding.EncodeToString(ct), nil
}

// Open decrypts a sealed value. The error says why it cannot (another key,
// or an altered value) and names the key's source; it wraps ErrCannotOpen.
func (b *Box) Open(sealed string) ([]byte, error) {
	rest, ok := strings.CutPrefix(sealed, Prefix)
	if !ok {
		return nil, fmt.Errorf("%w: not a sealed value", ErrCannotOpen)
	}
	id, body, ok := strings.Cut(rest, ":")
	if !ok {
		return nil, fmt.Errorf("%w: malformed sealed value", ErrCannotOpen)
	}
	if id != b.id {
		return nil, fmt.Errorf("%w: it was sealed with another key (id %s), not the key from %s (id %s): give the key it was sealed with (%s or %s)",
			ErrCannotOpen, id, b.key.Source(), b.id, EnvKey, FlagKeyFile)
	}
	ct, err := base64.RawURLEncoding.DecodeString(body)
	if err != nil || len(ct) < b.aead.NonceSize()+b.aead.Overhead() {
		return nil, fmt.Errorf("%w: malformed sealed value (sealed with the key from %s)", ErrCannotOpen, b.key.Source())
	}
	ns := b.aead.NonceSize()
	plain, err := b.aead.Open(nil, ct[:ns], ct[ns:], b.ad)
	if err != nil {
		return nil, fmt.Errorf("%w: it does not authenticate under the key from %s (id %s): it was altered, or sealed for another stack", ErrCannotOpen, b.key.Source(), b.id)
	}
	return plain, nil
}

// SealValue seals any JSON value (what an attribute or a variable holds).
func (b *Box) SealValue(v any) (string, error) {
	plain, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("seal: %w", err)
	}
	return b.Seal(plain)
}

// OpenValue opens what SealValue sealed, as a JSON value (string, float64,
// bool, []any, map[string]any or nil).
func (b *Box) OpenValue(sealed string) (any, error) {
	plain, err := b.Open(sealed)
	if err != nil {
		return nil, err
	}
	var v any
	if err := json.Unmarshal(plain, &v); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCannotOpen, err)
	}
	return v, nil
}
