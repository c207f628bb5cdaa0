package planfile

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func sample() *Plan {
	return &Plan{
		CreatedAt: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC), Stack: "demo", Operation: "update",
		Spec:      Spec{File: "stack.yaml", Text: "sealed:v1:abcd:xyz"},
		State:     State{Lineage: "01J", Serial: 7, Revision: 2},
		Providers: []Provider{{Name: "mock", Source: "mock", SHA256: "00ff"}},
		Resources: []Resource{{
			Address: "db", Type: "generic", Provider: "mock", Protection: "durable", Action: "update",
			Before: map[string]any{"size": 1.0}, After: map[string]any{"size": 2.0, "note": "<a&b>"},
			Observed: &Observation{Exists: true, ID: "db-1", Attributes: map[string]any{"size": 1.0}},
		}},
	}
}

func TestWriteReadRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.plan")
	if err := Write(path, sample()); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
	b, _ := os.ReadFile(path)
	if !bytes.Contains(b, []byte(`"<a&b>"`)) {
		t.Errorf("HTML-escaped:\n%s", b)
	}
	got, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(sample(), got); d != "" {
		t.Errorf("round trip (-want +got):\n%s", d)
	}
}

func TestReadRefuses(t *testing.T) {
	good, err := Encode(sample())
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		data []byte
		want string
		is   error
	}{
		{"a spec", []byte("version: 1\nstack: demo\n"), "not a bulwark plan file", ErrNotPlan},
		{"a spec in JSON", []byte(`{"version": 1, "stack": "demo"}`), "not a bulwark plan file", ErrNotPlan},
		{"altered", bytes.Replace(good, []byte(`"serial": 7`), []byte(`"serial": 8`), 1), "checksum", ErrCorrupt},
		{"truncated", good[:len(good)/2], "not a bulwark plan file", ErrNotPlan},
		{"newer format", bytes.Replace(good, []byte(`"format_version": 1`), []byte(`"format_version": 2`), 1), "format_version 2", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Decode("p.plan", tt.data)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err %v, want %q", err, tt.want)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("err %v is not %v", err, tt.is)
			}
		})
	}
}

func TestUnknownFieldRefused(t *testing.T) {
	// A field this version does not know, with a checksum that matches.
	raw := []byte(`{"stack":"demo","operation":"apply","spec":{"file":"s","text":"t"},"state":{"serial":0,"revision":0},"providers":[],"resources":[],"later":1}`)
	data := []byte(`{"kind":"bulwark-plan","format_version":1,"checksum":"` + checksum(raw) + `","plan":` + string(raw) + `}`)
	if _, err := Decode("p.plan", data); err == nil || !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "later") {
		t.Fatalf("err %v, want an unknown field refused", err)
	}
}

func TestDetect(t *testing.T) {
	good, _ := Encode(sample())
	for _, tt := range []struct {
		data string
		want bool
	}{
		{string(good), true},
		{"\n\n" + string(good), true},
		{"version: 1\n", false},
		{`{"kind": "bulwark-planx"}`, false},
		{"", false},
	} {
		if got := Detect([]byte(tt.data)); got != tt.want {
			t.Errorf("Detect(%.30q) = %v", tt.data, got)
		}
	}
}

// Telling a spec from a plan reads only what it must: an endless device
// (plan /dev/zero) or a large spec costs a few bytes, never MaxSize (the
// CLI asks of every SPEC argument whether it is a plan file).
func TestIsPlanFileReadsLittleOfWhatIsNoPlan(t *testing.T) {
	big := filepath.Join(t.TempDir(), "big.yaml")
	if err := os.WriteFile(big, bytes.Repeat([]byte("# a comment line of a large spec\n"), 1<<16), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/dev/zero", big} {
		if _, err := os.Stat(path); err != nil {
			continue
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		ok, err := IsPlanFile(path)
		runtime.ReadMemStats(&after)
		if ok || err != nil {
			t.Errorf("%s: IsPlanFile = %v, %v; want false, nil", path, ok, err)
		}
		if got := after.TotalAlloc - before.TotalAlloc; got > 1<<20 {
			t.Errorf("%s: IsPlanFile allocated %d bytes to say it is no plan", path, got)
		}
	}
}
