package awsprovider

import (
	"context"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/bulwark-iac/bulwark/sdk"
)

// Claims (docs/architecture.md, "Claims"): an import stamps the importing
// stack's key on the resource where its Create puts one (a bucket's marker
// object .bulwark/idempotency-key, a table's tag bulwark:idempotency-key),
// and a forget's Release leaves sdk.ReleasedKey of it there. A bucket's
// creation tag is left as it is: the marker decides while it exists (see
// bucketKey), so a marker deleted by hand brings back the creation tag's
// claim, never fewer claims than there were.

var (
	_ sdk.Importer = (*provider)(nil)
	_ sdk.Releaser = (*provider)(nil)
)

// Import reads a bucket or table by id (its name) for the host to take
// over and, when the request carries a claim key, stamps it (see above):
// only on one that carries no key, a released one, the claim itself or the
// key the host says it replaces. Anything else is a conflict, and the
// resource is left as it is.
func (p *provider) Import(ctx context.Context, req *sdk.ImportRequest) (*sdk.ImportResponse, error) {
	writes := ""
	if req.ClaimKey != "" {
		writes = "import " + req.Name
	}
	c, ctx, cancel, err := p.begin(ctx, writes)
	if err != nil {
		return nil, err
	}
	defer cancel()
	var resp *sdk.ImportResponse
	switch req.Type {
	case typeBucket:
		resp, err = c.importBucket(ctx, req)
	case typeTable:
		resp, err = c.importTable(ctx, req)
	default:
		_, err = resourceType(req.Type)
	}
	return resp, c.finish(ctx, "import "+req.Name, err)
}

// Release gives up the claim req.Key on the bucket or table req.ID: from
// then on it carries sdk.ReleasedKey(req.Key). One that is gone, or already
// released under that key, is released; one that carries another key is a
// conflict, left as it is.
func (p *provider) Release(ctx context.Context, req *sdk.ReleaseRequest) (*sdk.ReleaseResponse, error) {
	c, ctx, cancel, err := p.begin(ctx, "release "+req.Name)
	if err != nil {
		return nil, err
	}
	defer cancel()
	switch req.Type {
	case typeBucket:
		err = c.releaseBucket(ctx, req)
	case typeTable:
		err = c.releaseTable(ctx, req)
	default:
		_, err = resourceType(req.Type)
	}
	if err != nil {
		return nil, c.finish(ctx, "release "+req.Name, err)
	}
	return &sdk.ReleaseResponse{Released: true}, nil
}

// claimable is sdk.Claimable for a key as a resource carries it (a table's
// tag holds tagValue of it).
func claimable(current, claim, replaces string, carried func(string) string) bool {
	if replaces != "" && current == carried(replaces) {
		return true
	}
	return sdk.Claimable(current, carried(claim), "")
}

func claimConflict(req *sdk.ImportRequest, kind, name, current string) error {
	return sdk.Conflict(fmt.Sprintf("import %s: %s %q is claimed by another stack or import: bulwark does not stamp a second claim on it", req.Name, kind, name), current)
}

func (c *clients) importBucket(ctx context.Context, req *sdk.ImportRequest) (*sdk.ImportResponse, error) {
	read, err := c.readBucket(ctx, &sdk.ReadRequest{Type: req.Type, Name: req.Name, ID: req.ID, Config: req.Config})
	if err != nil || !read.Exists || req.ClaimKey == "" {
		return imported(read, false), err
	}
	name := read.ID
	if !claimable(read.IdempotencyKey, req.ClaimKey, req.ReplacesKey, func(k string) string { return k }) {
		return nil, claimConflict(req, "bucket", name, read.IdempotencyKey)
	}
	if err := c.putMarker(ctx, name, req.ClaimKey); err != nil {
		return nil, err
	}
	region, _ := read.Attributes[attrRegion].(string)
	return &sdk.ImportResponse{Exists: true, ID: name, Attributes: c.bucketAttrs(name, region, req.ClaimKey), IdempotencyKey: req.ClaimKey, Claimed: true,
		Private: record{Type: typeBucket, Name: name, Region: region, Key: req.ClaimKey, Created: c.now().UTC()}.private()}, nil
}

