package awsprovider

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bulwark-iac/bulwark/sdk"
)

// Waiter delays: the SDK's defaults start at 20 s, far longer than a table
// takes on an emulator and often on AWS.
const (
	waitMinDelay = 100 * time.Millisecond
	waitMaxDelay = 5 * time.Second
)

// tagValueRe is what DynamoDB accepts as a tag value.
var tagValueRe = regexp.MustCompile(`^[\p{L}\p{Z}\p{N}_.:/=+\-@]{0,256}$`)

// tagValue is how an idempotency key is written into the table's tag: as
// is when DynamoDB accepts it, else its SHA-256.
func tagValue(key string) string {
	if tagValueRe.MatchString(key) {
		return key
	}
	sum := sha256.Sum256([]byte(key))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// describeTable returns the table, or nil when it does not exist or is
// being deleted.
func (c *clients) describeTable(ctx context.Context, name string) (*types.TableDescription, error) {
	out, err := c.ddb.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
	if apiCode(err) == "ResourceNotFoundException" {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("DescribeTable %s: %w", name, err)
	}
	if out.Table == nil || out.Table.TableStatus == types.TableStatusDeleting {
		return nil, nil
	}
	return out.Table, nil
}

// tableAttrs returns a table's attributes as the schema names them; key,
// the idempotency key it was created under, only when it carries one.
func tableAttrs(t *types.TableDescription, key string) sdk.Attributes {
	a := sdk.Attributes{attrTable: aws.ToString(t.TableName), attrARN: aws.ToString(t.TableArn)}
	if key != "" {
		a[attrKey] = key
	}
	for _, k := range t.KeySchema {
		if k.KeyType == types.KeyTypeHash {
			a[attrHashKey] = aws.ToString(k.AttributeName)
		}
	}
	for _, d := range t.AttributeDefinitions {
		if aws.ToString(d.AttributeName) == a[attrHashKey] {
			a[attrHashKeyType] = string(d.AttributeType)
		}
	}
	mode := billingProvisioned // what a table that never switched reports: no summary
	if t.BillingModeSummary != nil && t.BillingModeSummary.BillingMode != "" {
		mode = string(t.BillingModeSummary.BillingMode)
	}
	a[attrBillingMode] = mode
	// Streams as DescribeTable reports them. A disabled stream's ARN stays
	// in LatestStreamArn for a day (its records can still be read): it is
	// not the table's stream, so it is reported as "".
	a[attrStreamEnabled], a[attrStreamViewType], a[attrStreamARN] = false, "", ""
	if s := t.StreamSpecification; s != nil && aws.ToBool(s.StreamEnabled) {
		a[attrStreamEnabled] = true
		a[attrStreamViewType] = string(s.StreamViewType)
		a[attrStreamARN] = aws.ToString(t.LatestStreamArn)
	}
	if mode == billingProvisioned && t.ProvisionedThroughput != nil {
		a[attrReadCapacity] = float64(aws.ToInt64(t.ProvisionedThroughput.ReadCapacityUnits))
		a[attrWriteCapacity] = float64(aws.ToInt64(t.ProvisionedThroughput.WriteCapacityUnits))
	}
	return a
}

// tableKey returns the idempotency key tag the table carries, or "".
func (c *clients) tableKey(ctx context.Context, arn string) (string, error) {
	in := &dynamodb.ListTagsOfResourceInput{ResourceArn: aws.String(arn)}
	for {
		out, err := c.ddb.ListTagsOfResource(ctx, in)
		if err != nil {
			return "", fmt.Errorf("ListTagsOfResource %s: %w", arn, err)
		}
		for _, t := range out.Tags {
			if aws.ToString(t.Key) == tagKey {
				return aws.ToString(t.Value), nil
			}
		}
		if out.NextToken == nil {
			return "", nil
		}
		in.NextToken = out.NextToken
	}
}

func (c *clients) readTable(ctx context.Context, req *sdk.ReadRequest) (*sdk.ReadResponse, error) {
	name := req.ID
	if name == "" && req.IdempotencyKey != "" {
		return c.readTableByKey(ctx, req)
	}
	if name == "" {
		name, _ = req.Config[attrTable].(string)
	}
	if name == "" {
		return nil, sdk.Errorf("read %s: the request has neither an id nor a table name", req.Name)
	}
	if !tableNameRe.MatchString(name) {
		return &sdk.ReadResponse{Exists: false}, nil
	}
	t, err := c.describeTable(ctx, name)
	if err != nil || t == nil {
		return &sdk.ReadResponse{Exists: false}, err
	}
	key, err := c.tableKey(ctx, aws.ToString(t.TableArn))
	if err != nil {
		return nil, err
	}
	return &sdk.ReadResponse{Exists: true, ID: name, Attributes: tableAttrs(t, key), IdempotencyKey: key}, nil
}

// readTableByKey finds the table a Create under the request's key made: the
// one its config names, and only when it carries the key.
func (c *clients) readTableByKey(ctx context.Context, req *sdk.ReadRequest) (*sdk.ReadResponse, error) {
	name, _ := req.Config[attrTable].(string)
	if r, ok := parseRecord(req.Private, typeTable); ok && r.Key == req.IdempotencyKey {
		name = r.Name
	}
	if !tableNameRe.MatchString(name) {
		return &sdk.ReadResponse{Exists: false}, nil
	}
	t, err := c.describeTable(ctx, name)
	if err != nil || t == nil {
		return &sdk.ReadResponse{Exists: false}, err
	}
	got, err := c.tableKey(ctx, aws.ToString(t.TableArn))
	if err != nil {
		return nil, err
	}
	if got != tagValue(req.IdempotencyKey) {
		return &sdk.ReadResponse{Exists: false}, nil
	}
	return &sdk.ReadResponse{Exists: true, ID: name, Attributes: tableAttrs(t, got), IdempotencyKey: got,
		Private: record{Type: typeTable, Name: name, Region: c.region, Key: req.IdempotencyKey, Created: c.now().UTC()}.private()}, nil
}

// waitActive waits until the table is ACTIVE.
func (c *clients) waitActive(ctx context.Context, name string) error {
	w := dynamodb.NewTableExistsWaiter(c.ddb, func(o *dynamodb.TableExistsWaiterOptions) {
		o.MinDelay, o.MaxDelay = waitMinDelay, waitMaxDelay
	})
	if err := w.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)}, remaining(ctx, c.timeout)); err != nil {
		return fmt.Errorf("wait for table %s to be ACTIVE: %w", name, err)
	}
	return nil
}

