// Command bulwark-provider-aws will manage real S3 buckets and DynamoDB
// tables through aws-sdk-go-v2. For now it is a skeleton: it declares its
// schema and refuses every mutation with a clear diagnostic, so a spec can be
// validated against it but nothing is created. Its AWS dependencies will live
// in this module only, never in core or sdk.
package main

import (
	"context"
	"errors"

	"github.com/bulwark-iac/bulwark/sdk"
)

// errNotYet is what every call that would touch AWS returns.
var errNotYet = errors.New("the aws provider is a skeleton: it cannot create, read or delete resources yet")

type provider struct{}

func (provider) GetSchema(context.Context, *sdk.GetSchemaRequest) (*sdk.GetSchemaResponse, error) {
	return &sdk.GetSchemaResponse{
		ProviderName: "aws", ProviderVersion: "0.0.1",
		ResourceTypes: []sdk.ResourceType{
			{Name: "s3_bucket", Attributes: []sdk.Attribute{{Name: "bucket", Type: sdk.TypeString, Required: true, ForceNew: true}}},
			{Name: "dynamodb_table", Attributes: []sdk.Attribute{
				{Name: "table", Type: sdk.TypeString, Required: true, ForceNew: true},
				{Name: "hash_key", Type: sdk.TypeString, Required: true, ForceNew: true},
			}},
		},
	}, nil
}

func (provider) Configure(context.Context, *sdk.ConfigureRequest) (*sdk.ConfigureResponse, error) {
	return &sdk.ConfigureResponse{}, nil
}

func (provider) ValidateResource(context.Context, *sdk.ValidateResourceRequest) (*sdk.ValidateResourceResponse, error) {
	return &sdk.ValidateResourceResponse{}, nil
}

func (provider) Read(context.Context, *sdk.ReadRequest) (*sdk.ReadResponse, error) {
	return nil, errNotYet
}

func (provider) Create(context.Context, *sdk.CreateRequest) (*sdk.CreateResponse, error) {
	return nil, errNotYet
}

func (provider) Update(context.Context, *sdk.UpdateRequest) (*sdk.UpdateResponse, error) {
	return nil, errNotYet
}

func (provider) Delete(context.Context, *sdk.DeleteRequest) (*sdk.DeleteResponse, error) {
	return nil, errNotYet
}

func main() { sdk.Serve(provider{}) }
