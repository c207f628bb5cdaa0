package stack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/bulwark-iac/bulwark/core/dag"
	"github.com/bulwark-iac/bulwark/core/providers"
	"github.com/bulwark-iac/bulwark/core/resolve"
	"github.com/bulwark-iac/bulwark/core/secrets"
	"github.com/bulwark-iac/bulwark/core/spec"
)

// DataReadError is a data entry whose read failed: the plan stops before
// anything is decided, and nothing was changed (exit 1, as for any plan
// that fails).
type DataReadError struct {
	Name     string // the data entry
	Type     string // its data source type
	Provider string // its provider's local name
	Err      error
}

func (e *DataReadError) Error() string {
	return fmt.Sprintf("data %q (%s, provider %s): read failed: %v; nothing was changed", e.Name, e.Type, e.Provider, e.Err)
}

func (e *DataReadError) Unwrap() error { return e.Err }

// DataRead is one data entry a plan read, as plan shows it.
type DataRead struct {
	Name     string `json:"name"`
	Type     string `json:"type"`
	Provider string `json:"provider"`
	// Attributes are what the provider answered (arguments and results).
	Attributes map[string]any `json:"attributes"`
	// Sensitive lists the attributes whose values are never shown.
	Sensitive []string `json:"sensitive,omitempty"`
	// Saved: the values are the ones a saved plan recorded, not read again.
	Saved bool `json:"saved,omitempty"`
	// DurationMS is how long the read took (0 for values not read now:
	// a saved plan's, or those a resumed operation recorded).
	DurationMS int64 `json:"duration_ms"`
}

// MarshalJSON masks the sensitive attributes, as Planned's does.
func (d DataRead) MarshalJSON() ([]byte, error) {
	type plain DataRead
	out := plain(d)
	out.Attributes = secrets.MaskKeys(d.Attributes, d.Sensitive)
	return json.Marshal(out)
}

// dataSensitive lists the sensitive attributes of data source typ of sc.
func dataSensitive(sc *providers.GetSchemaResponse, typ string) []string {
	if sc == nil {
		return nil
	}
	dt, ok := sc.DataSource(typ)
	if !ok {
		return nil
	}
	var out []string
	for _, a := range dt.Attributes {
		if a.Sensitive {
			out = append(out, a.Name)
		}
	}
	return out
}

// readData reads every data entry of the spec (or takes what the saved
// plan being applied recorded), then makes the session's spec the one in
// which their values are substituted: what follows plans only resource
// references. Entries that do not depend on one another are read side by
// side, at most ReadParallelism at once; one that uses another's
// attributes is read after it. A read is never journaled: it changes
// nothing. The first failure is a *DataReadError; entries that depend on a
// failed one are not read.
func (s *session) readData(ctx context.Context) error {
	if len(s.sp.Data) == 0 {
		return nil
	}
	if s.dataSubstituted == s.sp {
		return nil // a plan made again (dryRun) over the same session
	}
	var reads map[string]DataRead
	if s.saved != nil && s.saved.data != nil {
		reads = s.saved.data
	} else {
		var err error
		if reads, err = s.readAllData(ctx, s.recordedData); err != nil {
			return err
		}
	}
	vals := make(resolve.DataValues, len(reads))
	s.dataReads = s.dataReads[:0]
	for _, d := range s.sp.Data {
		r, ok := reads[d.Name]
		if !ok {
			return fmt.Errorf("data %q: no value was read", d.Name)
		}
		vals[d.Name] = r.Attributes
		for _, k := range r.Sensitive {
			if v, ok := r.Attributes[k]; ok && v != nil {
				s.opts.Redactor.Add(v)
				s.dataSecrets = append(s.dataSecrets, v)
			}
		}
		s.dataReads = append(s.dataReads, r)
	}
	// A value that holds a secret the session knows (a sensitive
	// variable given as an argument, another entry's sensitive result) is
	// masked too, whatever the data source's schema says.
	for i := range s.dataReads {
		r := &s.dataReads[i]
		extra := false
		for _, k := range slices.Sorted(maps.Keys(r.Attributes)) {
			if !slices.Contains(r.Sensitive, k) && s.holdsSecret(r.Attributes[k]) {
				r.Sensitive = append(slices.Clone(r.Sensitive), k)
				extra = true
			}
		}
		if extra {
			slices.Sort(r.Sensitive)
		}
	}
	sensitive := make(map[string][]string, len(s.dataReads))
	for _, r := range s.dataReads {
		sensitive[r.Name] = r.Sensitive
	}
	sp, err := resolve.SubstituteDataSensitive(s.sp, vals, sensitive)
	if err != nil {
		return err
	}
	for _, v := range sp.Secrets {
		s.opts.Redactor.Add(v)
	}
	s.sp, s.dataSubstituted = sp, sp
	return nil
}

