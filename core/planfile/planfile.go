// Package planfile reads and writes bulwark's saved plans: what `bulwark plan
// SPEC --out FILE` decided, so that `bulwark apply FILE` carries out exactly
// that plan, or refuses when anything it was made from changed.
//
// A plan file is one JSON object:
//
//	{"kind": "bulwark-plan", "format_version": 1, "checksum": "sha256:…", "plan": {…}}
//
// The checksum is the SHA-256 of the bytes of "plan" exactly as they are in
// the file; Read refuses a file whose checksum does not match, whose kind is
// not "bulwark-plan", whose format_version it does not know, or whose plan
// has a field it does not know (a plan is applied exactly, so nothing in it
// may be skipped). A later format adds fields under a new format_version.
//
// What the package guarantees:
//   - Write replaces the file atomically (a temporary file, fsync, rename,
//     fsync of the folder) with mode 0600, and never through a symbolic
//     link planted at the path;
//   - Read reads at most MaxSize bytes;
//   - Detect tells a plan file from a spec by its content (a JSON object
//     whose "kind" is "bulwark-plan"), never by its name: a spec is YAML,
//     and a spec in JSON form has no "kind" key.
//
// The package holds values as it is given them: sealing sensitive values
// (and the spec's text) before Write is the caller's job (package stack).
// The checksum detects a damaged or truncated file, not a forger: what
// could change an apply's outcome is either sealed (authenticated by its
// key) or checked again against reality when the plan is applied.
package planfile

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/bulwark-iac/bulwark/core/nofollow"
	"github.com/bulwark-iac/bulwark/core/secrets"
	"github.com/bulwark-iac/bulwark/sdk/atomicfile"
)

// Kind is the "kind" every plan file carries.
const Kind = "bulwark-plan"

// FormatVersion is the format this package writes and reads.
const FormatVersion = 1

// MaxSize bounds what Read and Detect read of a file.
const MaxSize = 64 << 20

// ErrNotPlan is returned by Read for a file that is not a plan file.
var ErrNotPlan = errors.New("not a bulwark plan file")

// ErrCorrupt is wrapped by every error about a plan file that is damaged:
// a checksum that does not match, a body that does not parse.
var ErrCorrupt = errors.New("plan file is damaged")

// Plan is what a saved plan records.
type Plan struct {
	// CreatedAt is when the plan was made (UTC).
	CreatedAt time.Time `json:"created_at"`
	// BulwarkVersion is the version of the bulwark that made it.
	BulwarkVersion string `json:"bulwark_version,omitempty"`
	// Stack is the stack's name.
	Stack string `json:"stack"`
	// Operation is what applying it runs: "apply" (a stack with nothing
	// recorded) or "update".
	Operation string `json:"operation"`
	Spec      Spec   `json:"spec"`
	// Variables are the values the spec was resolved with; a sensitive
	// one's value is sealed. Applying the plan uses them, never --var.
	Variables map[string]Variable `json:"variables,omitempty"`
	// VariableChanges are the variables whose values differ from the
	// current revision's, as plan shows them (a sensitive one masked).
	VariableChanges []VariableChange `json:"variable_changes,omitempty"`
	// Replace holds the addresses the plan was made with --replace: the
	// consent to replace them travels with the plan that was reviewed.
	Replace []string `json:"replace,omitempty"`
	// Targets holds the plan's --target addresses: applying it covers
	// exactly what the plan covered.
	Targets []string `json:"targets,omitempty"`
	State   State    `json:"state"`
	// Providers are the plugins the plan read reality through; apply runs
	// the same bytes or refuses.
	Providers []Provider `json:"providers"`
	// Resources are the decisions, in the order the plan lists them (the
	// spec's, then the state's resources the spec no longer has).
	Resources []Resource `json:"resources"`
	// Data are what the spec's data entries read when the plan was made,
	// in the spec's order: applying the plan uses these values and reads
	// nothing again.
	Data []Data `json:"data,omitempty"`
	// Stacks are the other stacks' outputs the plan read
	// (${stack.NAME.outputs.X}): applying the plan uses these values.
	Stacks []StackRead `json:"stacks,omitempty"`
	// Secrets is the secrets provider a plan of a stack's first apply
	// chose (--secrets-provider; never the key): the plan is sealed under
	// its key, and applying the plan makes it the stack's. Nil: the
	// provider the state records (keyfile when none).
	Secrets *secrets.Config `json:"secrets,omitempty"`
}

