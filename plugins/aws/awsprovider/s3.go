package awsprovider

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/bulwark-iac/bulwark/sdk"
)

// errBucketGone is what emptying a bucket that no longer exists returns.
var errBucketGone = errors.New("the bucket does not exist")

// maxDeleteRounds bounds how often Delete empties a bucket and tries again
// when something writes to it meanwhile.
const maxDeleteRounds = 5

// bucketAttrs are a bucket's attributes; key, the idempotency key it was
// created under, only when it carries one.
func (c *clients) bucketAttrs(name, region, key string) sdk.Attributes {
	if region == "" {
		region = c.region
	}
	a := sdk.Attributes{attrBucket: name, attrARN: bucketARN(region, name), attrRegion: region}
	if key != "" {
		a[attrKey] = key
	}
	return a
}

// headBucket says whether the bucket exists (and is ours to see), and in
// which region.
func (c *clients) headBucket(ctx context.Context, name string) (bool, string, error) {
	out, err := c.s3.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(name)})
	if err == nil {
		return true, aws.ToString(out.BucketRegion), nil
	}
	switch apiCode(err) {
	case "NotFound", "NoSuchBucket":
		return false, "", nil
	case "Forbidden", "AccessDenied":
		// A HEAD answer has no body: ask a call whose answer carries a code.
		exists, err := c.whyForbidden(ctx, name, err)
		return exists, "", err
	case "MovedPermanently", "PermanentRedirect", "301":
		return false, "", sdk.AttributeErrorf([]string{attrBucket},
			"bucket %q lives in another region than %s: set the provider's region to the bucket's", name, c.region)
	}
	return false, "", fmt.Errorf("HeadBucket %s: %w", name, err)
}

