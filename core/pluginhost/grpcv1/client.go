package grpcv1

import (
	"context"
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/bulwark-iac/bulwark/core/providers"
	pb "github.com/bulwark-iac/bulwark/sdk/proto/providerv1"
)

// client is the host side of the v1 contract: a providers.Interface whose
// every method is one RPC. Transport failures are returned as they come (gRPC
// status errors); the host translates them in one place.
type client struct {
	c pb.ProviderClient
}

// NewClient returns a providers.Interface that calls the v1 service on
// conn.
func NewClient(conn grpc.ClientConnInterface) providers.Interface {
	return &client{c: pb.NewProviderClient(conn)}
}

var _ providers.Interface = (*client)(nil)

func (c *client) GetSchema(ctx context.Context, _ *providers.GetSchemaRequest) (*providers.GetSchemaResponse, error) {
	resp, err := c.c.GetSchema(ctx, &pb.GetSchema_Request{})
	if err != nil {
		return nil, err
	}
	return fromSchema(resp), nil
}

func (c *client) Configure(ctx context.Context, req *providers.ConfigureRequest) (*providers.ConfigureResponse, error) {
	cfg, err := toDynamic(req.Config)
	if err != nil {
		return nil, err
	}
	resp, err := c.c.Configure(ctx, &pb.Configure_Request{Config: cfg, DataDir: req.DataDir, ReadOnly: req.ReadOnly})
	if err != nil {
		return nil, err
	}
	return &providers.ConfigureResponse{Diagnostics: fromDiagnostics(resp.GetDiagnostics())}, nil
}

func (c *client) ValidateResource(ctx context.Context, req *providers.ValidateResourceRequest) (*providers.ValidateResourceResponse, error) {
	cfg, err := toDynamic(req.Config)
	if err != nil {
		return nil, err
	}
	resp, err := c.c.ValidateResource(ctx, &pb.ValidateResource_Request{Type: req.Type, Name: req.Name, Config: cfg})
	if err != nil {
		return nil, err
	}
	return &providers.ValidateResourceResponse{Diagnostics: fromDiagnostics(resp.GetDiagnostics())}, nil
}

// ValidateMany calls the ValidateMany RPC. The host calls it only for a
// provider whose schema sets Capabilities.ValidateMany.
func (c *client) ValidateMany(ctx context.Context, req *providers.ValidateManyRequest) (*providers.ValidateManyResponse, error) {
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
	out := &providers.ValidateManyResponse{Diagnostics: fromDiagnostics(resp.GetDiagnostics())}
	if out.Diagnostics.HasError() {
		return out, nil
	}
	if len(resp.GetResults()) != len(req.Resources) {
		return nil, fmt.Errorf("provider answered %d of %d validations", len(resp.GetResults()), len(req.Resources))
	}
	out.Results = make([]*providers.ValidateResourceResponse, len(req.Resources))
	for i, r := range resp.GetResults() {
		out.Results[i] = &providers.ValidateResourceResponse{Diagnostics: fromDiagnostics(r.GetDiagnostics())}
	}
	return out, nil
}

