package mockprovider

import (
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/bulwark-iac/bulwark/sdk"
)

// Provider config keys.
const (
	keyFailCreate  = "fail_create"
	keyFailDelete  = "fail_delete"
	keyCrashCreate = "crash_create"
	keyKeepDelete  = "keep_delete"
	keyLatencyMS   = "latency_ms"
	keyRateLimit   = "rate_limit"
	keyWorld       = "world"
	keyToken       = "token"
)

// configSchema describes the provider config, for the host to check at the
// spec's line (and never show a sensitive value).
func configSchema() []sdk.Attribute {
	return []sdk.Attribute{
		{Name: keyFailCreate, Type: sdk.TypeList, Description: "resource names whose every Create fails"},
		{Name: keyFailDelete, Type: sdk.TypeMap, Description: "resource name to n: the next n Deletes of it fail, counted across runs"},
		{Name: keyCrashCreate, Type: sdk.TypeList, Description: "resource names whose Create exits the plugin process half-way"},
		{Name: keyKeepDelete, Type: sdk.TypeList, Description: "resource names whose every Delete answers ok and leaves the resource in place"},
		{Name: keyLatencyMS, Type: sdk.TypeNumber, Description: "milliseconds every call but Configure sleeps"},
		{Name: keyRateLimit, Type: sdk.TypeNumber, Description: "Creates, Updates and Deletes a second; those beyond it are answered throttled"},
		{Name: keyWorld, Type: sdk.TypeString, Description: "the folder the world lives in (default: the data folder); share it to share one reality"},
		{Name: keyToken, Type: sdk.TypeString, Sensitive: true, Description: "a credential, as a cloud provider takes one; accepted and unused, never shown"},
	}
}

// faults is the parsed provider config: which faults to inject, keyed by
// resource name.
type faults struct {
	failCreate  []string       // Create of these names fails every time
	failDelete  map[string]int // the next n Deletes of these names fail
	crashCreate []string       // the process exits in the middle of Create
	keepDelete  []string       // Delete of these names answers ok and removes nothing
	latency     time.Duration  // every call sleeps this long
	rateLimit   float64        // mutating calls a second (0: no limit)
	world       string         // the folder the world lives in; "" is the data folder
}

// parseConfig checks and parses the provider config; every problem is one
// diagnostic naming its key.
func parseConfig(raw sdk.Attributes) (faults, sdk.Diagnostics) {
	var f faults
	var ds sdk.Diagnostics
	cfg, err := normalize(raw)
	if err != nil {
		return f, sdk.DiagnosticsFromError(err)
	}
	keys := make([]string, 0, len(cfg))
	for k := range cfg {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := cfg[k]
		path := []string{k}
		switch k {
		case keyFailCreate, keyCrashCreate, keyKeepDelete:
			names, d := stringList(path, v)
			ds = append(ds, d...)
			switch k {
			case keyFailCreate:
				f.failCreate = names
			case keyCrashCreate:
				f.crashCreate = names
			default:
				f.keepDelete = names
			}
		case keyFailDelete:
			m, ok := v.(map[string]any)
			if !ok {
				ds = append(ds, sdk.AttributeErrorf(path, "%s must be a map of resource name to count, e.g. {network: 1}", k))
				continue
			}
			f.failDelete = map[string]int{}
			for name, n := range m {
				c, ok := count(n)
				if !ok {
					ds = append(ds, sdk.AttributeErrorf([]string{k, name}, "%s.%s must be a whole number >= 0, not %v", k, name, n))
					continue
				}
				f.failDelete[name] = c
			}
		case keyLatencyMS:
			c, ok := count(v)
			if !ok {
				ds = append(ds, sdk.AttributeErrorf(path, "%s must be a whole number of milliseconds >= 0, not %v", k, v))
				continue
			}
			f.latency = time.Duration(c) * time.Millisecond
		case keyRateLimit:
			r, ok := v.(float64)
			if !ok || r < 0 || math.IsInf(r, 0) || math.IsNaN(r) {
				ds = append(ds, sdk.AttributeErrorf(path, "%s must be a number of calls a second >= 0 (0: no limit), not %v", k, v))
				continue
			}
			f.rateLimit = r
		case keyWorld:
			s, ok := v.(string)
			if !ok || s == "" {
				ds = append(ds, sdk.AttributeErrorf(path, "%s must be a folder path, not %v", k, v))
				continue
			}
			f.world = s
		case keyToken:
			if _, ok := v.(string); !ok {
				// The value is sensitive: the diagnostic never shows it.
				ds = append(ds, sdk.AttributeErrorf(path, "%s must be a string", k))
			}
		default:
			ds = append(ds, sdk.AttributeErrorf(path, "unknown provider config key %q (known: %s, %s, %s, %s, %s, %s, %s, %s)",
				k, keyCrashCreate, keyFailCreate, keyFailDelete, keyKeepDelete, keyLatencyMS, keyRateLimit, keyToken, keyWorld))
		}
	}
	return f, ds
}

func stringList(path []string, v any) ([]string, sdk.Diagnostics) {
	l, ok := v.([]any)
	if !ok {
		return nil, sdk.Diagnostics{sdk.AttributeErrorf(path, "%s must be a list of resource names", path[0])}
	}
	var out []string
	var ds sdk.Diagnostics
	for i, e := range l {
		s, ok := e.(string)
		if !ok {
			ds = append(ds, sdk.AttributeErrorf(path, "%s[%d] must be a resource name, not %v", path[0], i, e))
			continue
		}
		out = append(out, s)
	}
	return out, ds
}

// count accepts a whole, non-negative number that fits an int32.
func count(v any) (int, bool) {
	f, ok := v.(float64)
	if !ok || f < 0 || f != math.Trunc(f) || f > math.MaxInt32 {
		return 0, false
	}
	return int(f), true
}

func (f faults) failsCreate(name string) bool   { return names(f.failCreate, name) }
func (f faults) crashesCreate(name string) bool { return names(f.crashCreate, name) }
func (f faults) keepsDelete(name string) bool   { return names(f.keepDelete, name) }

// names reports whether a fault's list names the resource name: the name
// itself ("worker", or one instance, "worker[a]"), or, for an instance of a
// count or for_each resource, its bare name, which names every instance (a
// bare name that matched no instance at all was a fault that silently
// never fired).
func names(list []string, name string) bool {
	if slices.Contains(list, name) {
		return true
	}
	if i := strings.IndexByte(name, '['); i > 0 && strings.HasSuffix(name, "]") {
		return slices.Contains(list, name[:i])
	}
	return false
}
