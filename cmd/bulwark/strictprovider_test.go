package main

import (
	"context"

	"github.com/bulwark-iac/bulwark/sdk"
)

// strictProvider is a provider whose config only a spec can give, as the
// aws one's region: Configure refuses a config without an endpoint. It is
// served by this test binary run as bulwark-provider-strict (see TestMain),
// so the scripts need not build the slow aws plugin to show how bulwark
// treats such a provider.
type strictProvider struct{}

func (strictProvider) GetSchema(context.Context, *sdk.GetSchemaRequest) (*sdk.GetSchemaResponse, error) {
	return &sdk.GetSchemaResponse{
		ProviderName: "strict", ProviderVersion: "0.0.1",
		ResourceTypes: []sdk.ResourceType{{
			Name: "endpoint_check", Description: "a check that the endpoint answers <ok> & more",
			Attributes: []sdk.Attribute{
				{Name: "path", Type: sdk.TypeString, Required: true, ForceNew: true, Description: "the path to ask for"},
				{Name: "token", Type: sdk.TypeString, Sensitive: true, Description: "a bearer token"},
				{Name: "status", Type: sdk.TypeNumber, Computed: true, Description: "the status it answered"},
			},
		}},
		Capabilities: sdk.Capabilities{IdempotencyKeys: true},
		ProviderConfig: []sdk.Attribute{
			{Name: "endpoint", Type: sdk.TypeString, Description: "the service's URL (else STRICT_ENDPOINT)"},
			{Name: "api_key", Type: sdk.TypeString, Sensitive: true, Description: "the key to call it with"},
		},
	}, nil
}

func (strictProvider) Configure(_ context.Context, req *sdk.ConfigureRequest) (*sdk.ConfigureResponse, error) {
	if e, _ := req.Config["endpoint"].(string); e == "" {
		return &sdk.ConfigureResponse{Diagnostics: sdk.Diagnostics{
			sdk.AttributeErrorf([]string{"endpoint"}, "no endpoint: set endpoint in the provider config"),
		}}, nil
	}
	return &sdk.ConfigureResponse{}, nil
}

func (strictProvider) ValidateResource(context.Context, *sdk.ValidateResourceRequest) (*sdk.ValidateResourceResponse, error) {
	return &sdk.ValidateResourceResponse{}, nil
}

func (strictProvider) Read(context.Context, *sdk.ReadRequest) (*sdk.ReadResponse, error) {
	return &sdk.ReadResponse{}, nil
}

func (strictProvider) Create(context.Context, *sdk.CreateRequest) (*sdk.CreateResponse, error) {
	return nil, sdk.Errorf("strict makes nothing")
}

func (strictProvider) Update(context.Context, *sdk.UpdateRequest) (*sdk.UpdateResponse, error) {
	return nil, sdk.Errorf("strict changes nothing")
}

// Import makes sdk.Serve declare the import capability.
func (strictProvider) Import(context.Context, *sdk.ImportRequest) (*sdk.ImportResponse, error) {
	return &sdk.ImportResponse{}, nil
}

func (strictProvider) Delete(context.Context, *sdk.DeleteRequest) (*sdk.DeleteResponse, error) {
	return &sdk.DeleteResponse{}, nil
}