// StackRead is what a plan read of another stack's outputs.
type StackRead struct {
	Stack    string `json:"stack"`
	Revision int    `json:"revision"`
	// Outputs are the values read; a Sensitive one's value is sealed.
	Outputs   map[string]any `json:"outputs"`
	Sensitive []string       `json:"sensitive,omitempty"`
}

// Data is what one data entry read.
type Data struct {
	Name     string `json:"name"`
	Type     string `json:"type"`
	Provider string `json:"provider"`
	// Attributes are the values read; a Sensitive one's value is sealed.
	Attributes map[string]any `json:"attributes"`
	Sensitive  []string       `json:"sensitive,omitempty"`
}

// Spec is the spec the plan was made from.
type Spec struct {
	// File is the spec's path as it was given to plan.
	File string `json:"file"`
	// Provider is the --provider the plan was made with ("" when none).
	Provider string `json:"provider,omitempty"`
	// Text is the spec's source, sealed (it may hold provider tokens; no
	// digest of it is written either: one could be searched for a short
	// secret). Apply opens it and compares it with the file at File.
	Text string `json:"text"`
}

// Variable is one variable's value.
type Variable struct {
	// Value is the value; sealed (a string) when Sensitive.
	Value     any  `json:"value"`
	Sensitive bool `json:"sensitive,omitempty"`
}

// VariableChange is one variable's change since the current revision.
type VariableChange struct {
	Name      string `json:"name"`
	Before    any    `json:"before,omitempty"`
	After     any    `json:"after,omitempty"`
	Sensitive bool   `json:"sensitive,omitempty"`
}

// State is the state the plan was made against.
type State struct {
	Lineage string `json:"lineage,omitempty"`
	Serial  int64  `json:"serial"`
	// Revision is the revision current when the plan was made (0: none).
	Revision int `json:"revision"`
}

// Provider is one plugin the plan started.
type Provider struct {
	Name   string `json:"name"`
	Source string `json:"source"`
	SHA256 string `json:"sha256,omitempty"`
}

// Resource is one resource's decision and what it was made on.
type Resource struct {
	Address    string `json:"address"`
	Type       string `json:"type"`
	Provider   string `json:"provider"`
	Protection string `json:"protection"`
	Action     string `json:"action"`
	Ownership  string `json:"ownership,omitempty"`
	// Before is the config the state records, After the spec's; the value
	// of each key in Sensitive is sealed in them and in Observed.
	Before    map[string]any `json:"before,omitempty"`
	After     map[string]any `json:"after,omitempty"`
	Sensitive []string       `json:"sensitive,omitempty"`
	// Unknown are the attributes known only after apply.
	Unknown    []string `json:"unknown,omitempty"`
	ForceNew   []string `json:"force_new,omitempty"`
	Drifted    []string `json:"drifted,omitempty"`
	Changed    []string `json:"changed,omitempty"`
	DriftKeys  []string `json:"drift_keys,omitempty"`
	Remote     bool     `json:"remote,omitempty"`
	ImportID   string   `json:"import_id,omitempty"`
	FoundID    string   `json:"found_id,omitempty"`
	Owner      string   `json:"owner,omitempty"`
	Reason     string   `json:"reason,omitempty"`
	Importable bool     `json:"importable,omitempty"`
	// Drift and Vanished are the notes a person is shown (see stack.Planned).
	Drift    string `json:"drift,omitempty"`
	Vanished bool   `json:"vanished,omitempty"`
	// Observed is what the provider's Read returned when the plan was made
	// (nil: reality was not read).
	Observed *Observation `json:"observed"`
}

// Observation is what one Read saw.
type Observation struct {
	Exists     bool           `json:"exists"`
	ID         string         `json:"id,omitempty"`
	Key        string         `json:"idempotency_key,omitempty"`
	ByIdentity bool           `json:"by_identity,omitempty"`
	Attributes map[string]any `json:"attributes,omitempty"`
}

type envelope struct {
	Kind          string          `json:"kind"`
	FormatVersion int             `json:"format_version"`
	Checksum      string          `json:"checksum"`
	Plan          json.RawMessage `json:"plan"`
}