// waitGone waits until the table no longer exists.
func (c *clients) waitGone(ctx context.Context, name string) error {
	w := dynamodb.NewTableNotExistsWaiter(c.ddb, func(o *dynamodb.TableNotExistsWaiterOptions) {
		o.MinDelay, o.MaxDelay = waitMinDelay, waitMaxDelay
	})
	if err := w.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)}, remaining(ctx, c.timeout)); err != nil {
		return fmt.Errorf("wait for table %s to be gone: %w", name, err)
	}
	return nil
}

// createTable makes the table with the key as a tag, waits until it is
// ACTIVE, and seeds it. A table that exists already is this Create's only
// when it carries the key (on AWS the tag is set with the table: a Create
// that died at any point left it tagged). Any other is a conflict: it is
// never tagged, seeded or otherwise touched.
func (c *clients) createTable(ctx context.Context, req *sdk.CreateRequest) (*sdk.CreateResponse, error) {
	spec, ds := parseTable(req.Config)
	if ds.HasError() {
		return &sdk.CreateResponse{Diagnostics: ds}, nil
	}
	name, key := spec.name, req.IdempotencyKey

	// Look before creating, so a table made out of band is never touched.
	t, err := c.describeTable(ctx, name)
	if err != nil {
		return nil, err
	}
	if t != nil {
		return c.claimTable(ctx, req, spec, false)
	}
	in := &dynamodb.CreateTableInput{
		TableName:            aws.String(name),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String(spec.hashKey), AttributeType: types.ScalarAttributeType(spec.hashKeyType)}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String(spec.hashKey), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingMode(spec.billingMode),
		// On AWS the tag is set with the table, atomically.
		Tags: []types.Tag{{Key: aws.String(tagKey), Value: aws.String(tagValue(key))}},
	}
	if spec.billingMode == billingProvisioned {
		in.ProvisionedThroughput = &types.ProvisionedThroughput{
			ReadCapacityUnits: aws.Int64(spec.readCapacity), WriteCapacityUnits: aws.Int64(spec.writeCapacity),
		}
	}
	made, err := c.createTableOnce(ctx, in)
	if err != nil {
		return nil, err
	}
	return c.claimTable(ctx, req, spec, made)
}

