package awsprovider

import (
	"fmt"
	"reflect"
	"regexp"
	"strings"

	"github.com/bulwark-iac/bulwark/sdk"
)

// Name and Version are what GetSchema reports.
const (
	Name    = "aws"
	Version = "0.1.0"
)

// Resource types.
const (
	typeBucket = "s3_bucket"
	typeTable  = "dynamodb_table"
)

// Attribute names.
const (
	attrBucket        = "bucket"
	attrRegion        = "region"
	attrARN           = "arn"
	attrTable         = "table"
	attrHashKey       = "hash_key"
	attrHashKeyType   = "hash_key_type"
	attrBillingMode   = "billing_mode"
	attrReadCapacity  = "read_capacity"
	attrWriteCapacity = "write_capacity"
	// The table's stream settings, computed: what DescribeTable reports.
	attrStreamEnabled  = "stream_enabled"
	attrStreamViewType = "stream_view_type"
	attrStreamARN      = "stream_arn"
	// attrKey is the idempotency key the resource was created under, as it
	// carries it: what a Delete checks the real resource against.
	attrKey = "idempotency_key"
)

// Billing modes and their defaults.
const (
	billingPayPerRequest = "PAY_PER_REQUEST"
	billingProvisioned   = "PROVISIONED"
	defaultCapacity      = 5
)

// Where a resource keeps what bulwark needs to recognise it.
const (
	// markerKey is the object a bucket's Create writes its idempotency key to.
	markerKey = ".bulwark/idempotency-key"
	// seedKey is the object a bucket is seeded with.
	seedKey = "seed.txt"
	// tagKey is the tag a table's Create records its idempotency key in.
	tagKey = "bulwark:idempotency-key"
	// seedHash is the hash key of the item a table is seeded with.
	seedHash = "seed"
)

// resourceTypes returns the schema of every type the provider manages; a
// fresh value on every call.
func resourceTypes() []sdk.ResourceType {
	return []sdk.ResourceType{
		{
			Name:        typeBucket,
			Description: "an S3 bucket, seeded with the object seed.txt",
			Attributes: []sdk.Attribute{
				{Name: attrBucket, Type: sdk.TypeString, Required: true, ForceNew: true, Description: "the bucket's name, unique across AWS"},
				{Name: attrARN, Type: sdk.TypeString, Computed: true, Description: "the bucket's ARN"},
				{Name: attrRegion, Type: sdk.TypeString, Computed: true, Description: "the region the bucket lives in"},
				{Name: attrKey, Type: sdk.TypeString, Computed: true, Description: "the idempotency key the bucket was created under (its object .bulwark/idempotency-key)"},
			},
			// A bucket is its name: a renamed bucket can exist beside
			// its old self (the new one is made first); one whose name
			// stays cannot (its old self is deleted first).
			Coexistence: sdk.Coexistence{WhenDiffers: []string{attrBucket}},
		},
		{
			Name:        typeTable,
			Description: `a DynamoDB table with a hash key, seeded with the item whose key is "seed"`,
			Attributes: []sdk.Attribute{
				{Name: attrTable, Type: sdk.TypeString, Required: true, ForceNew: true, Description: "the table's name"},
				{Name: attrHashKey, Type: sdk.TypeString, Required: true, ForceNew: true, Description: "the name of the hash (partition) key"},
				{Name: attrHashKeyType, Type: sdk.TypeString, ForceNew: true, Description: "the hash key's type: S (default), N or B"},
				{Name: attrBillingMode, Type: sdk.TypeString, Description: "PAY_PER_REQUEST (default) or PROVISIONED; updated in place"},
				{Name: attrReadCapacity, Type: sdk.TypeNumber, Description: "read capacity units with PROVISIONED (default 5); updated in place"},
				{Name: attrWriteCapacity, Type: sdk.TypeNumber, Description: "write capacity units with PROVISIONED (default 5); updated in place"},
				{Name: attrARN, Type: sdk.TypeString, Computed: true, Description: "the table's ARN"},
				// Streams are reported, not managed: dynalite, the emulator
				// the provider is tested against, has no streams (it drops a
				// StreamSpecification), so a setting bulwark sent could never
				// be tested. A stream enabled out of band shows here.
				{Name: attrStreamEnabled, Type: sdk.TypeBool, Computed: true, Description: "whether DynamoDB Streams is enabled on the table (as DescribeTable reports; bulwark does not set it)"},
				{Name: attrStreamViewType, Type: sdk.TypeString, Computed: true, Description: `the stream's view type (KEYS_ONLY, NEW_IMAGE, OLD_IMAGE or NEW_AND_OLD_IMAGES); "" when streams are off`},
				{Name: attrStreamARN, Type: sdk.TypeString, Computed: true, Description: `the ARN of the table's latest stream; "" when streams are off`},
				{Name: attrKey, Type: sdk.TypeString, Computed: true, Description: "the idempotency key the table was created under (its tag bulwark:idempotency-key)"},
			},
			// A table is its name, in the provider's region: a renamed
			// table is made before the old one is deleted; a new hash
			// key under the same name deletes the old table first.
			Coexistence: sdk.Coexistence{WhenDiffers: []string{attrTable}},
		},
	}
}

