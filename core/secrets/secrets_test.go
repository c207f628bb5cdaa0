package secrets

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/bulwark-iac/bulwark/core/printable"
)

func testKey(t *testing.T) *Key {
	t.Helper()
	k, err := NewKey("test key")
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestSealOpenRoundTrip(t *testing.T) {
	b := testKey(t).Box("stack demo")
	for _, v := range []any{"hunter2-password", 42.5, true, nil, []any{"a", 1.0}, map[string]any{"k": "v"}, ""} {
		sealed, err := b.SealValue(v)
		if err != nil {
			t.Fatal(err)
		}
		if !IsSealed(sealed) {
			t.Errorf("%v sealed as %q: no prefix", v, sealed)
		}
		if s, ok := v.(string); ok && s != "" && strings.Contains(sealed, s) {
			t.Errorf("sealed form %q holds the clear value", sealed)
		}
		got, err := b.OpenValue(sealed)
		if err != nil {
			t.Fatalf("open %v: %v", v, err)
		}
		if fmt.Sprint(got) != fmt.Sprint(v) {
			t.Errorf("round trip of %v gave %v", v, got)
		}
	}
}

func TestSealUsesANonceEachTime(t *testing.T) {
	b := testKey(t).Box("stack demo")
	x, _ := b.Seal([]byte("same"))
	y, _ := b.Seal([]byte("same"))
	if x == y {
		t.Fatal("two seals of one value are identical: the nonce is reused")
	}
}

func TestOpenFailures(t *testing.T) {
	k := testKey(t)
	b := k.Box("stack demo")
	sealed, err := b.Seal([]byte("the secret"))
	if err != nil {
		t.Fatal(err)
	}
	other := testKey(t)
	// Flip one bit of the ciphertext, keeping the form valid.
	i := strings.LastIndex(sealed, ":") + 1
	raw, err := base64.RawURLEncoding.DecodeString(sealed[i:])
	if err != nil {
		t.Fatal(err)
	}
	raw[len(raw)/2] ^= 1
	tampered := sealed[:i] + base64.RawURLEncoding.EncodeToString(raw)
	tests := []struct {
		name   string
		box    *Box
		sealed string
		want   []string
	}{
		{"wrong key", other.Box("stack demo"), sealed, []string{"another key", "test key", k.ID(), other.ID()}},
		{"other stack", k.Box("stack prod"), sealed, []string{"does not authenticate", "test key"}},
		{"tampered", b, string(tampered), []string{"does not authenticate", "altered"}},
		{"truncated", b, sealed[:len(Prefix)+12], []string{"malformed"}},
		{"not sealed", b, "clear text", []string{"not a sealed value"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.box.Open(tt.sealed)
			if !errors.Is(err, ErrCannotOpen) {
				t.Fatalf("err = %v, want ErrCannotOpen", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

func TestParseKey(t *testing.T) {
	k := testKey(t)
	tests := []struct {
		name, text string
		ok         bool
	}{
		{"padded", k.Encode(), true},
		{"with newline and spaces", "  " + k.Encode() + "\n", true},
		{"unpadded", strings.TrimRight(k.Encode(), "="), true},
		{"too short", "c2hvcnQ=", false},
		{"not base64", "not base64 at all!", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseKey(tt.text, EnvKey)
			if tt.ok != (err == nil) {
				t.Fatalf("err = %v, want ok=%v", err, tt.ok)
			}
			if err != nil {
				if strings.Contains(err.Error(), tt.text) {
					t.Errorf("error quotes the key text: %v", err)
				}
				if !strings.Contains(err.Error(), EnvKey) {
					t.Errorf("error does not name the source: %v", err)
				}
				return
			}
			if got.ID() != k.ID() {
				t.Error("parsed another key")
			}
		})
	}
}

func TestDefaultKeyFileCreatedOnce(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config", "bulwark", "secrets.key")
	var notice bytes.Buffer
	src := &Source{Default: path, Notice: &notice}
	if _, err := src.Key(false); !errors.Is(err, ErrNoKey) {
		t.Fatalf("without create: err = %v, want ErrNoKey", err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("a key file was created without create: %v", err)
	}
	k, err := src.Key(true)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm != 0o600 {
		t.Errorf("key file mode %04o, want 0600", perm)
	}
	di, _ := os.Stat(filepath.Dir(path))
	if perm := di.Mode().Perm(); perm != 0o700 {
		t.Errorf("key folder mode %04o, want 0700", perm)
	}
	if n := strings.Count(notice.String(), "created a secrets key"); n != 1 {
		t.Errorf("notice said %d times: %q", n, notice.String())
	}
	if !strings.Contains(notice.String(), path) {
		t.Errorf("notice does not name the file: %q", notice.String())
	}
	// Another command (a fresh Source) finds the same key, and says nothing.
	notice.Reset()
	again := &Source{Default: path, Notice: &notice}
	k2, err := again.Key(true)
	if err != nil {
		t.Fatal(err)
	}
	if k2.ID() != k.ID() {
		t.Error("a second command made another key")
	}
	if notice.Len() != 0 {
		t.Errorf("the second command said %q", notice.String())
	}
}

func TestDefaultKeyFileRace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bulwark", "secrets.key")
	ids := make([]string, 8)
	var wg sync.WaitGroup
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k, err := (&Source{Default: path}).Key(true)
			if err != nil {
				t.Error(err)
				return
			}
			ids[i] = k.ID()
		}()
	}
	wg.Wait()
	for _, id := range ids {
		if id != ids[0] {
			t.Fatalf("racing commands made different keys: %v", ids)
		}
	}
}

func TestSourceOrderAndChecks(t *testing.T) {
	dir := t.TempDir()
	k := testKey(t)
	file := filepath.Join(dir, "key")
	os.WriteFile(file, []byte(k.Encode()+"\n"), 0o600)
	loose := filepath.Join(dir, "loose")
	os.WriteFile(loose, []byte(k.Encode()), 0o644)
	os.Chmod(loose, 0o644)
	stateDir := filepath.Join(dir, "state")
	inState := filepath.Join(stateDir, "demo", "key")
	os.MkdirAll(filepath.Dir(inState), 0o700)
	os.WriteFile(inState, []byte(k.Encode()), 0o600)
	env := testKey(t)

	tests := []struct {
		name    string
		src     *Source
		wantID  string
		wantErr string
	}{
		{"env wins", &Source{Env: env.Encode(), File: file}, env.ID(), ""},
		{"file", &Source{File: file, Default: filepath.Join(dir, "nope")}, k.ID(), ""},
		{"loose file refused", &Source{File: loose}, "", "chmod 600"},
		{"file in the state folder refused", &Source{File: inState, Forbidden: []string{stateDir}}, "", "inside the state folder"},
		{"bad env names it", &Source{Env: "xx"}, "", EnvKey},
		{"missing file", &Source{File: filepath.Join(dir, "missing")}, "", "no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.src.Key(true)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.ID() != tt.wantID {
				t.Errorf("key from %s, want the other one", got.Source())
			}
		})
	}
}

func TestRedactor(t *testing.T) {
	r := NewRedactor()
	r.Add("tok-12345", map[string]any{"k": `pa"ss\word`}, "abc", 987654.0)
	tests := []struct{ in, want string }{
		{"Configure failed: bad token tok-12345", "Configure failed: bad token (sensitive)"},
		{`{"error":"password pa\"ss\\word refused"}`, `{"error":"password (sensitive) refused"}`},
		{`got "pa\"ss\\word"`, `got "(sensitive)"`},
		{"pin 987654", "pin (sensitive)"},
		{"abc is too short to be looked for", "abc is too short to be looked for"},
		{"nothing here", "nothing here"},
	}
	for _, tt := range tests {
		if got := r.Redact(tt.in); got != tt.want {
			t.Errorf("Redact(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	base := errors.New("provider said tok-12345")
	err := r.Error(fmt.Errorf("apply: %w", base))
	if strings.Contains(err.Error(), "tok-12345") || !errors.Is(err, base) {
		t.Errorf("Error: %q (Is=%v)", err, errors.Is(err, base))
	}
	var buf bytes.Buffer
	fmt.Fprintf(r.Writer(&buf), "line with tok-12345\n")
	if buf.String() != "line with (sensitive)\n" {
		t.Errorf("Writer wrote %q", buf.String())
	}
	var nilR *Redactor
	if nilR.Redact("tok-12345") != "tok-12345" {
		t.Error("a nil Redactor changed text")
	}
}

// TestRedactorFindsInertForms: the text views escape control characters
// (core/printable) before or after a line reaches the Redactor; a secret
// that holds them is masked in every form they write it in.
func TestRedactorFindsInertForms(t *testing.T) {
	secret := "pw\x1b[31m\r\n\tq\u009b\x7f\"\\end"
	r := NewRedactor()
	r.Add(secret)
	for _, form := range []string{
		secret,
		printable.Line(secret),
		printable.Text(secret),
		printable.Line(jsonInner(secret, false)),
		printable.Line(jsonInner(secret, true)),
	} {
		line := "provider said: " + form + " (refused)"
		if got := r.Redact(line); got != "provider said: (sensitive) (refused)" {
			t.Errorf("Redact(%q) = %q, want the secret masked", line, got)
		}
	}
}

func TestMaskKeys(t *testing.T) {
	m := map[string]any{"secret": "x", "size": 1.0}
	got := MaskKeys(m, []string{"secret", "absent"})
	if got["secret"] != Mask || got["size"] != 1.0 || m["secret"] != "x" {
		t.Errorf("MaskKeys = %v (input now %v)", got, m)
	}
	if _, ok := got["absent"]; ok {
		t.Error("MaskKeys added a key")
	}
}

func TestRedactorConcurrent(t *testing.T) {
	r := NewRedactor()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			r.Add(fmt.Sprintf("value-%04d", i))
		}()
		go func() {
			defer wg.Done()
			_ = r.Redact(fmt.Sprintf("text with value-%04d in it", i))
		}()
	}
	wg.Wait()
	for i := range 8 {
		if got := r.Redact(fmt.Sprintf("value-%04d", i)); got != Mask {
			t.Errorf("value %d not masked after the adds: %q", i, got)
		}
	}
}

// TestRedactorMasksWhatContainsASecret: a value that
// merely contains a secret (a folder, an id, an arn made from it) shows
// none of it, in every form bulwark writes text in (raw, inside JSON with or
// without HTML escaping, Go-quoted); once the whole value is known too (the
// state reveals what it seals), it is masked whole, not piece by piece.
func TestRedactorMasksWhatContainsASecret(t *testing.T) {
	const secret = `p<w&rd>"q-1234`
	derived := "/srv/root/v-" + secret + "/data"
	jsonOf := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	texts := []struct{ name, in string }{
		{"raw", "folder " + derived + " exists"},
		{"json", jsonOf(map[string]any{"folder": derived})},
		{"json in json", jsonOf(map[string]any{"error": jsonOf(map[string]any{"folder": derived})})},
		{"go quoted", fmt.Sprintf("create %q: exists", derived)},
		{"arn", "arn:aws:s3:::bk-" + secret},
	}
	pieces := []string{secret, jsonInner(secret, false), jsonInner(secret, true), strings.Trim(strconv.Quote(secret), `"`)}
	r := NewRedactor()
	r.Add(secret)
	for _, tt := range texts {
		t.Run(tt.name, func(t *testing.T) {
			got := r.Redact(tt.in)
			for _, p := range pieces {
				if strings.Contains(got, p) {
					t.Errorf("Redact(%s) = %s: holds %s", tt.in, got, p)
				}
			}
			if !strings.Contains(got, Mask) {
				t.Errorf("Redact(%s) = %s: no mask", tt.in, got)
			}
		})
	}
	// Known whole, the derived value is one mask.
	r.Add(derived)
	if got := r.Redact("folder " + derived + " exists"); got != "folder "+Mask+" exists" {
		t.Errorf("with the whole value known: %q", got)
	}
	if got := r.Redact(jsonOf(map[string]any{"folder": derived})); got != `{"folder":"`+Mask+`"}` {
		t.Errorf("with the whole value known, in JSON: %q", got)
	}
}
