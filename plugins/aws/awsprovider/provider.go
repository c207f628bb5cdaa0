package awsprovider

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"

	"github.com/bulwark-iac/bulwark/sdk"
)

// maxAttempts is how many times the standard retryer tries a call that
// fails with a throttling or transient error.
const maxAttempts = 5

// Option changes how a provider made by New behaves.
type Option func(*provider)

// WithClock replaces time.Now as the source of the times recorded in the
// private data.
func WithClock(now func() time.Time) Option {
	return func(p *provider) { p.now = now }
}

// New returns the aws provider. Serve it with sdk.Serve, or call it
// in-process.
func New(opts ...Option) sdk.Provider {
	p := &provider{now: time.Now}
	for _, o := range opts {
		o(p)
	}
	return p
}

// provider is the aws provider. Configure sets c once; every other call
// reads it under mu and then works on its own, so the host may call
// concurrently.
type provider struct {
	now func() time.Time

	mu sync.RWMutex
	c  *clients
}

var _ sdk.Provider = (*provider)(nil)

// clients is what Configure builds: the service clients and what the calls
// share.
type clients struct {
	s3      *s3.Client
	ddb     *dynamodb.Client
	region  string
	profile string                  // the profile the config names, or ""
	creds   aws.CredentialsProvider // the SDK's chain, asked only for the name of its source
	timeout time.Duration
	// readOnly: the host will only read in this session (a plan); every
	// call that would write anywhere is refused.
	readOnly bool
	now      func() time.Time
}

// GetSchema returns the two resource types, the provider's own config and
// its capabilities.
func (p *provider) GetSchema(context.Context, *sdk.GetSchemaRequest) (*sdk.GetSchemaResponse, error) {
	return &sdk.GetSchemaResponse{
		ProviderName: Name, ProviderVersion: Version, ResourceTypes: resourceTypes(),
		DataSources: dataSources(),
		// Read reports the key each bucket or table was created under, and
		// a Create never claims one made under another key or none.
		Capabilities:   sdk.Capabilities{IdempotencyKeys: true},
		ProviderConfig: providerConfig(),
	}, nil
}

// Configure checks the provider config and builds the service clients. It
// reaches no AWS endpoint: credentials are resolved, lazily, by the first
// call that needs them.
func (p *provider) Configure(ctx context.Context, req *sdk.ConfigureRequest) (*sdk.ConfigureResponse, error) {
	s, ds := parseSettings(req.Config)
	if ds.HasError() {
		return &sdk.ConfigureResponse{Diagnostics: ds}, nil
	}
	opts := []func(*config.LoadOptions) error{
		config.WithRetryer(func() aws.Retryer {
			return retry.NewStandard(func(o *retry.StandardOptions) { o.MaxAttempts = maxAttempts })
		}),
	}
	if s.region != "" {
		opts = append(opts, config.WithRegion(s.region))
	}
	if s.profile != "" {
		opts = append(opts, config.WithSharedConfigProfile(s.profile))
	}
	lctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	cfg, err := config.LoadDefaultConfig(lctx, opts...)
	if err != nil {
		var missing config.SharedConfigProfileNotExistError
		if errors.As(err, &missing) {
			return &sdk.ConfigureResponse{Diagnostics: sdk.Diagnostics{
				sdk.AttributeErrorf([]string{keyProfile}, "profile %q is not in the shared AWS config or credentials files", s.profile),
			}}, nil
		}
		return nil, fmt.Errorf("load the AWS configuration: %w", err)
	}
	if cfg.Region == "" {
		return &sdk.ConfigureResponse{Diagnostics: sdk.Diagnostics{
			sdk.AttributeErrorf([]string{keyRegion}, "no AWS region: set region in the provider config, AWS_REGION in the environment, or a region in the profile"),
		}}, nil
	}
	s3Endpoint, ddbEndpoint := s.endpointFor(serviceS3), s.endpointFor(serviceDynamoDB)
	c := &clients{
		s3: s3.NewFromConfig(cfg, func(o *s3.Options) {
			if s3Endpoint != "" {
				o.BaseEndpoint = aws.String(s3Endpoint)
			}
			// Any endpoint override (config, AWS_ENDPOINT_URL or
			// AWS_ENDPOINT_URL_S3, resolved by now) is an emulator or a
			// gateway: address buckets in the path, not the host name.
			if o.BaseEndpoint != nil {
				o.UsePathStyle = true
			}
			// Emulators send no checksums: reading the marker must not log a
			// warning each time.
			o.DisableLogOutputChecksumValidationSkipped = true
		}),
		ddb: dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
			if ddbEndpoint != "" {
				o.BaseEndpoint = aws.String(ddbEndpoint)
			}
		}),
		region:   cfg.Region,
		profile:  s.profile,
		creds:    cfg.Credentials,
		timeout:  s.timeout,
		readOnly: req.ReadOnly,
		now:      p.now,
	}
	p.mu.Lock()
	p.c = c
	p.mu.Unlock()
	return &sdk.ConfigureResponse{}, nil
}