// bucketMarker returns the idempotency key recorded in the bucket, if any.
func (c *clients) bucketMarker(ctx context.Context, name string) (string, bool, error) {
	out, err := c.s3.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(name), Key: aws.String(markerKey)})
	if err != nil {
		switch apiCode(err) {
		case "NoSuchKey", "NotFound", "NoSuchBucket":
			return "", false, nil
		}
		return "", false, fmt.Errorf("read %s in bucket %s: %w", markerKey, name, err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(io.LimitReader(out.Body, 4096))
	if err != nil {
		return "", false, fmt.Errorf("read %s in bucket %s: %w", markerKey, name, err)
	}
	return strings.TrimSpace(string(b)), true, nil
}

func (c *clients) readBucket(ctx context.Context, req *sdk.ReadRequest) (*sdk.ReadResponse, error) {
	name := req.ID
	if name == "" && req.IdempotencyKey != "" {
		return c.readBucketByKey(ctx, req)
	}
	if name == "" {
		name, _ = req.Config[attrBucket].(string)
	}
	if name == "" {
		return nil, sdk.Errorf("read %s: the request has neither an id nor a bucket name", req.Name)
	}
	if checkBucketName(name) != "" {
		// No such bucket can exist.
		return &sdk.ReadResponse{Exists: false}, nil
	}
	exists, region, err := c.headBucket(ctx, name)
	if err != nil || !exists {
		return &sdk.ReadResponse{Exists: false}, err
	}
	key, err := c.bucketKey(ctx, name)
	if err != nil {
		return nil, err
	}
	return &sdk.ReadResponse{Exists: true, ID: name, Attributes: c.bucketAttrs(name, region, key), IdempotencyKey: key}, nil
}

// readBucketByKey finds the bucket a Create under the request's key made:
// the one its config names, and only when that bucket carries the key.
func (c *clients) readBucketByKey(ctx context.Context, req *sdk.ReadRequest) (*sdk.ReadResponse, error) {
	name, _ := req.Config[attrBucket].(string)
	if r, ok := parseRecord(req.Private, typeBucket); ok && r.Key == req.IdempotencyKey {
		name = r.Name
	}
	if name == "" || checkBucketName(name) != "" {
		return &sdk.ReadResponse{Exists: false}, nil
	}
	exists, region, err := c.headBucket(ctx, name)
	if err != nil || !exists {
		return &sdk.ReadResponse{Exists: false}, err
	}
	got, err := c.bucketKey(ctx, name)
	if err != nil {
		return nil, err
	}
	if got == "" || got != req.IdempotencyKey && got != tagValue(req.IdempotencyKey) {
		return &sdk.ReadResponse{Exists: false}, nil
	}
	return &sdk.ReadResponse{Exists: true, ID: name, Attributes: c.bucketAttrs(name, region, req.IdempotencyKey), IdempotencyKey: req.IdempotencyKey,
		Private: record{Type: typeBucket, Name: name, Region: region, Key: req.IdempotencyKey, Created: c.now().UTC()}.private()}, nil
}

// bucketTag returns the idempotency key a bucket carries as the tag given
// at its CreateBucket ("" when it carries none, or the endpoint keeps no
// bucket tags, or these credentials may not read them: then the tag proves
// nothing and the marker object decides).
func (c *clients) bucketTag(ctx context.Context, name string) (string, error) {
	out, err := c.s3.GetBucketTagging(ctx, &s3.GetBucketTaggingInput{Bucket: aws.String(name)})
	if err != nil {
		switch apiCode(err) {
		case "NoSuchTagSet", "NoSuchTagSetError", "NoSuchBucket", "NotFound", "AccessDenied":
			return "", nil
		}
		if unsupported(err) {
			return "", nil
		}
		return "", fmt.Errorf("GetBucketTagging %s: %w", name, err)
	}
	for _, t := range out.TagSet {
		if aws.ToString(t.Key) == tagKey {
			return aws.ToString(t.Value), nil
		}
	}
	return "", nil
}

// bucketKey is the idempotency key a bucket carries: the marker object's,
// else its creation tag's (tagValue of the key), else "".
func (c *clients) bucketKey(ctx context.Context, name string) (string, error) {
	marker, has, err := c.bucketMarker(ctx, name)
	if err != nil || has {
		return marker, err
	}
	return c.bucketTag(ctx, name)
}

// makeBucket calls CreateBucket with the key as a tag, so that on AWS the
// bucket carries it from its first instant. An endpoint or a policy that
// refuses tags at creation (no s3:TagResource, an S3-compatible server
// without them) gets a CreateBucket without: the marker object is then the
// only mark.
func (c *clients) makeBucket(ctx context.Context, name, key string) error {
	conf := &types.CreateBucketConfiguration{Tags: []types.Tag{{Key: aws.String(tagKey), Value: aws.String(tagValue(key))}}}
	if c.region != "us-east-1" {
		conf.LocationConstraint = types.BucketLocationConstraint(c.region)
	}
	_, err := c.s3.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name), CreateBucketConfiguration: conf})
	switch apiCode(err) {
	case "AccessDenied", "InvalidArgument", "MalformedXML", "InvalidTag", "NotImplemented":
		conf.Tags = nil
		if conf.LocationConstraint == "" {
			conf = nil
		}
		_, err = c.s3.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name), CreateBucketConfiguration: conf})
	}
	return err
}

// createBucket makes the bucket, marks it with the key and seeds it. A
// bucket that exists already is this Create's only when it carries the key
// (the marker object, or the tag its CreateBucket was given: a Create that
// died before writing the marker). Any other is a conflict: it is never
// marked, seeded or otherwise touched.
func (c *clients) createBucket(ctx context.Context, req *sdk.CreateRequest) (*sdk.CreateResponse, error) {
	spec, ds := parseBucket(req.Config)
	if ds.HasError() {
		return &sdk.CreateResponse{Diagnostics: ds}, nil
	}
	name := spec.name

	// Look before creating: in us-east-1 AWS answers 200 to a CreateBucket
	// of a bucket the account already owns, so only a look first tells a
	// bucket someone made out of band from one made now.
	exists, _, err := c.headBucket(ctx, name)
	if d, ok := deniedConflict(err); ok {
		return &sdk.CreateResponse{Diagnostics: sdk.Diagnostics{d}}, nil
	}
	if err != nil {
		return nil, err
	}
	if exists {
		return c.claimBucket(ctx, req, name)
	}
	if err := c.makeBucket(ctx, name, req.IdempotencyKey); err != nil {
		switch apiCode(err) {
		case "BucketAlreadyOwnedByYou", "BucketAlreadyExists":
			// Made meanwhile, by someone else (another account, when
			// HeadBucket is denied) or by an earlier attempt under this key.
			exists, _, herr := c.headBucket(ctx, name)
			if d, ok := deniedConflict(herr); ok {
				return &sdk.CreateResponse{Diagnostics: sdk.Diagnostics{d}}, nil
			}
			if herr != nil {
				return nil, herr
			}
			if !exists {
				return &sdk.CreateResponse{Diagnostics: sdk.Diagnostics{withPath(conflict(
					fmt.Sprintf("bucket name %q is taken (%s) by a bucket these credentials cannot see: bulwark does not claim it", name, apiCode(err)), ""), attrBucket)}}, nil
			}
			return c.claimBucket(ctx, req, name)
		}
		return nil, fmt.Errorf("CreateBucket %s: %w", name, err)
	}
	return c.markBucket(ctx, req, name)
}