func (c *client) Read(ctx context.Context, req *providers.ReadRequest) (*providers.ReadResponse, error) {
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
func (c *client) ReadMany(ctx context.Context, req *providers.ReadManyRequest) (*providers.ReadManyResponse, error) {
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
	out := &providers.ReadManyResponse{Diagnostics: fromDiagnostics(resp.GetDiagnostics())}
	if out.Diagnostics.HasError() {
		return out, nil
	}
	if len(resp.GetResults()) != len(req.Reads) {
		return nil, fmt.Errorf("provider answered %d of %d reads", len(resp.GetResults()), len(req.Reads))
	}
	out.Results = make([]*providers.ReadResponse, len(req.Reads))
	for i, r := range resp.GetResults() {
		rr, err := fromReadResponse(r)
		if err != nil {
			rr = &providers.ReadResponse{Diagnostics: providers.DiagnosticsFromError(err)}
		}
		out.Results[i] = rr
	}
	return out, nil
}

func toReadRequest(req *providers.ReadRequest) (*pb.Read_Request, error) {
	cfg, err := toDynamic(req.Config)
	if err != nil {
		return nil, err
	}
	return &pb.Read_Request{Type: req.Type, Name: req.Name, Id: req.ID, IdempotencyKey: req.IdempotencyKey, Config: cfg, Private: req.Private}, nil
}

func fromReadResponse(resp *pb.Read_Response) (*providers.ReadResponse, error) {
	attrs, err := fromDynamic(resp.GetAttributes())
	if err != nil {
		return nil, err
	}
	return &providers.ReadResponse{Exists: resp.GetExists(), ID: resp.GetId(), Attributes: attrs, IdempotencyKey: resp.GetIdempotencyKey(), Private: resp.GetPrivate(), Diagnostics: fromDiagnostics(resp.GetDiagnostics())}, nil
}

// Import calls the Import RPC. The host calls it only for a provider whose
// schema sets Capabilities.Import (an older plugin answers Unimplemented).
func (c *client) Import(ctx context.Context, req *providers.ImportRequest) (*providers.ImportResponse, error) {
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
	return &providers.ImportResponse{Exists: resp.GetExists(), ID: resp.GetId(), Attributes: attrs, IdempotencyKey: resp.GetIdempotencyKey(), Private: resp.GetPrivate(), Claimed: resp.GetClaimed(), Diagnostics: fromDiagnostics(resp.GetDiagnostics())}, nil
}

// Release calls the Release RPC. A plugin that predates it, or whose
// provider does not implement providers.Releaser, answers Unimplemented: that is
// providers.ErrReleaseUnsupported.
func (c *client) Release(ctx context.Context, req *providers.ReleaseRequest) (*providers.ReleaseResponse, error) {
	resp, err := c.c.Release(ctx, &pb.Release_Request{Type: req.Type, Name: req.Name, Id: req.ID, Key: req.Key, Private: req.Private})
	if status.Code(err) == codes.Unimplemented {
		return nil, fmt.Errorf("release %s: %w", req.Name, providers.ErrReleaseUnsupported)
	}
	if err != nil {
		return nil, err
	}
	return &providers.ReleaseResponse{Released: resp.GetReleased(), Diagnostics: fromDiagnostics(resp.GetDiagnostics())}, nil
}

// ReadData calls the ReadData RPC. A plugin that predates it, or whose
// provider does not implement sdk.DataReader, answers Unimplemented: that
// is providers.ErrUnsupported (the host calls it only for a provider whose
// schema sets Capabilities.ReadData).
func (c *client) ReadData(ctx context.Context, req *providers.ReadDataRequest) (*providers.ReadDataResponse, error) {
	cfg, err := toDynamic(req.Config)
	if err != nil {
		return nil, err
	}
	resp, err := c.c.ReadData(ctx, &pb.ReadData_Request{Type: req.Type, Name: req.Name, Config: cfg})
	if status.Code(err) == codes.Unimplemented {
		return nil, fmt.Errorf("read data %s: %w", req.Name, providers.ErrUnsupported)
	}
	if err != nil {
		return nil, err
	}
	attrs, err := fromDynamic(resp.GetAttributes())
	if err != nil {
		return nil, fmt.Errorf("read data %s: %w", req.Name, err)
	}
	return &providers.ReadDataResponse{Attributes: attrs, Diagnostics: fromDiagnostics(resp.GetDiagnostics())}, nil
}

func (c *client) Create(ctx context.Context, req *providers.CreateRequest) (*providers.CreateResponse, error) {
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
func (c *client) CreateMany(ctx context.Context, req *providers.CreateManyRequest) (*providers.CreateManyResponse, error) {
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
	out := &providers.CreateManyResponse{Diagnostics: fromDiagnostics(resp.GetDiagnostics())}
	if out.Diagnostics.HasError() {
		return out, nil
	}
	if len(resp.GetResults()) != len(req.Creates) {
		return nil, fmt.Errorf("provider answered %d of %d creates", len(resp.GetResults()), len(req.Creates))
	}
	out.Results = make([]*providers.CreateResponse, len(req.Creates))
	for i, r := range resp.GetResults() {
		cr, err := fromCreateResponse(r)
		if err != nil {
			cr = &providers.CreateResponse{Diagnostics: providers.DiagnosticsFromError(err)}
		}
		out.Results[i] = cr
	}
	return out, nil
}

func toCreateRequest(req *providers.CreateRequest) (*pb.Create_Request, error) {
	cfg, err := toDynamic(req.Config)
	if err != nil {
		return nil, err
	}
	return &pb.Create_Request{Type: req.Type, Name: req.Name, Config: cfg, IdempotencyKey: req.IdempotencyKey, Protection: toProtection(req.Protection), ReadBack: req.ReadBack}, nil
}

func fromCreateResponse(resp *pb.Create_Response) (*providers.CreateResponse, error) {
	attrs, err := fromDynamic(resp.GetAttributes())
	if err != nil {
		return nil, err
	}
	return &providers.CreateResponse{ID: resp.GetId(), Attributes: attrs, Private: resp.GetPrivate(), Diagnostics: fromDiagnostics(resp.GetDiagnostics()), ReadBack: readBackOf(resp.GetReadBack())}, nil
}

func (c *client) Update(ctx context.Context, req *providers.UpdateRequest) (*providers.UpdateResponse, error) {
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
	return &providers.UpdateResponse{Attributes: attrs, Private: resp.GetPrivate(), Diagnostics: fromDiagnostics(resp.GetDiagnostics())}, nil
}

func (c *client) Delete(ctx context.Context, req *providers.DeleteRequest) (*providers.DeleteResponse, error) {
	attrs, err := toDynamic(req.Attributes)
	if err != nil {
		return nil, err
	}
	resp, err := c.c.Delete(ctx, &pb.Delete_Request{Type: req.Type, Name: req.Name, Id: req.ID, Attributes: attrs, Protection: toProtection(req.Protection), Private: req.Private, ReadBack: req.ReadBack, ExpectedKey: req.ExpectedKey})
	if err != nil {
		return nil, err
	}
	return &providers.DeleteResponse{Diagnostics: fromDiagnostics(resp.GetDiagnostics()), ReadBack: readBackOf(resp.GetReadBack())}, nil
}

// readBackOf is a Create's or Delete's read-back off the wire; one that
// cannot be decoded is as none (the host reads itself), and the call's own
// outcome stands.
func readBackOf(rb *pb.Read_Response) *providers.ReadResponse {
	if rb == nil {
		return nil
	}
	r, err := fromReadResponse(rb)
	if err != nil {
		return nil
	}
	return r
}