func (c *clients) releaseBucket(ctx context.Context, req *sdk.ReleaseRequest) error {
	exists, _, err := c.headBucket(ctx, req.ID)
	if err != nil || !exists {
		return err
	}
	got, err := c.bucketKey(ctx, req.ID)
	switch {
	case err != nil:
		return err
	case got == sdk.ReleasedKey(req.Key):
		return nil
	case got != req.Key && got != tagValue(req.Key):
		return sdk.Conflict(fmt.Sprintf("release %s: bucket %q does not carry the claim %s", req.Name, req.ID, req.Key), got)
	}
	return c.putMarker(ctx, req.ID, sdk.ReleasedKey(req.Key))
}

// putMarker writes key as the bucket's marker object.
func (c *clients) putMarker(ctx context.Context, name, key string) error {
	if _, err := c.s3.PutObject(ctx, &s3.PutObjectInput{
		Bucket: aws.String(name), Key: aws.String(markerKey),
		Body: strings.NewReader(key + "\n"), ContentType: aws.String("text/plain"),
	}); err != nil {
		return fmt.Errorf("mark bucket %s with the key %s: %w", name, key, err)
	}
	return nil
}

func (c *clients) importTable(ctx context.Context, req *sdk.ImportRequest) (*sdk.ImportResponse, error) {
	read, err := c.readTable(ctx, &sdk.ReadRequest{Type: req.Type, Name: req.Name, ID: req.ID, Config: req.Config})
	if err != nil || !read.Exists || req.ClaimKey == "" {
		return imported(read, false), err
	}
	name := read.ID
	if !claimable(read.IdempotencyKey, req.ClaimKey, req.ReplacesKey, tagValue) {
		return nil, claimConflict(req, "table", name, read.IdempotencyKey)
	}
	t, err := c.tagTable(ctx, name, req.ClaimKey)
	if err != nil {
		return nil, err
	}
	key := tagValue(req.ClaimKey)
	return &sdk.ImportResponse{Exists: true, ID: name, Attributes: tableAttrs(t, key), IdempotencyKey: key, Claimed: true,
		Private: record{Type: typeTable, Name: name, Region: c.region, Key: req.ClaimKey, Created: c.now().UTC()}.private()}, nil
}

func (c *clients) releaseTable(ctx context.Context, req *sdk.ReleaseRequest) error {
	t, err := c.describeTable(ctx, req.ID)
	if err != nil || t == nil {
		return err
	}
	got, err := c.tableKey(ctx, aws.ToString(t.TableArn))
	switch {
	case err != nil:
		return err
	case got == tagValue(sdk.ReleasedKey(req.Key)):
		return nil
	case got != tagValue(req.Key):
		return sdk.Conflict(fmt.Sprintf("release %s: table %q does not carry the claim %s", req.Name, req.ID, req.Key), got)
	}
	_, err = c.tagTable(ctx, req.ID, sdk.ReleasedKey(req.Key))
	return err
}

// tagTable sets the table's key tag to tagValue(key), and returns the
// table.
func (c *clients) tagTable(ctx context.Context, name, key string) (*types.TableDescription, error) {
	if err := c.waitActive(ctx, name); err != nil {
		return nil, err
	}
	t, err := c.describeTable(ctx, name)
	if err != nil {
		return nil, err
	}
	if t == nil {
		return nil, sdk.Errorf("table %q is gone", name)
	}
	if _, err := c.ddb.TagResource(ctx, &dynamodb.TagResourceInput{
		ResourceArn: t.TableArn,
		Tags:        []types.Tag{{Key: aws.String(tagKey), Value: aws.String(tagValue(key))}},
	}); err != nil {
		return nil, fmt.Errorf("tag table %s with the key %s: %w", name, key, err)
	}
	return t, nil
}

// imported is a Read's answer as an Import's.
func imported(r *sdk.ReadResponse, claimed bool) *sdk.ImportResponse {
	if r == nil {
		return nil
	}
	return &sdk.ImportResponse{Exists: r.Exists, ID: r.ID, Attributes: r.Attributes, IdempotencyKey: r.IdempotencyKey, Private: r.Private, Claimed: claimed, Diagnostics: r.Diagnostics}
}
