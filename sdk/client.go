package sdk

import (
	"context"
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/bulwark-iac/bulwark/sdk/proto/providerv1"
)

// grpcClient is the calling side of the v1 contract in the author's types:
// a Provider whose every method is one RPC. providertest drives a provider
// served in a real plugin process through it (GRPCProviderPlugin's
// GRPCClient), and the sdk's tests check the server with it. The bulwark
// host does not use it: its side of the contract is its own, in its own
// types (core/pluginhost/grpcv1), since the host links nothing of this
// package and this module cannot import the host's. Transport failures are
// returned as they come (gRPC status errors).
type grpcClient struct {
	c pb.ProviderClient
}

// newGRPCClient returns a Provider that calls the v1 service on conn.
func newGRPCClient(conn grpc.ClientConnInterface) Provider {
	return &grpcClient{c: pb.NewProviderClient(conn)}
}

var (
	_ Provider       = (*grpcClient)(nil)
	_ Importer       = (*grpcClient)(nil)
	_ BatchReader    = (*grpcClient)(nil)
	_ BatchValidator = (*grpcClient)(nil)
	_ BatchCreator   = (*grpcClient)(nil)
	_ Releaser       = (*grpcClient)(nil)
	_ DataReader     = (*grpcClient)(nil)
)

func (c *grpcClient) GetSchema(ctx context.Context, _ *GetSchemaRequest) (*GetSchemaResponse, error) {
	resp, err := c.c.GetSchema(ctx, &pb.GetSchema_Request{})
	if err != nil {
		return nil, err
	}
	return fromSchema(resp), nil
}

func (c *grpcClient) Configure(ctx context.Context, req *ConfigureRequest) (*ConfigureResponse, error) {
	cfg, err := toDynamic(req.Config)
	if err != nil {
		return nil, err
	}
	resp, err := c.c.Configure(ctx, &pb.Configure_Request{Config: cfg, DataDir: req.DataDir, ReadOnly: req.ReadOnly})
	if err != nil {
		return nil, err
	}
	return &ConfigureResponse{Diagnostics: fromDiagnostics(resp.GetDiagnostics())}, nil
}

func (c *grpcClient) ValidateResource(ctx context.Context, req *ValidateResourceRequest) (*ValidateResourceResponse, error) {
	cfg, err := toDynamic(req.Config)
	if err != nil {
		return nil, err
	}
	resp, err := c.c.ValidateResource(ctx, &pb.ValidateResource_Request{Type: req.Type, Name: req.Name, Config: cfg})
	if err != nil {
		return nil, err
	}
	return &ValidateResourceResponse{Diagnostics: fromDiagnostics(resp.GetDiagnostics())}, nil
}

// ValidateMany calls the ValidateMany RPC. The host calls it only for a
// provider whose schema sets Capabilities.ValidateMany.
func (c *grpcClient) ValidateMany(ctx context.Context, req *ValidateManyRequest) (*ValidateManyResponse, error) {
	preq := &pb.ValidateMany_Request{Resources: make([]*pb.ValidateResource_Request, len(req.Resources))}
	for i, r := range req.Resources {
		cfg, err := toDynamic(r.Config)
		if err != nil {
			return nil, fmt.Errorf("validate %s: %w", r.Name, err)
		}
		preq.Resources[i] = &pb.ValidateResource_Request{Type: r.Type, Name: r.Name, Config: cfg}
	}
	resp, err := c.c.ValidateMany(ctx, preq)
	if err != nil {
		return nil, err
	}
	out := &ValidateManyResponse{Diagnostics: fromDiagnostics(resp.GetDiagnostics())}
	if out.Diagnostics.HasError() {
		return out, nil
	}
	if len(resp.GetResults()) != len(req.Resources) {
		return nil, fmt.Errorf("provider answered %d of %d validations", len(resp.GetResults()), len(req.Resources))
	}
	out.Results = make([]*ValidateResourceResponse, len(req.Resources))
	for i, r := range resp.GetResults() {
		out.Results[i] = &ValidateResourceResponse{Diagnostics: fromDiagnostics(r.GetDiagnostics())}
	}
	return out, nil
}

func (c *grpcClient) Read(ctx context.Context, req *ReadRequest) (*ReadResponse, error) {
	pr, err := toReadRequest(req)
	if err != nil {
		return nil, err
	}
	resp, err := c.c.Read(ctx, pr)
	if err != nil {
		return nil, err
	}
	return fromReadResponse(resp)
}

