package providers

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Severity says whether a diagnostic stops the operation.
type Severity int

const (
	SeverityError Severity = iota + 1
	SeverityWarning
)

func (s Severity) String() string {
	if s == SeverityWarning {
		return "warning"
	}
	return "error"
}

// Diagnostic is a problem a provider reports: a summary, a detail, and the
// path of the attribute it concerns (empty for the whole resource).
type Diagnostic struct {
	Severity      Severity
	Summary       string
	Detail        string
	AttributePath []string
	// Code is a machine-readable kind the host branches on ("" for most):
	// CodeConflict.
	Code string
	// Throttled says the call was refused by a rate limit (an API's quota)
	// and did nothing: the host lowers the provider's concurrency, waits and
	// sends the same request again, and the step does not fail for it.
	// Only an error diagnostic is throttled (see Throttled).
	Throttled bool
	// RetryAfter, on a throttled diagnostic, is how long the API asked to
	// wait before the next try (a Retry-After); 0 when it did not say, and
	// the host backs off on its own.
	RetryAfter time.Duration
}

// CodeConflict marks a Create that found its identity already taken by a
// resource made under another idempotency key, or by none, and did not
// claim it; and a Delete that found the resource carrying another key than
// DeleteRequest.ExpectedKey, and did not delete it.
const CodeConflict = "conflict"

// Conflict returns the diagnostic for a Create whose identity is taken:
// summary says what was found ("bucket acme-data already exists"); ownerKey
// is the idempotency key the existing resource was created under, "" when it
// was not made by bulwark (or its key is unknown).
func Conflict(summary, ownerKey string) Diagnostic {
	detail := "it was not created by bulwark under this key; it is not claimed (import it to take it over)"
	if ownerKey != "" {
		detail = fmt.Sprintf("it was created under idempotency key %s; it is not claimed (import it to take it over)", ownerKey)
	}
	return Diagnostic{Severity: SeverityError, Summary: summary, Detail: detail, Code: CodeConflict}
}

// IsConflict reports whether err carries a Conflict diagnostic.
func IsConflict(err error) bool {
	var ds Diagnostics
	if errors.As(err, &ds) {
		for _, d := range ds {
			if d.Code == CodeConflict && d.Severity != SeverityWarning {
				return true
			}
		}
	}
	var d Diagnostic
	return errors.As(err, &d) && d.Code == CodeConflict
}

// Throttled returns the error diagnostic for a call refused by a rate limit
// (a cloud's "Throttling", "SlowDown", HTTP 429): the call did nothing, and
// the host retries the same request once the limit allows (never failing
// the step for it). retryAfter is the wait the API asked for, 0 when it did
// not say. The retry is the same request: a Create with its idempotency
// key, so a Create throttled half-way (the resource made, its tagging
// refused) is finished by its retry, which finds what it made, as after a
// crash.
func Throttled(retryAfter time.Duration, format string, args ...any) Diagnostic {
	return Diagnostic{Severity: SeverityError, Summary: fmt.Sprintf(format, args...), Throttled: true, RetryAfter: max(retryAfter, 0)}
}

// Throttle returns the first throttled error diagnostic of ds.
func (ds Diagnostics) Throttle() (Diagnostic, bool) {
	for _, d := range ds {
		if d.Throttled && d.Severity != SeverityWarning {
			return d, true
		}
	}
	return Diagnostic{}, false
}

// IsThrottled reports whether err carries a throttled error diagnostic,
// and returns it.
func IsThrottled(err error) (Diagnostic, bool) {
	if err == nil {
		// Every answered call asks: without this, errors.As's targets
		// escape and each answer costs two allocations.
		return Diagnostic{}, false
	}
	var ds Diagnostics
	if errors.As(err, &ds) {
		return ds.Throttle()
	}
	var d Diagnostic
	if errors.As(err, &d) && d.Throttled && d.Severity != SeverityWarning {
		return d, true
	}
	return Diagnostic{}, false
}

func (d Diagnostic) Error() string {
	var b strings.Builder
	if len(d.AttributePath) > 0 {
		b.WriteString(strings.Join(d.AttributePath, "."))
		b.WriteString(": ")
	}
	b.WriteString(d.Summary)
	if d.Detail != "" {
		b.WriteString(": ")
		b.WriteString(d.Detail)
	}
	return b.String()
}

// Diagnostics is a list of diagnostics; as an error it stands for its errors.
type Diagnostics []Diagnostic

// HasError reports whether any diagnostic is an error.
func (ds Diagnostics) HasError() bool {
	for _, d := range ds {
		if d.Severity != SeverityWarning {
			return true
		}
	}
	return false
}

// Err returns the diagnostics as an error when one of them is an error, else nil.
func (ds Diagnostics) Err() error {
	if !ds.HasError() {
		return nil
	}
	return ds
}

func (ds Diagnostics) Error() string {
	var msgs []string
	for _, d := range ds {
		if d.Severity != SeverityWarning {
			msgs = append(msgs, d.Error())
		}
	}
	return strings.Join(msgs, "; ")
}

// Errorf returns an error diagnostic about the whole resource.
func Errorf(format string, args ...any) Diagnostic {
	return Diagnostic{Severity: SeverityError, Summary: fmt.Sprintf(format, args...)}
}

// AttributeErrorf returns an error diagnostic about the attribute at path.
func AttributeErrorf(path []string, format string, args ...any) Diagnostic {
	return Diagnostic{Severity: SeverityError, Summary: fmt.Sprintf(format, args...), AttributePath: path}
}

// DiagnosticsFromError turns any error into diagnostics, keeping the
// diagnostics an error wraps.
func DiagnosticsFromError(err error) Diagnostics {
	if err == nil {
		return nil
	}
	var ds Diagnostics
	if errors.As(err, &ds) {
		return ds
	}
	var d Diagnostic
	if errors.As(err, &d) {
		return Diagnostics{d}
	}
	return Diagnostics{{Severity: SeverityError, Summary: err.Error()}}
}