// claimTable decides whether an existing table is this Create's: only when
// it carries the Create's key, or none while this very Create made it
// (ours). Else it is a conflict, and the
// table is left as it is. Its own is tagged (when the endpoint dropped the
// tag given at creation), waited for and seeded.
func (c *clients) claimTable(ctx context.Context, req *sdk.CreateRequest, spec tableSpec, ours bool) (*sdk.CreateResponse, error) {
	name, key := spec.name, req.IdempotencyKey
	// Tags can be listed once the table is ACTIVE; waiting touches nothing.
	if err := c.waitActive(ctx, name); err != nil {
		return nil, err
	}
	t, err := c.describeTable(ctx, name)
	if err != nil {
		return nil, err
	}
	if t == nil {
		return nil, sdk.Errorf("create %s: table %q vanished while it was being created", req.Name, name)
	}
	got, err := c.tableKey(ctx, aws.ToString(t.TableArn))
	if err != nil {
		return nil, err
	}
	switch {
	case got == tagValue(key):
		// A retried Create: what the first made (or AWS set the tag at
		// creation).
	case got != "":
		return &sdk.CreateResponse{Diagnostics: sdk.Diagnostics{withPath(conflict(
			fmt.Sprintf("table %q already exists, created under another idempotency key: bulwark does not claim it", name), got), attrTable)}}, nil
	case !ours:
		return &sdk.CreateResponse{Diagnostics: sdk.Diagnostics{withPath(conflict(
			fmt.Sprintf("table %q already exists and carries no idempotency key: bulwark did not create it, or a create of it was killed before it could tag it on an endpoint that keeps no tags given at creation; bulwark does not claim it (if it is this stack's, `bulwark import` takes it over)", name), ""), attrTable)}}, nil
	}
	if got == "" {
		// An endpoint that drops tags given at creation (dynalite): tag it
		// now.
		if _, err := c.ddb.TagResource(ctx, &dynamodb.TagResourceInput{
			ResourceArn: t.TableArn,
			Tags:        []types.Tag{{Key: aws.String(tagKey), Value: aws.String(tagValue(key))}},
		}); err != nil {
			return nil, fmt.Errorf("tag table %s with its idempotency key: %w", name, err)
		}
	}
	if err := c.seedTable(ctx, name, spec); err != nil {
		return nil, err
	}
	return &sdk.CreateResponse{ID: name, Attributes: tableAttrs(t, tagValue(key)),
		Private: record{Type: typeTable, Name: name, Region: c.region, Key: key, Created: c.now().UTC()}.private()}, nil
}

// createTableOnce calls CreateTable and says whether it made the table. A
// table that exists is not an error here (the caller decides whose it is);
// one still being deleted is waited out and made again.
func (c *clients) createTableOnce(ctx context.Context, in *dynamodb.CreateTableInput) (bool, error) {
	name := aws.ToString(in.TableName)
	for attempt := 0; ; attempt++ {
		_, err := c.ddb.CreateTable(ctx, in)
		if err == nil {
			return true, nil
		}
		if apiCode(err) != "ResourceInUseException" {
			return false, fmt.Errorf("CreateTable %s: %w", name, err)
		}
		out, derr := c.ddb.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
		switch {
		case apiCode(derr) == "ResourceNotFoundException" && attempt == 0:
			continue // gone between the two calls
		case derr != nil:
			return false, fmt.Errorf("DescribeTable %s: %w", name, derr)
		case out.Table.TableStatus == types.TableStatusDeleting && attempt == 0:
			if err := c.waitGone(ctx, name); err != nil {
				return false, err
			}
			continue
		}
		return false, nil
	}
}

// seedValue is the hash key of the seed item for a key type.
func seedValue(keyType string) types.AttributeValue {
	switch keyType {
	case "N":
		return &types.AttributeValueMemberN{Value: "0"}
	case "B":
		return &types.AttributeValueMemberB{Value: []byte(seedHash)}
	}
	return &types.AttributeValueMemberS{Value: seedHash}
}