// ReadMany calls the ReadMany RPC. The host calls it only for a provider
// whose schema sets Capabilities.ReadMany (an older plugin answers
// Unimplemented). A result that cannot be decoded is an error result.
func (c *grpcClient) ReadMany(ctx context.Context, req *ReadManyRequest) (*ReadManyResponse, error) {
	preq := &pb.ReadMany_Request{Reads: make([]*pb.Read_Request, len(req.Reads))}
	for i, r := range req.Reads {
		pr, err := toReadRequest(r)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", r.Name, err)
		}
		preq.Reads[i] = pr
	}
	resp, err := c.c.ReadMany(ctx, preq)
	if err != nil {
		return nil, err
	}
	out := &ReadManyResponse{Diagnostics: fromDiagnostics(resp.GetDiagnostics())}
	if out.Diagnostics.HasError() {
		return out, nil
	}
	if len(resp.GetResults()) != len(req.Reads) {
		return nil, fmt.Errorf("provider answered %d of %d reads", len(resp.GetResults()), len(req.Reads))
	}
	out.Results = make([]*ReadResponse, len(req.Reads))
	for i, r := range resp.GetResults() {
		rr, err := fromReadResponse(r)
		if err != nil {
			rr = &ReadResponse{Diagnostics: DiagnosticsFromError(err)}
		}
		out.Results[i] = rr
	}
	return out, nil
}

func toReadRequest(req *ReadRequest) (*pb.Read_Request, error) {
	cfg, err := toDynamic(req.Config)
	if err != nil {
		return nil, err
	}
	return &pb.Read_Request{Type: req.Type, Name: req.Name, Id: req.ID, IdempotencyKey: req.IdempotencyKey, Config: cfg, Private: req.Private}, nil
}

func fromReadResponse(resp *pb.Read_Response) (*ReadResponse, error) {
	attrs, err := fromDynamic(resp.GetAttributes())
	if err != nil {
		return nil, err
	}
	return &ReadResponse{Exists: resp.GetExists(), ID: resp.GetId(), Attributes: attrs, IdempotencyKey: resp.GetIdempotencyKey(), Private: resp.GetPrivate(), Diagnostics: fromDiagnostics(resp.GetDiagnostics())}, nil
}

// Import calls the Import RPC. The host calls it only for a provider whose
// schema sets Capabilities.Import (an older plugin answers Unimplemented).
func (c *grpcClient) Import(ctx context.Context, req *ImportRequest) (*ImportResponse, error) {
	cfg, err := toDynamic(req.Config)
	if err != nil {
		return nil, err
	}
	resp, err := c.c.Import(ctx, &pb.Import_Request{Type: req.Type, Name: req.Name, Id: req.ID, Config: cfg, ClaimKey: req.ClaimKey, ReplacesKey: req.ReplacesKey})
	if err != nil {
		return nil, err
	}
	attrs, err := fromDynamic(resp.GetAttributes())
	if err != nil {
		return nil, err
	}
	return &ImportResponse{Exists: resp.GetExists(), ID: resp.GetId(), Attributes: attrs, IdempotencyKey: resp.GetIdempotencyKey(), Private: resp.GetPrivate(), Claimed: resp.GetClaimed(), Diagnostics: fromDiagnostics(resp.GetDiagnostics())}, nil
}

// Release calls the Release RPC. A plugin that predates it, or whose
// provider does not implement Releaser, answers Unimplemented: that is
// ErrReleaseUnsupported.
func (c *grpcClient) Release(ctx context.Context, req *ReleaseRequest) (*ReleaseResponse, error) {
	resp, err := c.c.Release(ctx, &pb.Release_Request{Type: req.Type, Name: req.Name, Id: req.ID, Key: req.Key, Private: req.Private})
	if status.Code(err) == codes.Unimplemented {
		return nil, fmt.Errorf("release %s: %w", req.Name, ErrReleaseUnsupported)
	}
	if err != nil {
		return nil, err
	}
	return &ReleaseResponse{Released: resp.GetReleased(), Diagnostics: fromDiagnostics(resp.GetDiagnostics())}, nil
}

// ReadData calls the ReadData RPC. A plugin that predates it, or whose
// provider does not implement DataReader, answers Unimplemented: that is
// ErrDataUnsupported.
func (c *grpcClient) ReadData(ctx context.Context, req *ReadDataRequest) (*ReadDataResponse, error) {
	cfg, err := toDynamic(req.Config)
	if err != nil {
		return nil, err
	}
	resp, err := c.c.ReadData(ctx, &pb.ReadData_Request{Type: req.Type, Name: req.Name, Config: cfg})
	if status.Code(err) == codes.Unimplemented {
		return nil, fmt.Errorf("read data %s: %w", req.Name, ErrDataUnsupported)
	}
	if err != nil {
		return nil, err
	}
	attrs, err := fromDynamic(resp.GetAttributes())
	if err != nil {
		return nil, err
	}
	return &ReadDataResponse{Attributes: attrs, Diagnostics: fromDiagnostics(resp.GetDiagnostics())}, nil
}