// claimBucket decides whether an existing bucket is this Create's: only
// when it carries the Create's key, as its marker or as its creation tag.
// Else it is a conflict, and the bucket is left as it is.
func (c *clients) claimBucket(ctx context.Context, req *sdk.CreateRequest, name string) (*sdk.CreateResponse, error) {
	marker, has, err := c.bucketMarker(ctx, name)
	if err != nil {
		return nil, err
	}
	switch {
	case has && marker == req.IdempotencyKey:
		// A retried Create: what the first made.
	case has:
		return &sdk.CreateResponse{Diagnostics: sdk.Diagnostics{withPath(conflict(
			fmt.Sprintf("bucket %q already exists, created under another idempotency key: bulwark does not claim it", name), marker), attrBucket)}}, nil
	default:
		tag, err := c.bucketTag(ctx, name)
		if err != nil {
			return nil, err
		}
		switch tag {
		case tagValue(req.IdempotencyKey):
			// Made by a Create under this key that died before its marker.
		case "":
			return &sdk.CreateResponse{Diagnostics: sdk.Diagnostics{withPath(conflict(
				fmt.Sprintf("bucket %q already exists and carries no idempotency key: bulwark did not create it, or a create of it was killed before it could mark it on an endpoint that keeps no tags given at creation; bulwark does not claim it (if it is this stack's, `bulwark import` takes it over)", name), ""), attrBucket)}}, nil
		default:
			return &sdk.CreateResponse{Diagnostics: sdk.Diagnostics{withPath(conflict(
				fmt.Sprintf("bucket %q already exists, created under another idempotency key: bulwark does not claim it", name), tag), attrBucket)}}, nil
		}
	}
	return c.markBucket(ctx, req, name)
}

// markBucket writes the Create's key into a bucket that is its own (unless
// it is there already), seeds it, and returns it with its private data.
func (c *clients) markBucket(ctx context.Context, req *sdk.CreateRequest, name string) (*sdk.CreateResponse, error) {
	key := req.IdempotencyKey
	marker, has, err := c.bucketMarker(ctx, name)
	if err != nil {
		return nil, err
	}
	if has && marker != key {
		// Marked by another Create between our CreateBucket and now.
		return &sdk.CreateResponse{Diagnostics: sdk.Diagnostics{withPath(conflict(
			fmt.Sprintf("bucket %q was claimed by another create (idempotency key %s) while this one made it", name, marker), marker), attrBucket)}}, nil
	}
	if !has {
		if _, err := c.s3.PutObject(ctx, &s3.PutObjectInput{
			Bucket: aws.String(name), Key: aws.String(markerKey),
			Body: strings.NewReader(key + "\n"), ContentType: aws.String("text/plain"),
		}); err != nil {
			return nil, fmt.Errorf("mark bucket %s with its idempotency key: %w", name, err)
		}
	}
	if err := c.seedBucket(ctx, name, req.Name); err != nil {
		return nil, err
	}
	return &sdk.CreateResponse{ID: name, Attributes: c.bucketAttrs(name, c.region, key),
		Private: record{Type: typeBucket, Name: name, Region: c.region, Key: key, Created: c.now().UTC()}.private()}, nil
}

