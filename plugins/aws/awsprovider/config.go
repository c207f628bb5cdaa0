package awsprovider

import (
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/bulwark-iac/bulwark/sdk"
)

// Provider config keys.
const (
	keyRegion    = "region"
	keyProfile   = "profile"
	keyEndpoint  = "endpoint"
	keyEndpoints = "endpoints"
	keyTimeout   = "timeout_seconds"
)

// Services an endpoints map may name.
const (
	serviceS3       = "s3"
	serviceDynamoDB = "dynamodb"
)

// providerConfig is the provider's own config schema, as GetSchema reports
// it; parseSettings checks what a schema cannot. It takes no credentials (so
// nothing in it is sensitive): those come from the SDK's standard chain.
func providerConfig() []sdk.Attribute {
	return []sdk.Attribute{
		{Name: keyRegion, Type: sdk.TypeString, Description: "the AWS region (else AWS_REGION, AWS_DEFAULT_REGION or the profile's region)"},
		{Name: keyProfile, Type: sdk.TypeString, Description: "a profile of the shared AWS config and credentials files (else AWS_PROFILE or default)"},
		{Name: keyEndpoint, Type: sdk.TypeString, Description: "one endpoint URL for every service (an emulator or gateway); buckets are then addressed path-style"},
		{Name: keyEndpoints, Type: sdk.TypeMap, Description: "an endpoint URL per service (s3, dynamodb); wins over endpoint"},
		{Name: keyTimeout, Type: sdk.TypeNumber, Description: "the deadline of each provider call, waits included, in whole seconds from 1 to 86400 (default 60)"},
	}
}

// defaultTimeout bounds every provider call when timeout_seconds is unset.
const defaultTimeout = 60 * time.Second

// settings is the parsed provider config. It holds no credentials: those come
// from the SDK's standard chain only.
type settings struct {
	region   string
	profile  string
	endpoint string            // every service, unless endpoints names it
	services map[string]string // per-service endpoint
	timeout  time.Duration
}

// endpointFor returns the endpoint the config sets for service, or "".
func (s settings) endpointFor(service string) string {
	if e := s.services[service]; e != "" {
		return e
	}
	return s.endpoint
}

// parseSettings checks the provider config: every problem is one diagnostic
// naming its key. Diagnostics never repeat the value of an unknown key or of
// an endpoint: a mistaken key, or a URL, could hold a secret.
func parseSettings(cfg sdk.Attributes) (settings, sdk.Diagnostics) {
	s := settings{timeout: defaultTimeout}
	var ds sdk.Diagnostics
	keys := make([]string, 0, len(cfg))
	for k := range cfg {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := cfg[k]
		path := []string{k}
		if v == nil {
			continue
		}
		switch k {
		case keyRegion, keyProfile, keyEndpoint:
			str, ok := v.(string)
			if !ok {
				ds = append(ds, sdk.AttributeErrorf(path, "%s must be a string", k))
				continue
			}
			switch k {
			case keyRegion:
				if str != "" && !validRegion(str) {
					ds = append(ds, sdk.AttributeErrorf(path, "region %q is not a region name (like us-east-1)", str))
					continue
				}
				s.region = str
			case keyProfile:
				s.profile = str
			case keyEndpoint:
				if d, ok := checkEndpoint(path, str); !ok {
					ds = append(ds, d)
					continue
				}
				s.endpoint = str
			}
		case keyEndpoints:
			m, ok := v.(map[string]any)
			if !ok {
				ds = append(ds, sdk.AttributeErrorf(path, "%s must be a map of service (%s, %s) to URL", k, serviceDynamoDB, serviceS3))
				continue
			}
			s.services = map[string]string{}
			svcs := make([]string, 0, len(m))
			for svc := range m {
				svcs = append(svcs, svc)
			}
			sort.Strings(svcs)
			for _, svc := range svcs {
				p := []string{k, svc}
				if svc != serviceS3 && svc != serviceDynamoDB {
					ds = append(ds, sdk.AttributeErrorf(p, "unknown service %q in %s (known: %s, %s)", svc, k, serviceDynamoDB, serviceS3))
					continue
				}
				str, ok := m[svc].(string)
				if !ok {
					ds = append(ds, sdk.AttributeErrorf(p, "%s.%s must be a URL string", k, svc))
					continue
				}
				if d, ok := checkEndpoint(p, str); !ok {
					ds = append(ds, d)
					continue
				}
				s.services[svc] = str
			}
		case keyTimeout:
			n, ok := wholeNumber(v)
			if !ok || n < 1 || n > 24*3600 {
				ds = append(ds, sdk.AttributeErrorf(path, "%s must be a whole number of seconds from 1 to 86400", k))
				continue
			}
			s.timeout = time.Duration(n) * time.Second
		default:
			ds = append(ds, sdk.AttributeErrorf(path, "unknown provider config key %q (known: %s, %s, %s, %s, %s); credentials come from the standard AWS chain, never from the config",
				k, keyEndpoint, keyEndpoints, keyProfile, keyRegion, keyTimeout))
		}
	}
	return s, ds
}

// checkEndpoint accepts an absolute http(s) URL with a host and no user
// information. The diagnostic never repeats the URL: it could carry a
// password.
func checkEndpoint(path []string, s string) (sdk.Diagnostic, bool) {
	u, err := url.Parse(s)
	name := strings.Join(path, ".")
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		return sdk.AttributeErrorf(path, "%s must be an absolute http or https URL, like http://127.0.0.1:4566", name), false
	case u.User != nil:
		return sdk.AttributeErrorf(path, "%s must not carry user information: credentials come from the standard AWS chain", name), false
	}
	return sdk.Diagnostic{}, true
}

// validRegion accepts what looks like a region name: lowercase letters,
// digits and hyphens.
func validRegion(s string) bool {
	if len(s) < 3 || len(s) > 40 {
		return false
	}
	for _, r := range s {
		if (r < 'a' || r > 'z') && (r < '0' || r > '9') && r != '-' {
			return false
		}
	}
	return true
}