func resourceType(name string) (sdk.ResourceType, error) {
	for _, rt := range resourceTypes() {
		if rt.Name == name {
			return rt, nil
		}
	}
	return sdk.ResourceType{}, sdk.Errorf("unknown resource type %q (the aws provider manages %s and %s)", name, typeBucket, typeTable)
}

// bucketSpec is an s3_bucket's checked config.
type bucketSpec struct {
	name string
}

// tableSpec is a dynamodb_table's checked config, defaults applied.
type tableSpec struct {
	name          string
	hashKey       string
	hashKeyType   string
	billingMode   string
	readCapacity  int64
	writeCapacity int64
}

var (
	bucketNameRe = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$`)
	ipv4Re       = regexp.MustCompile(`^\d+\.\d+\.\d+\.\d+$`)
	tableNameRe  = regexp.MustCompile(`^[a-zA-Z0-9_.-]{3,255}$`)
)

// parseBucket checks an s3_bucket config; the sdk has already checked keys
// and types.
func parseBucket(cfg sdk.Attributes) (bucketSpec, sdk.Diagnostics) {
	name, _ := cfg[attrBucket].(string)
	var ds sdk.Diagnostics
	if msg := checkBucketName(name); msg != "" {
		ds = append(ds, sdk.AttributeErrorf([]string{attrBucket}, "invalid bucket name %q: %s", name, msg))
	}
	return bucketSpec{name: name}, ds
}

// checkBucketName returns why name is not a valid S3 bucket name, or "".
func checkBucketName(name string) string {
	switch {
	case !bucketNameRe.MatchString(name):
		return "3 to 63 lowercase letters, digits, dots and hyphens, starting and ending with a letter or digit"
	case strings.Contains(name, ".."):
		return "two adjacent dots"
	case ipv4Re.MatchString(name):
		return "formatted as an IP address"
	case strings.HasPrefix(name, "xn--"), strings.HasPrefix(name, "sthree-"), strings.HasSuffix(name, "-s3alias"), strings.HasSuffix(name, "--ol-s3"):
		return "a prefix or suffix AWS reserves"
	}
	return ""
}

// parseTable checks a dynamodb_table config and applies the defaults.
func parseTable(cfg sdk.Attributes) (tableSpec, sdk.Diagnostics) {
	var ds sdk.Diagnostics
	t := tableSpec{hashKeyType: "S", billingMode: billingPayPerRequest}
	t.name, _ = cfg[attrTable].(string)
	if !tableNameRe.MatchString(t.name) {
		ds = append(ds, sdk.AttributeErrorf([]string{attrTable}, "invalid table name %q: 3 to 255 letters, digits, '_', '-' and '.'", t.name))
	}
	t.hashKey, _ = cfg[attrHashKey].(string)
	if t.hashKey == "" || len(t.hashKey) > 255 {
		ds = append(ds, sdk.AttributeErrorf([]string{attrHashKey}, "hash_key must be 1 to 255 characters"))
	}
	if v, ok := cfg[attrHashKeyType].(string); ok {
		switch v {
		case "S", "N", "B":
			t.hashKeyType = v
		default:
			ds = append(ds, sdk.AttributeErrorf([]string{attrHashKeyType}, "hash_key_type must be S, N or B, not %q", v))
		}
	}
	if v, ok := cfg[attrBillingMode].(string); ok {
		switch v {
		case billingPayPerRequest, billingProvisioned:
			t.billingMode = v
		default:
			ds = append(ds, sdk.AttributeErrorf([]string{attrBillingMode}, "billing_mode must be %s or %s, not %q", billingPayPerRequest, billingProvisioned, v))
		}
	}
	for _, k := range []string{attrReadCapacity, attrWriteCapacity} {
		v, set := cfg[k]
		if !set || v == nil {
			if t.billingMode == billingProvisioned {
				t.setCapacity(k, defaultCapacity)
			}
			continue
		}
		if t.billingMode != billingProvisioned {
			ds = append(ds, sdk.AttributeErrorf([]string{k}, "%s needs billing_mode %s", k, billingProvisioned))
			continue
		}
		n, ok := wholeNumber(v)
		if !ok || n < 1 || n > 1_000_000 {
			ds = append(ds, sdk.AttributeErrorf([]string{k}, "%s must be a whole number from 1 to 1000000, not %v", k, v))
			continue
		}
		t.setCapacity(k, n)
	}
	return t, ds
}

func (t *tableSpec) setCapacity(k string, n int64) {
	if k == attrReadCapacity {
		t.readCapacity = n
	} else {
		t.writeCapacity = n
	}
}

// wholeNumber accepts a number with no fractional part.
func wholeNumber(v any) (int64, bool) {
	switch n := v.(type) {
	case float64:
		if n != float64(int64(n)) {
			return 0, false
		}
		return int64(n), true
	case int:
		return int64(n), true
	case int64:
		return n, true
	}
	return 0, false
}

// checkForceNew returns one diagnostic per force_new attribute whose value
// changes from prior to cfg: such a change is a replace, never an Update.
// An attribute prior does not record is not compared.
func checkForceNew(rt sdk.ResourceType, prior, cfg sdk.Attributes) sdk.Diagnostics {
	var ds sdk.Diagnostics
	for _, a := range rt.Attributes {
		if !a.ForceNew || a.Computed {
			continue
		}
		p, had := prior[a.Name]
		c, has := cfg[a.Name]
		if !had || !has || p == nil || c == nil {
			continue
		}
		if !reflect.DeepEqual(p, c) {
			ds = append(ds, sdk.AttributeErrorf([]string{a.Name},
				"attribute %q cannot be updated in place (it forces a new resource): %v -> %v", a.Name, p, c))
		}
	}
	return ds
}

// partition returns the AWS partition of a region, for ARNs.
func partition(region string) string {
	switch {
	case strings.HasPrefix(region, "cn-"):
		return "aws-cn"
	case strings.HasPrefix(region, "us-gov-"):
		return "aws-us-gov"
	case strings.HasPrefix(region, "us-iso-"):
		return "aws-iso"
	case strings.HasPrefix(region, "us-isob-"):
		return "aws-iso-b"
	}
	return "aws"
}

// bucketARN is the ARN of an S3 bucket (buckets carry no region or account).
func bucketARN(region, bucket string) string {
	return fmt.Sprintf("arn:%s:s3:::%s", partition(region), bucket)
}