// deniedConflict turns a bucket these credentials may not look into into
// a conflict diagnostic: its name is taken by someone bulwark cannot see.
func deniedConflict(err error) (sdk.Diagnostic, bool) {
	var de *DeniedError
	if !errors.As(err, &de) {
		return sdk.Diagnostic{}, false
	}
	return withPath(conflict(de.Error()+": bulwark does not claim it", ""), attrBucket), true
}

// seedBucket writes seed.txt unless it is there already.
func (c *clients) seedBucket(ctx context.Context, bucket, resource string) error {
	_, err := c.s3.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(seedKey)})
	if err == nil {
		return nil
	}
	if code := apiCode(err); code != "NotFound" && code != "NoSuchKey" {
		return fmt.Errorf("look for %s in bucket %s: %w", seedKey, bucket, err)
	}
	body := fmt.Sprintf("seeded by bulwark when it created %s (s3_bucket %s)\n", resource, bucket)
	if _, err := c.s3.PutObject(ctx, &s3.PutObjectInput{
		Bucket: aws.String(bucket), Key: aws.String(seedKey),
		Body: strings.NewReader(body), ContentType: aws.String("text/plain"),
	}); err != nil {
		return fmt.Errorf("seed bucket %s: %w", bucket, err)
	}
	return nil
}

// updateBucket has nothing to change in place: it returns the bucket as it
// is.
func (c *clients) updateBucket(ctx context.Context, req *sdk.UpdateRequest) (*sdk.UpdateResponse, error) {
	name := idName(req.ID, attrBucket, req.Config, req.PriorAttributes)
	exists, region, err := c.headBucket(ctx, name)
	if err != nil {
		return nil, err
	}
	if !exists {
		return nil, sdk.Errorf("update %s: bucket %q does not exist", req.Name, name)
	}
	key, _, err := c.bucketMarker(ctx, name)
	if err != nil {
		return nil, err
	}
	return &sdk.UpdateResponse{Attributes: c.bucketAttrs(name, region, key)}, nil
}

// deleteBucket empties the bucket, then deletes it, and waits until it is
// gone. A bucket that is gone already is success.
func (c *clients) deleteBucket(ctx context.Context, req *sdk.DeleteRequest) error {
	name := idName(req.ID, attrBucket, req.Attributes)
	if name == "" {
		return sdk.Errorf("delete %s: the request names no bucket", req.Name)
	}
	if carried := carriedKey(req.Private, typeBucket, req.Attributes); carried != "" {
		// Defence in depth: the bucket at this name must be the one this
		// resource was created as. One made again by someone else after
		// ours went (it carries another key, or none) is never emptied.
		exists, _, err := c.headBucket(ctx, name)
		if err != nil {
			return err
		}
		if !exists {
			return nil
		}
		got, err := c.bucketKey(ctx, name)
		if err != nil {
			return err
		}
		if got != carried && (got == "" || got != tagValue(carried)) {
			return notOurs("bucket", name, carried, got)
		}
	}
	for round := 1; ; round++ {
		err := c.emptyBucket(ctx, name)
		if errors.Is(err, errBucketGone) {
			break
		}
		if err != nil {
			return err
		}
		_, err = c.s3.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(name)})
		if err == nil || apiCode(err) == "NoSuchBucket" {
			break
		}
		if apiCode(err) == "BucketNotEmpty" && round < maxDeleteRounds {
			continue // written to meanwhile: empty it again
		}
		return fmt.Errorf("DeleteBucket %s: %w", name, err)
	}
	w := s3.NewBucketNotExistsWaiter(c.s3, func(o *s3.BucketNotExistsWaiterOptions) {
		o.MinDelay, o.MaxDelay = 100*time.Millisecond, 2*time.Second
	})
	if err := w.Wait(ctx, &s3.HeadBucketInput{Bucket: aws.String(name)}, remaining(ctx, c.timeout)); err != nil {
		return fmt.Errorf("wait for bucket %s to be gone: %w", name, err)
	}
	return nil
}

// unsupported reports whether err says the endpoint does not implement the
// call (an emulator, a gateway).
func unsupported(err error) bool {
	switch apiCode(err) {
	case "NotImplemented", "MethodNotAllowed", "NotSupported", "UnsupportedOperation":
		return true
	}
	return false
}

