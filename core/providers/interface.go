// Package providers is the host's side of a provider: the interface the
// plugin host drives, whatever protocol the plugin speaks, and the host's
// own types for what crosses it (schema, requests, responses,
// diagnostics). bulwark's own gRPC protocol (core/pluginhost/grpcv1) is one
// implementation; another protocol plugs in beside it by implementing
// Interface over its own wire. Nothing here is the provider author's API:
// that is the sdk module, which the host never imports (only the wire
// contract in sdk/proto). See docs/architecture.md, "core, package by
// package" and "The life of bulwark apply", step 6.
package providers

import (
	"context"
	"errors"
)

// Interface is one running provider as a protocol client sees it: every
// method is one call to the provider. The optional parts of the contract
// are methods too, never a type to assert: GetSchema's Capabilities say
// which the provider offers, and the host calls one only when they do (an
// implementation may answer an error that wraps ErrUnsupported to one it
// was not offered). Release, which no capability announces, answers an
// error that wraps ErrReleaseUnsupported when the provider cannot.
//
// Transport failures are returned as they come; the plugin host translates
// them, restarts a dead process and applies the call timeout.
type Interface interface {
	GetSchema(ctx context.Context, req *GetSchemaRequest) (*GetSchemaResponse, error)
	Configure(ctx context.Context, req *ConfigureRequest) (*ConfigureResponse, error)
	ValidateResource(ctx context.Context, req *ValidateResourceRequest) (*ValidateResourceResponse, error)
	Read(ctx context.Context, req *ReadRequest) (*ReadResponse, error)
	Create(ctx context.Context, req *CreateRequest) (*CreateResponse, error)
	Update(ctx context.Context, req *UpdateRequest) (*UpdateResponse, error)
	Delete(ctx context.Context, req *DeleteRequest) (*DeleteResponse, error)

	// ValidateMany validates many resources in one call
	// (Capabilities.ValidateMany).
	ValidateMany(ctx context.Context, req *ValidateManyRequest) (*ValidateManyResponse, error)
	// ReadMany reads many resources in one call (Capabilities.ReadMany).
	ReadMany(ctx context.Context, req *ReadManyRequest) (*ReadManyResponse, error)
	// CreateMany makes many resources in one call (Capabilities.CreateMany).
	CreateMany(ctx context.Context, req *CreateManyRequest) (*CreateManyResponse, error)
	// Import reads a resource by id for a take-over and stamps the claim
	// (Capabilities.Import).
	Import(ctx context.Context, req *ImportRequest) (*ImportResponse, error)
	// Release gives up a stack's claim on a resource. No capability
	// announces it: a provider that cannot answers an error that wraps
	// ErrReleaseUnsupported (and so ErrUnsupported).
	Release(ctx context.Context, req *ReleaseRequest) (*ReleaseResponse, error)
	// ReadData reads a data source (Capabilities.ReadData): never a
	// mutation.
	ReadData(ctx context.Context, req *ReadDataRequest) (*ReadDataResponse, error)
}

// ErrUnsupported is wrapped by the error of a call the provider does not
// offer.
var ErrUnsupported = errors.New("not supported by the provider")

// ErrReleaseUnsupported is returned (wrapped) by a Release of a provider
// that cannot release claims (its plugin predates Release, or the provider
// does not implement it). It is an ErrUnsupported.
var ErrReleaseUnsupported error = unsupported("the provider cannot release claims")

// unsupported is an error of its own words that is an ErrUnsupported.
type unsupported string

func (u unsupported) Error() string        { return string(u) }
func (u unsupported) Is(target error) bool { return target == ErrUnsupported }