// seedTable puts the seed item unless it is there already.
func (c *clients) seedTable(ctx context.Context, name string, spec tableSpec) error {
	_, err := c.ddb.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(name),
		Item: map[string]types.AttributeValue{
			spec.hashKey: seedValue(spec.hashKeyType),
			"note":       &types.AttributeValueMemberS{Value: "seeded by bulwark when it created the table"},
		},
		ConditionExpression:      aws.String("attribute_not_exists(#k)"),
		ExpressionAttributeNames: map[string]string{"#k": spec.hashKey},
	})
	if err != nil && apiCode(err) != "ConditionalCheckFailedException" {
		return fmt.Errorf("seed table %s: %w", name, err)
	}
	return nil
}

// updateTable changes the billing mode and capacity in place, and waits
// until the table is ACTIVE again.
func (c *clients) updateTable(ctx context.Context, req *sdk.UpdateRequest) (*sdk.UpdateResponse, error) {
	spec, ds := parseTable(req.Config)
	if ds.HasError() {
		return &sdk.UpdateResponse{Diagnostics: ds}, nil
	}
	name := idName(req.ID, attrTable, req.Config)
	t, err := c.describeTable(ctx, name)
	if err != nil {
		return nil, err
	}
	if t == nil {
		return nil, sdk.Errorf("update %s: table %q does not exist", req.Name, name)
	}
	key, err := c.tableKey(ctx, aws.ToString(t.TableArn))
	if err != nil {
		return nil, err
	}
	cur := tableAttrs(t, key)
	in := &dynamodb.UpdateTableInput{TableName: aws.String(name)}
	change := false
	if cur[attrBillingMode] != spec.billingMode {
		in.BillingMode = types.BillingMode(spec.billingMode)
		change = true
	}
	if spec.billingMode == billingProvisioned &&
		(change || cur[attrReadCapacity] != float64(spec.readCapacity) || cur[attrWriteCapacity] != float64(spec.writeCapacity)) {
		in.ProvisionedThroughput = &types.ProvisionedThroughput{
			ReadCapacityUnits: aws.Int64(spec.readCapacity), WriteCapacityUnits: aws.Int64(spec.writeCapacity),
		}
		change = true
	}
	if !change {
		return &sdk.UpdateResponse{Attributes: cur}, nil
	}
	if err := c.waitActive(ctx, name); err != nil { // an update needs an ACTIVE table
		return nil, err
	}
	if _, err := c.ddb.UpdateTable(ctx, in); err != nil {
		return nil, fmt.Errorf("UpdateTable %s: %w", name, err)
	}
	if err := c.waitActive(ctx, name); err != nil {
		return nil, err
	}
	if t, err = c.describeTable(ctx, name); err != nil {
		return nil, err
	}
	if t == nil {
		return nil, sdk.Errorf("update %s: table %q vanished during the update", req.Name, name)
	}
	return &sdk.UpdateResponse{Attributes: tableAttrs(t, key)}, nil
}

// deleteTable deletes the table and waits until it is gone. A table that is
// gone already is success; one being created or updated is waited for
// first.
func (c *clients) deleteTable(ctx context.Context, req *sdk.DeleteRequest) error {
	name := idName(req.ID, attrTable, req.Attributes)
	if name == "" {
		return sdk.Errorf("delete %s: the request names no table", req.Name)
	}
	if carried := carriedKey(req.Private, typeTable, req.Attributes); carried != "" {
		// Defence in depth: the table at this name must be the one this
		// resource was created as. One made again by someone else after
		// ours went (it carries another key, or none) is never deleted.
		t, err := c.describeTable(ctx, name)
		if err != nil {
			return err
		}
		if t == nil {
			return nil
		}
		got, err := c.tableKey(ctx, aws.ToString(t.TableArn))
		if err != nil {
			return err
		}
		if got != tagValue(carried) {
			return notOurs("table", name, carried, got)
		}
	}
	for attempt := 0; ; attempt++ {
		_, err := c.ddb.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(name)})
		if err == nil || apiCode(err) == "ResourceNotFoundException" {
			break
		}
		if apiCode(err) == "ResourceInUseException" && attempt < 3 {
			// CREATING or UPDATING: it can be deleted once ACTIVE.
			if err := c.waitActive(ctx, name); err != nil {
				return err
			}
			continue
		}
		return fmt.Errorf("DeleteTable %s: %w", name, err)
	}
	return c.waitGone(ctx, name)
}