// readAllData asks the providers for every data entry but those had holds
// (what a resumed operation read when it first ran: see useRecordedData),
// which are taken as they are, never read again.
func (s *session) readAllData(ctx context.Context, had map[string]DataRead) (map[string]DataRead, error) {
	g := dag.New()
	for _, d := range s.sp.Data {
		g.Add(d.Name)
		for _, dep := range d.DependsOn {
			g.Connect(d.Name, dep)
		}
	}
	var (
		mu       sync.Mutex
		reads    = make(map[string]DataRead, len(s.sp.Data))
		vals     = make(resolve.DataValues, len(s.sp.Data))
		firstErr error
	)
	fail := func(err error) bool {
		mu.Lock()
		defer mu.Unlock()
		if firstErr == nil {
			firstErr = err
		}
		return false
	}
	stop := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return firstErr != nil || ctx.Err() != nil
	}
	for _, d := range s.sp.Data {
		if r, ok := had[d.Name]; ok && r.Type == d.Type && r.Provider == d.Provider {
			reads[d.Name], vals[d.Name] = r, r.Attributes
		}
	}
	g.Walk(ctx, s.opts.ReadParallelism, stop, func(ctx context.Context, name string) bool {
		d, _ := s.sp.DataEntry(name)
		mu.Lock()
		_, done := reads[name]
		mu.Unlock()
		if done {
			return true
		}
		mu.Lock()
		cfg, err := resolve.DataConfig(d, vals)
		mu.Unlock()
		if err != nil {
			return fail(err)
		}
		began := s.opts.Now()
		r, err := s.readOne(ctx, d, cfg)
		took := s.opts.Now().Sub(began)
		s.prog.dataRead(s.opID, d, took, err)
		if err != nil {
			return fail(err)
		}
		r.DurationMS = took.Milliseconds()
		mu.Lock()
		reads[name], vals[name] = r, r.Attributes
		mu.Unlock()
		return true
	})
	if firstErr != nil {
		return nil, firstErr
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return reads, nil
}

// readOne reads data entry d with its config resolved.
func (s *session) readOne(ctx context.Context, d *spec.Data, cfg map[string]any) (DataRead, error) {
	p := s.plugins[d.Provider]
	if p == nil {
		return DataRead{}, &DataReadError{Name: d.Name, Type: d.Type, Provider: d.Provider, Err: errors.New("the provider is not running")}
	}
	sensitive := dataSensitive(p.Schema(), d.Type)
	for _, k := range sensitive {
		// A secret in the arguments is masked in whatever the provider
		// answers about them.
		if v, ok := cfg[k]; ok && v != nil {
			s.opts.Redactor.Add(v)
		}
	}
	resp, err := p.ReadData(ctx, &providers.ReadDataRequest{Type: d.Type, Name: d.Name, Config: cfg})
	if err == nil && resp != nil {
		err = resp.Diagnostics.Err()
	}
	if err == nil && resp == nil {
		err = errors.New("the provider answered nothing")
	}
	if err != nil {
		return DataRead{}, &DataReadError{Name: d.Name, Type: d.Type, Provider: d.Provider, Err: s.redactErr(err)}
	}
	attrs := maps.Clone(map[string]any(resp.Attributes))
	if attrs == nil {
		attrs = map[string]any{}
	}
	// The arguments stand as written when the provider does not echo them.
	for k, v := range cfg {
		if _, ok := attrs[k]; !ok {
			attrs[k] = v
		}
	}
	slices.Sort(sensitive)
	return DataRead{Name: d.Name, Type: d.Type, Provider: d.Provider, Attributes: attrs, Sensitive: sensitive}, nil
}

// redactErr masks the secrets the session knows in err's text.
func (s *session) redactErr(err error) error {
	if msg := s.opts.Redactor.Redact(err.Error()); msg != err.Error() {
		return errors.New(msg)
	}
	return err
}
