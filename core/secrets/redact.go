package secrets

import (
	"bytes"
	"encoding/json"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/bulwark-iac/bulwark/core/printable"
)

// Mask is what a sensitive value is shown as.
const Mask = "(sensitive)"

// MinRedactLen is the shortest value a Redactor looks for in text: a
// shorter one would mask pieces of ordinary words. Such values are still
// sealed in the state and masked wherever a value is shown by name (plans,
// JSON); they are only not searched for in free text.
const MinRedactLen = 4

// Redactor is the set of sensitive strings one command knows of. It is safe
// for concurrent use; a nil *Redactor redacts nothing.
type Redactor struct {
	mu     sync.RWMutex
	values map[string]bool
	rep    *strings.Replacer // rebuilt on the next Redact after an Add
}

// NewRedactor returns an empty Redactor.
func NewRedactor() *Redactor { return &Redactor{values: map[string]bool{}} }

// Add records sensitive values: every string in v (v itself, or the
// strings and numbers inside a list or a map).
func (r *Redactor) Add(values ...any) {
	if r == nil {
		return
	}
	var found []string
	for _, v := range values {
		collect(v, &found)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range found {
		if len(s) < MinRedactLen || r.values[s] {
			continue
		}
		r.values[s] = true
		r.rep = nil
	}
}

func collect(v any, out *[]string) {
	switch v := v.(type) {
	case string:
		*out = append(*out, v)
	case float64:
		*out = append(*out, strconv.FormatFloat(v, 'f', -1, 64))
	case int:
		*out = append(*out, strconv.Itoa(v))
	case int64:
		*out = append(*out, strconv.FormatInt(v, 10))
	case []any:
		for _, e := range v {
			collect(e, out)
		}
	case map[string]any:
		for _, e := range v {
			collect(e, out)
		}
	case []string:
		*out = append(*out, v...)
	}
}

// Len is the number of values known.
func (r *Redactor) Len() int {
	if r == nil {
		return 0
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	return len(r.values)
}

// Redact returns s with every known value replaced by Mask, whether it
// appears raw, JSON-escaped, Go-quoted or made inert for a terminal
// (core/printable).
func (r *Redactor) Redact(s string) string {
	if r == nil || s == "" {
		return s
	}
	rep := r.replacer()
	if rep == nil {
		return s
	}
	return rep.Replace(s)
}

func (r *Redactor) replacer() *strings.Replacer {
	r.mu.RLock()
	rep, n := r.rep, len(r.values)
	r.mu.RUnlock()
	if rep != nil || n == 0 {
		return rep
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.rep != nil {
		return r.rep
	}
	forms := map[string]bool{}
	for v := range r.values {
		forms[v] = true
		forms[strings.Trim(strconv.Quote(v), `"`)] = true
		// Inside JSON, as encoding/json writes it by default (<, > and &
		// escaped) or not, and inside JSON inside JSON (an error that
		// quotes a JSON body, in an event or a journal record).
		for _, html := range []bool{false, true} {
			once := jsonInner(v, html)
			forms[once] = true
			forms[jsonInner(once, html)] = true
			// JSON, then made inert: the plan and state views print
			// values that way (JSON leaves DEL and the C1 controls).
			forms[printable.Line(once)] = true
		}
		// As the text views print what they read (core/printable): a
		// value with control characters is written with them escaped,
		// often before this Redactor sees the line (the progress view's
		// errors, the plugin host's), and must still be found.
		forms[printable.Line(v)] = true
		forms[printable.Text(v)] = true
	}
	list := make([]string, 0, len(forms))
	for f := range forms {
		list = append(list, f)
	}
	// Longest first, so a value that contains another is masked whole.
	slices.SortFunc(list, func(a, b string) int {
		if len(a) != len(b) {
			return len(b) - len(a)
		}
		return strings.Compare(a, b)
	})
	pairs := make([]string, 0, 2*len(list))
	for _, f := range list {
		pairs = append(pairs, f, Mask)
	}
	r.rep = strings.NewReplacer(pairs...)
	return r.rep
}

// jsonInner is s as it appears inside a JSON string (with <, > and &
// escaped when html).
func jsonInner(s string, html bool) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(html)
	if enc.Encode(s) != nil {
		return s
	}
	b := bytes.TrimSpace(buf.Bytes())
	return string(b[1 : len(b)-1])
}

// Error returns err with its message redacted; errors.Is and errors.As still
// see the original chain. A nil err stays nil.
func (r *Redactor) Error(err error) error {
	if err == nil || r == nil {
		return err
	}
	return &redacted{err: err, r: r}
}

type redacted struct {
	err error
	r   *Redactor
}

func (e *redacted) Error() string { return e.r.Redact(e.err.Error()) }
func (e *redacted) Unwrap() error { return e.err }

// Writer returns a writer that redacts each write before passing it on.
// Each write should be whole (a line, an event), as a value split across
// two writes is not found.
func (r *Redactor) Writer(w io.Writer) io.Writer {
	if r == nil {
		return w
	}
	return &writer{w: w, r: r}
}

type writer struct {
	w io.Writer
	r *Redactor
}

func (w *writer) Write(p []byte) (int, error) {
	if w.r.Len() == 0 {
		return w.w.Write(p)
	}
	out := w.r.Redact(string(p))
	if _, err := io.WriteString(w.w, out); err != nil {
		return 0, err
	}
	return len(p), nil
}

// MaskKeys returns a copy of m in which the values of keys are Mask; m is
// returned as it is when it holds none of them.
func MaskKeys(m map[string]any, keys []string) map[string]any {
	hit := false
	for _, k := range keys {
		if _, ok := m[k]; ok {
			hit = true
			break
		}
	}
	if !hit {
		return m
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	for _, k := range keys {
		if _, ok := out[k]; ok {
			out[k] = Mask
		}
	}
	return out
}