// begin returns the clients and the call's context, bounded by the
// configured timeout. A call that writes (what names it) is refused in a
// read-only session.
func (p *provider) begin(ctx context.Context, writes string) (*clients, context.Context, context.CancelFunc, error) {
	p.mu.RLock()
	c := p.c
	p.mu.RUnlock()
	if c == nil {
		return nil, nil, nil, sdk.Errorf("the aws provider is not configured: call Configure first")
	}
	if writes != "" && c.readOnly {
		return nil, nil, nil, sdk.Errorf("%s: the provider was configured read-only (a plan): it writes nothing", writes)
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	return c, ctx, cancel, nil
}

// finish explains an error that rejected credentials or the call's
// deadline caused, and answers one AWS's rate limit caused throttled (see
// asThrottled).
func (c *clients) finish(ctx context.Context, what string, err error) error {
	if err == nil {
		return nil
	}
	if ce := c.asCredentialsError(ctx, err); ce != nil {
		return ce // about no resource in particular: the host names the call
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("%s: timed out after %s (the provider's timeout_seconds): %w", what, c.timeout, err)
	}
	if d, ok := asThrottled(what, err); ok {
		return d
	}
	return err
}

// ValidateResource checks what the schema cannot: names, enumerations and
// combinations.
func (p *provider) ValidateResource(_ context.Context, req *sdk.ValidateResourceRequest) (*sdk.ValidateResourceResponse, error) {
	var ds sdk.Diagnostics
	switch req.Type {
	case typeBucket:
		_, ds = parseBucket(req.Config)
	case typeTable:
		_, ds = parseTable(req.Config)
	default:
		_, err := resourceType(req.Type)
		return nil, err
	}
	return &sdk.ValidateResourceResponse{Diagnostics: ds}, nil
}

// Read finds a resource by id, else by the idempotency key of the Create
// that made it, else by the name in its config.
func (p *provider) Read(ctx context.Context, req *sdk.ReadRequest) (*sdk.ReadResponse, error) {
	c, ctx, cancel, err := p.begin(ctx, "")
	if err != nil {
		return nil, err
	}
	defer cancel()
	var resp *sdk.ReadResponse
	switch req.Type {
	case typeBucket:
		resp, err = c.readBucket(ctx, req)
	case typeTable:
		resp, err = c.readTable(ctx, req)
	default:
		_, err = resourceType(req.Type)
	}
	return resp, c.finish(ctx, "read "+req.Name, err)
}

// Create makes a resource, or returns the one a Create with the same
// idempotency key made.
func (p *provider) Create(ctx context.Context, req *sdk.CreateRequest) (*sdk.CreateResponse, error) {
	if req.IdempotencyKey == "" {
		return nil, sdk.Errorf("create %s: the request carries no idempotency key", req.Name)
	}
	c, ctx, cancel, err := p.begin(ctx, "create "+req.Name)
	if err != nil {
		return nil, err
	}
	defer cancel()
	var resp *sdk.CreateResponse
	switch req.Type {
	case typeBucket:
		resp, err = c.createBucket(ctx, req)
	case typeTable:
		resp, err = c.createTable(ctx, req)
	default:
		_, err = resourceType(req.Type)
	}
	return resp, c.finish(ctx, "create "+req.Name, err)
}

// Update changes what can change in place: a table's billing mode and
// capacity. A bucket has nothing to update; its attributes come back as
// they are.
func (p *provider) Update(ctx context.Context, req *sdk.UpdateRequest) (*sdk.UpdateResponse, error) {
	c, ctx, cancel, err := p.begin(ctx, "update "+req.Name)
	if err != nil {
		return nil, err
	}
	defer cancel()
	rt, err := resourceType(req.Type)
	if err != nil {
		return nil, err
	}
	if ds := checkForceNew(rt, req.PriorAttributes, req.Config); ds.HasError() {
		return &sdk.UpdateResponse{Diagnostics: ds}, nil
	}
	var resp *sdk.UpdateResponse
	switch req.Type {
	case typeBucket:
		resp, err = c.updateBucket(ctx, req)
	case typeTable:
		resp, err = c.updateTable(ctx, req)
	}
	return resp, c.finish(ctx, "update "+req.Name, err)
}

// Delete removes a resource (a bucket with everything in it); deleting what
// is gone succeeds.
func (p *provider) Delete(ctx context.Context, req *sdk.DeleteRequest) (*sdk.DeleteResponse, error) {
	if req.Protection == sdk.ProtectionProtected {
		// sdk.Serve refuses this first; an in-process caller meets it here.
		return nil, sdk.ErrProtectedDelete(req.Type, req.Name)
	}
	c, ctx, cancel, err := p.begin(ctx, "delete "+req.Name)
	if err != nil {
		return nil, err
	}
	defer cancel()
	switch req.Type {
	case typeBucket:
		err = c.deleteBucket(ctx, req)
	case typeTable:
		err = c.deleteTable(ctx, req)
	default:
		_, err = resourceType(req.Type)
	}
	if err != nil {
		return nil, c.finish(ctx, "delete "+req.Name, err)
	}
	return &sdk.DeleteResponse{}, nil
}

// apiCode returns the API error code err carries ("NoSuchBucket",
// "ResourceNotFoundException", …), or "". Codes, not Go types: S3 returns
// several errors untyped.
func apiCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

// remaining is how long a waiter may wait: what is left of ctx's deadline.
func remaining(ctx context.Context, fallback time.Duration) time.Duration {
	if d, ok := ctx.Deadline(); ok {
		if left := time.Until(d); left > 0 {
			return left
		}
		return time.Millisecond
	}
	return fallback
}

// idName returns the resource's name from the request's id, else from its
// attributes or config under attr.
func idName(id string, attr string, maps ...sdk.Attributes) string {
	if id != "" {
		return id
	}
	for _, m := range maps {
		if s, ok := m[attr].(string); ok && s != "" {
			return s
		}
	}
	return ""
}