// Encode returns the file's bytes for p.
func Encode(p *Plan) ([]byte, error) {
	var body bytes.Buffer
	enc := json.NewEncoder(&body)
	enc.SetEscapeHTML(false)
	enc.SetIndent("  ", "  ")
	if err := enc.Encode(p); err != nil {
		return nil, fmt.Errorf("encode plan: %w", err)
	}
	raw := bytes.TrimRight(body.Bytes(), "\n")
	var out bytes.Buffer
	fmt.Fprintf(&out, "{\n  \"kind\": %q,\n  \"format_version\": %d,\n  \"checksum\": %q,\n  \"plan\": %s\n}\n",
		Kind, FormatVersion, checksum(raw), raw)
	return out.Bytes(), nil
}

// Write writes p to path atomically, mode 0600.
func Write(path string, p *Plan) error {
	b, err := Encode(p)
	if err != nil {
		return err
	}
	if err := nofollow.CheckReplaceable(path); err != nil {
		return fmt.Errorf("write plan: %w", err)
	}
	if err := atomicfile.Write(path, b, 0o600); err != nil {
		return fmt.Errorf("write plan %s: %w", path, err)
	}
	return nil
}

func checksum(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// sniffSize is how much of a file IsPlanFile reads to see whether it opens
// a JSON object (Encode writes none of the whitespace before it).
const sniffSize = 4 << 10

// readBounded reads at most MaxSize bytes of path.
func readBounded(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var buf bytes.Buffer
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
		if fi.Size() > MaxSize {
			return nil, fmt.Errorf("%s: larger than %d MiB", path, MaxSize>>20)
		}
		buf.Grow(int(fi.Size()) + 1) // one allocation, not ReadAll's doublings
	}
	if _, err := buf.ReadFrom(io.LimitReader(f, MaxSize+1)); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	if len(b) > MaxSize {
		return nil, fmt.Errorf("%s: larger than %d MiB", path, MaxSize>>20)
	}
	return b, nil
}

// Detect reports whether data is a plan file: a JSON object whose "kind" is
// Kind. A spec (YAML, or YAML written as JSON, which has no "kind") is not.
func Detect(data []byte) bool {
	t := bytes.TrimLeft(data, " \t\r\n")
	if len(t) == 0 || t[0] != '{' {
		return false
	}
	var probe struct {
		Kind string `json:"kind"`
	}
	return json.Unmarshal(t, &probe) == nil && probe.Kind == Kind
}

// IsPlanFile reports whether the file at path is a plan file (see Detect).
//
// Only a file whose first bytes open a JSON object is read whole: a spec,
// or an endless device (plan /dev/zero), costs a few bytes.
func IsPlanFile(path string) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	head := make([]byte, sniffSize)
	n, err := io.ReadFull(f, head)
	f.Close()
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return false, err
	}
	if t := bytes.TrimLeft(head[:n], " \t\r\n"); len(t) == 0 || t[0] != '{' {
		return false, nil
	}
	b, err := readBounded(path)
	if err != nil {
		return false, err
	}
	return Detect(b), nil
}

// Read reads and checks the plan file at path.
func Read(path string) (*Plan, error) {
	b, err := readBounded(path)
	if err != nil {
		return nil, err
	}
	return Decode(path, b)
}

// Decode checks and decodes a plan file's bytes; name is for messages.
func Decode(name string, b []byte) (*Plan, error) {
	if !Detect(b) {
		return nil, fmt.Errorf("%s: %w (a plan file is what `bulwark plan SPEC --out FILE` writes)", name, ErrNotPlan)
	}
	var env envelope
	if err := json.Unmarshal(b, &env); err != nil {
		return nil, fmt.Errorf("%s: %w: %v", name, ErrCorrupt, err)
	}
	if env.FormatVersion != FormatVersion {
		return nil, fmt.Errorf("%s: plan format_version %d; this bulwark reads format_version %d (make the plan again with this bulwark)", name, env.FormatVersion, FormatVersion)
	}
	if got := checksum(env.Plan); got != env.Checksum {
		return nil, fmt.Errorf("%s: %w: its checksum is %s but its plan sums to %s (it was altered or truncated: make the plan again)", name, ErrCorrupt, env.Checksum, got)
	}
	dec := json.NewDecoder(bytes.NewReader(env.Plan))
	dec.DisallowUnknownFields()
	var p Plan
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("%s: %w: %v", name, ErrCorrupt, err)
	}
	if p.Stack == "" {
		return nil, fmt.Errorf("%s: %w: it names no stack", name, ErrCorrupt)
	}
	return &p, nil
}