func (c *grpcClient) Create(ctx context.Context, req *CreateRequest) (*CreateResponse, error) {
	pr, err := toCreateRequest(req)
	if err != nil {
		return nil, err
	}
	resp, err := c.c.Create(ctx, pr)
	if err != nil {
		return nil, err
	}
	return fromCreateResponse(resp)
}

// CreateMany calls the CreateMany RPC. The host calls it only for a
// provider whose schema sets Capabilities.CreateMany (an older plugin
// answers Unimplemented). A result that cannot be decoded is an error
// result: that Create's outcome is then unknown, as a Create whose answer
// was lost.
func (c *grpcClient) CreateMany(ctx context.Context, req *CreateManyRequest) (*CreateManyResponse, error) {
	preq := &pb.CreateMany_Request{Creates: make([]*pb.Create_Request, len(req.Creates))}
	for i, r := range req.Creates {
		pr, err := toCreateRequest(r)
		if err != nil {
			return nil, fmt.Errorf("create %s: %w", r.Name, err)
		}
		preq.Creates[i] = pr
	}
	resp, err := c.c.CreateMany(ctx, preq)
	if err != nil {
		return nil, err
	}
	out := &CreateManyResponse{Diagnostics: fromDiagnostics(resp.GetDiagnostics())}
	if out.Diagnostics.HasError() {
		return out, nil
	}
	if len(resp.GetResults()) != len(req.Creates) {
		return nil, fmt.Errorf("provider answered %d of %d creates", len(resp.GetResults()), len(req.Creates))
	}
	out.Results = make([]*CreateResponse, len(req.Creates))
	for i, r := range resp.GetResults() {
		cr, err := fromCreateResponse(r)
		if err != nil {
			cr = &CreateResponse{Diagnostics: DiagnosticsFromError(err)}
		}
		out.Results[i] = cr
	}
	return out, nil
}

func toCreateRequest(req *CreateRequest) (*pb.Create_Request, error) {
	cfg, err := toDynamic(req.Config)
	if err != nil {
		return nil, err
	}
	return &pb.Create_Request{Type: req.Type, Name: req.Name, Config: cfg, IdempotencyKey: req.IdempotencyKey, Protection: toProtection(req.Protection), ReadBack: req.ReadBack}, nil
}

func fromCreateResponse(resp *pb.Create_Response) (*CreateResponse, error) {
	attrs, err := fromDynamic(resp.GetAttributes())
	if err != nil {
		return nil, err
	}
	return &CreateResponse{ID: resp.GetId(), Attributes: attrs, Private: resp.GetPrivate(), Diagnostics: fromDiagnostics(resp.GetDiagnostics()), ReadBack: readBackOf(resp.GetReadBack())}, nil
}

func (c *grpcClient) Update(ctx context.Context, req *UpdateRequest) (*UpdateResponse, error) {
	cfg, err := toDynamic(req.Config)
	if err != nil {
		return nil, err
	}
	prior, err := toDynamic(req.PriorAttributes)
	if err != nil {
		return nil, err
	}
	resp, err := c.c.Update(ctx, &pb.Update_Request{Type: req.Type, Name: req.Name, Id: req.ID, PriorAttributes: prior, Config: cfg, Protection: toProtection(req.Protection), Private: req.Private})
	if err != nil {
		return nil, err
	}
	attrs, err := fromDynamic(resp.GetAttributes())
	if err != nil {
		return nil, err
	}
	return &UpdateResponse{Attributes: attrs, Private: resp.GetPrivate(), Diagnostics: fromDiagnostics(resp.GetDiagnostics())}, nil
}

func (c *grpcClient) Delete(ctx context.Context, req *DeleteRequest) (*DeleteResponse, error) {
	attrs, err := toDynamic(req.Attributes)
	if err != nil {
		return nil, err
	}
	resp, err := c.c.Delete(ctx, &pb.Delete_Request{Type: req.Type, Name: req.Name, Id: req.ID, Attributes: attrs, Protection: toProtection(req.Protection), Private: req.Private, ReadBack: req.ReadBack, ExpectedKey: req.ExpectedKey})
	if err != nil {
		return nil, err
	}
	return &DeleteResponse{Diagnostics: fromDiagnostics(resp.GetDiagnostics()), ReadBack: readBackOf(resp.GetReadBack())}, nil
}

// readBackOf is a Create's or Delete's read-back off the wire; one that
// cannot be decoded is as none (the host reads itself), and the call's own
// outcome stands.
func readBackOf(rb *pb.Read_Response) *ReadResponse {
	if rb == nil {
		return nil
	}
	r, err := fromReadResponse(rb)
	if err != nil {
		return nil
	}
	return r
}