// emptyBucket deletes every object in the bucket, and every version and
// delete marker when versioning is or was on.
func (c *clients) emptyBucket(ctx context.Context, name string) error {
	v, err := c.s3.GetBucketVersioning(ctx, &s3.GetBucketVersioningInput{Bucket: aws.String(name)})
	switch {
	case err == nil:
	case apiCode(err) == "NoSuchBucket":
		return errBucketGone
	case unsupported(err):
		v = &s3.GetBucketVersioningOutput{} // no versioning to deal with
	default:
		return fmt.Errorf("GetBucketVersioning %s: %w", name, err)
	}
	if v.Status != "" {
		err := c.deleteVersions(ctx, name)
		switch {
		case err == nil, unsupported(err):
			// Done, or the endpoint lists no versions: the plain listing
			// below removes what it can see.
		case apiCode(err) == "NoSuchBucket":
			return errBucketGone
		default:
			return err
		}
	}
	return c.deleteObjects(ctx, name)
}

// deleteObjects lists the bucket from the start and deletes what it finds,
// a page at a time, until the listing is empty.
func (c *clients) deleteObjects(ctx context.Context, name string) error {
	var last string
	for {
		out, err := c.s3.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(name), MaxKeys: aws.Int32(1000)})
		if apiCode(err) == "NoSuchBucket" {
			return errBucketGone
		}
		if err != nil {
			return fmt.Errorf("ListObjectsV2 %s: %w", name, err)
		}
		if len(out.Contents) == 0 {
			return nil
		}
		ids := make([]types.ObjectIdentifier, 0, len(out.Contents))
		for _, o := range out.Contents {
			ids = append(ids, types.ObjectIdentifier{Key: o.Key})
		}
		if err := stuck(name, &last, ids[0]); err != nil {
			return err
		}
		if err := c.deleteBatch(ctx, name, ids); err != nil {
			return err
		}
	}
}

// deleteVersions deletes every object version and delete marker, a page at
// a time, until the listing is empty.
func (c *clients) deleteVersions(ctx context.Context, name string) error {
	var last string
	for {
		out, err := c.s3.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: aws.String(name), MaxKeys: aws.Int32(1000)})
		if err != nil {
			return fmt.Errorf("ListObjectVersions %s: %w", name, err)
		}
		ids := make([]types.ObjectIdentifier, 0, len(out.Versions)+len(out.DeleteMarkers))
		for _, o := range out.Versions {
			ids = append(ids, types.ObjectIdentifier{Key: o.Key, VersionId: o.VersionId})
		}
		for _, o := range out.DeleteMarkers {
			ids = append(ids, types.ObjectIdentifier{Key: o.Key, VersionId: o.VersionId})
		}
		if len(ids) == 0 {
			return nil
		}
		if err := stuck(name, &last, ids[0]); err != nil {
			return err
		}
		if err := c.deleteBatch(ctx, name, ids); err != nil {
			return err
		}
	}
}

// stuck fails when a listing starts with the object the previous round
// deleted: the endpoint said it deleted it, yet still lists it.
func stuck(bucket string, last *string, first types.ObjectIdentifier) error {
	id := aws.ToString(first.Key) + "\x00" + aws.ToString(first.VersionId)
	if id == *last {
		return fmt.Errorf("empty bucket %s: %q is still listed after it was deleted", bucket, aws.ToString(first.Key))
	}
	*last = id
	return nil
}

// deleteBatch deletes up to 1000 objects in one call; any object it could
// not delete makes it fail.
func (c *clients) deleteBatch(ctx context.Context, name string, ids []types.ObjectIdentifier) error {
	out, err := c.s3.DeleteObjects(ctx, &s3.DeleteObjectsInput{
		Bucket: aws.String(name),
		Delete: &types.Delete{Objects: ids, Quiet: aws.Bool(true)},
	})
	if err != nil {
		return fmt.Errorf("DeleteObjects %s: %w", name, err)
	}
	if len(out.Errors) > 0 {
		e := out.Errors[0]
		return fmt.Errorf("DeleteObjects %s: %d object(s) not deleted, first %q: %s %s",
			name, len(out.Errors), aws.ToString(e.Key), aws.ToString(e.Code), aws.ToString(e.Message))
	}
	return nil
}
