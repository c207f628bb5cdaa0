package sdk

import (
	"context"
	"fmt"
	"os"
	"runtime/debug"
	"slices"
	"strings"
	"sync"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/bulwark-iac/bulwark/sdk/proto/providerv1"
)

// server is the provider side of the v1 contract. Each RPC is the same few
// lines: convert the request, enforce what the SDK guarantees, call the
// provider, convert the response.
type server struct {
	pb.UnimplementedProviderServer
	impl Provider
	// log receives what must not travel to the host as a diagnostic (a
	// panic's stack trace). go-plugin forwards the plugin's stderr to the
	// host's debug log.
	log hclog.Logger

	mu     sync.Mutex
	schema *GetSchemaResponse
}

func newServer(impl Provider) *server {
	return &server{impl: impl, log: hclog.New(&hclog.LoggerOptions{Name: "provider", Output: os.Stderr, JSONFormat: true})}
}

// call runs f, turning an error or a panic into diagnostics. A panic is one
// line for the host (what panicked); its stack trace goes to the log only.
func (s *server) call(f func() (Diagnostics, error)) (ds Diagnostics) {
	defer func() {
		if r := recover(); r != nil {
			what := strings.Join(strings.Fields(fmt.Sprint(r)), " ")
			s.log.Error("provider panicked", "panic", what, "stack", string(debug.Stack()))
			ds = append(ds, Errorf("provider panicked: %s (the stack trace is in the debug log: BULWARK_LOG=debug)", what))
		}
	}()
	ds, err := f()
	return append(ds, DiagnosticsFromError(err)...)
}

// loadSchema returns the provider's schema, asking it once.
func (s *server) loadSchema(ctx context.Context) (*GetSchemaResponse, Diagnostics) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.schema == nil {
		var resp *GetSchemaResponse
		ds := s.call(func() (Diagnostics, error) {
			var err error
			resp, err = s.impl.GetSchema(ctx, &GetSchemaRequest{})
			if resp != nil {
				return resp.Diagnostics, err
			}
			return nil, err
		})
		if ds.HasError() || resp == nil {
			return nil, append(ds, Errorf("provider returned no schema"))
		}
		s.schema = resp
	}
	return s.schema, nil
}

func (s *server) resourceType(ctx context.Context, name string) (ResourceType, Diagnostics) {
	schema, ds := s.loadSchema(ctx)
	if ds.HasError() {
		return ResourceType{}, ds
	}
	rt, ok := schema.ResourceType(name)
	if !ok {
		return rt, Diagnostics{Errorf("unknown resource type %q", name)}
	}
	return rt, nil
}

// checkConfig checks cfg against the schema of typ.
func (s *server) checkConfig(ctx context.Context, typ string, cfg Attributes) Diagnostics {
	rt, ds := s.resourceType(ctx, typ)
	if ds.HasError() {
		return ds
	}
	return CheckConfig(rt, cfg)
}

func (s *server) GetSchema(ctx context.Context, _ *pb.GetSchema_Request) (*pb.GetSchema_Response, error) {
	var resp *GetSchemaResponse
	ds := s.call(func() (Diagnostics, error) {
		var err error
		resp, err = s.impl.GetSchema(ctx, &GetSchemaRequest{})
		return nil, err
	})
	if resp != nil && !ds.HasError() && !resp.Diagnostics.HasError() {
		// The schema the host was given is the one the config checks use:
		// kept, so the first ValidateResource or Create does not ask the
		// provider again (a second GetSchema, which a provider whose every
		// call takes a round trip makes everything behind it wait for, under
		// s.mu).
		s.mu.Lock()
		if s.schema == nil {
			s.schema = resp
		}
		s.mu.Unlock()
	}
	if resp != nil {
		_, imports := s.impl.(Importer)
		_, batches := s.impl.(BatchReader)
		_, validates := s.impl.(BatchValidator)
		_, creates := s.impl.(BatchCreator)
		_, reads := s.impl.(DataReader)
		c := *resp
		c.Capabilities.ReadData = reads
		sv, ok := s.impl.(SchemaValidator)
		c.Capabilities.SchemaValidation = ok && sv.ValidatesBySchema()
		if !reads {
			// What a provider cannot read is not offered.
			c.DataSources = nil
		}
		c.Capabilities.Import = imports
		c.Capabilities.ReadMany = batches
		c.Capabilities.ValidateMany = validates
		c.Capabilities.CreateMany = creates
		c.Capabilities.CreateReadsBack = true
		c.Capabilities.DeleteReadsBack = true
		resp = &c
	}
	out := toSchema(resp)
	out.Diagnostics = append(out.Diagnostics, toDiagnostics(ds)...)
	return out, nil
}

func (s *server) Configure(ctx context.Context, req *pb.Configure_Request) (*pb.Configure_Response, error) {
	cfg, err := fromDynamic(req.GetConfig())
	if err != nil {
		return &pb.Configure_Response{Diagnostics: toDiagnostics(DiagnosticsFromError(err))}, nil
	}
	ds := s.call(func() (Diagnostics, error) {
		resp, err := s.impl.Configure(ctx, &ConfigureRequest{Config: cfg, DataDir: req.GetDataDir(), ReadOnly: req.GetReadOnly()})
		if resp != nil {
			return resp.Diagnostics, err
		}
		return nil, err
	})
	return &pb.Configure_Response{Diagnostics: toDiagnostics(ds)}, nil
}

func (s *server) ValidateResource(ctx context.Context, req *pb.ValidateResource_Request) (*pb.ValidateResource_Response, error) {
	cfg, err := fromDynamic(req.GetConfig())
	if err != nil {
		return &pb.ValidateResource_Response{Diagnostics: toDiagnostics(DiagnosticsFromError(err))}, nil
	}
	if ds := s.checkConfig(ctx, req.GetType(), cfg); ds.HasError() {
		return &pb.ValidateResource_Response{Diagnostics: toDiagnostics(ds)}, nil
	}
	ds := s.call(func() (Diagnostics, error) {
		resp, err := s.impl.ValidateResource(ctx, &ValidateResourceRequest{Type: req.GetType(), Name: req.GetName(), Config: cfg})
		if resp != nil {
			return resp.Diagnostics, err
		}
		return nil, err
	})
	return &pb.ValidateResource_Response{Diagnostics: toDiagnostics(ds)}, nil
}

// ValidateMany checks each config against the schema, then asks a provider
// that implements BatchValidator about the ones that pass, in one call; for
// one that does not, it is one ValidateResource after the other, so a host
// may call it either way.
func (s *server) ValidateMany(ctx context.Context, req *pb.ValidateMany_Request) (*pb.ValidateMany_Response, error) {
	out := &pb.ValidateMany_Response{Results: make([]*pb.ValidateResource_Response, len(req.GetResources()))}
	var (
		reqs []*ValidateResourceRequest
		at   []int // reqs[j] answers request at[j]
	)
	for i, r := range req.GetResources() {
		cfg, err := fromDynamic(r.GetConfig())
		if err != nil {
			out.Results[i] = &pb.ValidateResource_Response{Diagnostics: toDiagnostics(DiagnosticsFromError(err))}
			continue
		}
		if ds := s.checkConfig(ctx, r.GetType(), cfg); ds.HasError() {
			out.Results[i] = &pb.ValidateResource_Response{Diagnostics: toDiagnostics(ds)}
			continue
		}
		reqs, at = append(reqs, &ValidateResourceRequest{Type: r.GetType(), Name: r.GetName(), Config: cfg}), append(at, i)
	}
	batch, ok := s.impl.(BatchValidator)
	if !ok {
		for j, vr := range reqs {
			ds := s.call(func() (Diagnostics, error) {
				resp, err := s.impl.ValidateResource(ctx, vr)
				if resp != nil {
					return resp.Diagnostics, err
				}
				return nil, err
			})
			out.Results[at[j]] = &pb.ValidateResource_Response{Diagnostics: toDiagnostics(ds)}
		}
		return out, nil
	}
	var resp *ValidateManyResponse
	ds := s.call(func() (Diagnostics, error) {
		if len(reqs) == 0 {
			resp = &ValidateManyResponse{}
			return nil, nil
		}
		var err error
		resp, err = batch.ValidateMany(ctx, &ValidateManyRequest{Resources: reqs})
		return nil, err
	})
	switch {
	case resp == nil && !ds.HasError():
		ds = append(ds, Errorf("provider returned no ValidateMany response"))
	case resp != nil:
		ds = append(slices.Clone(resp.Diagnostics), ds...)
		if !ds.HasError() && len(resp.Results) != len(reqs) {
			ds = append(ds, Errorf("provider answered %d of %d validations", len(resp.Results), len(reqs)))
		}
	}
	out.Diagnostics = toDiagnostics(ds)
	if ds.HasError() {
		out.Results = nil
		return out, nil
	}
	for j, r := range resp.Results {
		res := &pb.ValidateResource_Response{}
		if r != nil {
			res.Diagnostics = toDiagnostics(r.Diagnostics)
		}
		out.Results[at[j]] = res
	}
	return out, nil
}

func (s *server) Read(ctx context.Context, req *pb.Read_Request) (*pb.Read_Response, error) {
	rr, err := fromReadRequest(req)
	if err != nil {
		return &pb.Read_Response{Diagnostics: toDiagnostics(DiagnosticsFromError(err))}, nil
	}
	var resp *ReadResponse
	ds := s.call(func() (Diagnostics, error) {
		var err error
		resp, err = s.impl.Read(ctx, rr)
		return nil, err
	})
	return toReadResponse(resp, ds), nil
}

// ReadMany asks a provider that implements BatchReader; for one that does
// not, it is one Read after the other, so a host may call it either way.
// A request that cannot be decoded gets its own error result and never
// reaches the provider.
func (s *server) ReadMany(ctx context.Context, req *pb.ReadMany_Request) (*pb.ReadMany_Response, error) {
	out := &pb.ReadMany_Response{Results: make([]*pb.Read_Response, len(req.GetReads()))}
	var (
		reads []*ReadRequest
		at    []int // reads[j] answers request at[j]
	)
	for i, r := range req.GetReads() {
		rr, err := fromReadRequest(r)
		if err != nil {
			out.Results[i] = &pb.Read_Response{Diagnostics: toDiagnostics(DiagnosticsFromError(err))}
			continue
		}
		reads, at = append(reads, rr), append(at, i)
	}
	ds := s.answerReads(ctx, reads, at, out.Results, true)
	out.Diagnostics = toDiagnostics(ds)
	if ds.HasError() {
		out.Results = nil
	}
	return out, nil
}

// answerMany answers the requests of a batch call (ReadMany, CreateMany)
// that passed their checks, reqs[j] being the call's request at[j]: in one
// call of many when the provider implements the batch (many non-nil), else
// one after the other through one. Each answer goes, as wire makes it, to
// its request's place in out; fill stands in for an answer the batch left
// nil. It returns the diagnostics of the whole call (the provider's, then
// the server's: a panic, no response, a count that does not match); an
// error among them fails every request of the call, and the caller then
// drops out.
func answerMany[Q, R, W any](s *server, call, noun string, reqs []Q, at []int, out []W,
	one func(Q) (R, error), many func([]Q) ([]R, Diagnostics, bool, error),
	wire func(R, Diagnostics) W, fill func(R) R) Diagnostics {
	if many == nil {
		for j, q := range reqs {
			var resp R
			ds := s.call(func() (Diagnostics, error) {
				var err error
				resp, err = one(q)
				return nil, err
			})
			out[at[j]] = wire(resp, ds)
		}
		return nil
	}
	var (
		results   []R
		rds       Diagnostics
		responded bool
	)
	ds := s.call(func() (Diagnostics, error) {
		if len(reqs) == 0 {
			responded = true
			return nil, nil
		}
		var err error
		results, rds, responded, err = many(reqs)
		return nil, err
	})
	switch {
	case !responded && !ds.HasError():
		ds = append(ds, Errorf("provider returned no %s response", call))
	case responded:
		ds = append(slices.Clone(rds), ds...)
		if !ds.HasError() && len(results) != len(reqs) {
			ds = append(ds, Errorf("provider answered %d of %d %s", len(results), len(reqs), noun))
		}
	}
	if ds.HasError() {
		return ds
	}
	for j, r := range results {
		out[at[j]] = wire(fill(r), nil)
	}
	return ds
}

func fromReadRequest(req *pb.Read_Request) (*ReadRequest, error) {
	cfg, err := fromDynamic(req.GetConfig())
	if err != nil {
		return nil, err
	}
	return &ReadRequest{Type: req.GetType(), Name: req.GetName(), ID: req.GetId(), IdempotencyKey: req.GetIdempotencyKey(), Config: cfg, Private: req.GetPrivate()}, nil
}

// toReadResponse is resp on the wire, with ds (the call's own diagnostics)
// after the provider's.
func toReadResponse(resp *ReadResponse, ds Diagnostics) *pb.Read_Response {
	out := &pb.Read_Response{}
	if resp != nil {
		ds = append(slices.Clone(resp.Diagnostics), ds...)
		attrs, err := toDynamic(resp.Attributes)
		ds = append(ds, DiagnosticsFromError(err)...)
		out.Exists, out.Id, out.Attributes, out.IdempotencyKey, out.Private = resp.Exists, resp.ID, attrs, resp.IdempotencyKey, resp.Private
	}
	out.Diagnostics = toDiagnostics(ds)
	return out
}

// Import asks a provider that implements Importer; for one that does not,
// it is a Read by id, so a host may call it either way.
func (s *server) Import(ctx context.Context, req *pb.Import_Request) (*pb.Import_Response, error) {
	cfg, err := fromDynamic(req.GetConfig())
	if err != nil {
		return &pb.Import_Response{Diagnostics: toDiagnostics(DiagnosticsFromError(err))}, nil
	}
	if req.GetId() == "" {
		return &pb.Import_Response{Diagnostics: toDiagnostics(Diagnostics{Errorf("import %s: the request carries no id", req.GetName())})}, nil
	}
	var resp *ImportResponse
	ds := s.call(func() (Diagnostics, error) {
		ir := &ImportRequest{Type: req.GetType(), Name: req.GetName(), ID: req.GetId(), Config: cfg, ClaimKey: req.GetClaimKey(), ReplacesKey: req.GetReplacesKey()}
		if imp, ok := s.impl.(Importer); ok {
			var err error
			resp, err = imp.Import(ctx, ir)
			return nil, err
		}
		r, err := s.impl.Read(ctx, &ReadRequest{Type: ir.Type, Name: ir.Name, ID: ir.ID, Config: ir.Config})
		if r != nil {
			resp = &ImportResponse{Exists: r.Exists, ID: r.ID, Attributes: r.Attributes, IdempotencyKey: r.IdempotencyKey, Private: r.Private, Diagnostics: r.Diagnostics}
		}
		return nil, err
	})
	out := &pb.Import_Response{}
	if resp != nil {
		ds = append(resp.Diagnostics, ds...)
		attrs, err := toDynamic(resp.Attributes)
		ds = append(ds, DiagnosticsFromError(err)...)
		out.Exists, out.Id, out.Attributes, out.IdempotencyKey, out.Private = resp.Exists, resp.ID, attrs, resp.IdempotencyKey, resp.Private
		// Claimed only means something for a request that asked, and only
		// when what the provider reports is that claim.
		out.Claimed = resp.Claimed && req.GetClaimKey() != "" && resp.IdempotencyKey == req.GetClaimKey() && !ds.HasError()
	}
	out.Diagnostics = toDiagnostics(ds)
	return out, nil
}

// Release asks a provider that implements Releaser to give up a claim;
// for one that does not, it answers Unimplemented, as a plugin that
// predates Release does, and the host keeps the claim.
func (s *server) Release(ctx context.Context, req *pb.Release_Request) (*pb.Release_Response, error) {
	rel, ok := s.impl.(Releaser)
	if !ok {
		return nil, status.Error(codes.Unimplemented, "the provider cannot release claims")
	}
	if req.GetId() == "" || req.GetKey() == "" {
		return &pb.Release_Response{Diagnostics: toDiagnostics(Diagnostics{Errorf("release %s: the request needs an id and a key", req.GetName())})}, nil
	}
	var resp *ReleaseResponse
	ds := s.call(func() (Diagnostics, error) {
		var err error
		resp, err = rel.Release(ctx, &ReleaseRequest{Type: req.GetType(), Name: req.GetName(), ID: req.GetId(), Key: req.GetKey(), Private: req.GetPrivate()})
		return nil, err
	})
	out := &pb.Release_Response{}
	if resp != nil {
		ds = append(slices.Clone(resp.Diagnostics), ds...)
		out.Released = resp.Released && !ds.HasError()
	}
	out.Diagnostics = toDiagnostics(ds)
	return out, nil
}

// ReadData asks a provider that implements DataReader, once the config
// passed the data source's schema; for one that does not, it answers
// Unimplemented, as a plugin that predates ReadData does.
func (s *server) ReadData(ctx context.Context, req *pb.ReadData_Request) (*pb.ReadData_Response, error) {
	dr, ok := s.impl.(DataReader)
	if !ok {
		return nil, status.Error(codes.Unimplemented, "the provider reads no data sources")
	}
	fail := func(ds Diagnostics) (*pb.ReadData_Response, error) {
		return &pb.ReadData_Response{Diagnostics: toDiagnostics(ds)}, nil
	}
	cfg, err := fromDynamic(req.GetConfig())
	if err != nil {
		return fail(DiagnosticsFromError(err))
	}
	schema, ds := s.loadSchema(ctx)
	if ds.HasError() {
		return fail(ds)
	}
	dt, ok := schema.DataSource(req.GetType())
	if !ok {
		return fail(Diagnostics{Errorf("unknown data source type %q", req.GetType())})
	}
	if ds := CheckDataConfig(dt, cfg); ds.HasError() {
		return fail(ds)
	}
	var resp *ReadDataResponse
	ds = s.call(func() (Diagnostics, error) {
		var err error
		resp, err = dr.ReadData(ctx, &ReadDataRequest{Type: req.GetType(), Name: req.GetName(), Config: cfg})
		return nil, err
	})
	out := &pb.ReadData_Response{}
	if resp != nil {
		ds = append(slices.Clone(resp.Diagnostics), ds...)
		if !ds.HasError() {
			attrs, err := toDynamic(resp.Attributes)
			ds = append(ds, DiagnosticsFromError(err)...)
			out.Attributes = attrs
		}
	} else if !ds.HasError() {
		ds = append(ds, Errorf("read data %s: the provider answered nothing", req.GetName()))
	}
	out.Diagnostics = toDiagnostics(ds)
	return out, nil
}

func (s *server) Create(ctx context.Context, req *pb.Create_Request) (*pb.Create_Response, error) {
	cr, ds := s.createRequest(ctx, req)
	if ds.HasError() {
		return &pb.Create_Response{Diagnostics: toDiagnostics(ds)}, nil
	}
	var resp *CreateResponse
	ds = s.call(func() (Diagnostics, error) {
		var err error
		resp, err = s.impl.Create(ctx, cr)
		return nil, err
	})
	out := []*pb.Create_Response{toCreateResponse(resp, ds)}
	s.readBack(ctx, []*CreateRequest{cr}, out)
	return out[0], nil
}

// readBack answers the read_back of the Creates that asked for it and
// succeeded (creates[j] is answered by out[j]): a Read of each resource by
// its new id, with the request's config and the answer's private data, as
// the host's Verify would make it (see readBacks).
func (s *server) readBack(ctx context.Context, creates []*CreateRequest, out []*pb.Create_Response) {
	var (
		reads []*ReadRequest
		at    []int // reads[k] reads back what out[at[k]] made
	)
	for j, cr := range creates {
		r := out[j]
		if !cr.ReadBack || r == nil || r.GetId() == "" || fromDiagnostics(r.GetDiagnostics()).HasError() {
			continue
		}
		reads = append(reads, &ReadRequest{Type: cr.Type, Name: cr.Name, ID: r.GetId(), Config: cr.Config, Private: r.GetPrivate()})
		at = append(at, j)
	}
	for k, rb := range s.readBacks(ctx, reads) {
		out[at[k]].ReadBack = rb
	}
}

// answerReads answers reads (reads[j] is the call's request at[j]) into
// out as ReadMany does: in one ReadMany when the provider implements
// BatchReader and batch allows it, else one Read after the other (see
// answerMany).
func (s *server) answerReads(ctx context.Context, reads []*ReadRequest, at []int, out []*pb.Read_Response, batch bool) Diagnostics {
	var many func([]*ReadRequest) ([]*ReadResponse, Diagnostics, bool, error)
	if b, ok := s.impl.(BatchReader); ok && batch {
		many = func(reads []*ReadRequest) ([]*ReadResponse, Diagnostics, bool, error) {
			resp, err := b.ReadMany(ctx, &ReadManyRequest{Reads: reads})
			if resp == nil {
				return nil, nil, false, err
			}
			return resp.Results, resp.Diagnostics, true, err
		}
	}
	return answerMany(s, "ReadMany", "reads", reads, at, out,
		func(rr *ReadRequest) (*ReadResponse, error) { return s.impl.Read(ctx, rr) },
		many, toReadResponse,
		func(r *ReadResponse) *ReadResponse {
			if r == nil {
				r = &ReadResponse{Diagnostics: Diagnostics{Errorf("provider returned no result for this read")}}
			}
			return r
		})
}

// readBacks makes the reads of read-backs (a Create's, a Delete's), as the
// host's Verify would, through answerReads (one ReadMany when more than
// one is due). An answer is nil where its read failed (an error, a panic,
// an error diagnostic, a batch that answers wrong), never the call's
// failure: the host then reads itself.
func (s *server) readBacks(ctx context.Context, reads []*ReadRequest) []*pb.Read_Response {
	out := make([]*pb.Read_Response, len(reads))
	at := make([]int, len(reads))
	for k := range at {
		at[k] = k
	}
	if s.answerReads(ctx, reads, at, out, len(reads) > 1).HasError() {
		return make([]*pb.Read_Response, len(reads))
	}
	for k, w := range out {
		if w == nil || fromDiagnostics(w.GetDiagnostics()).HasError() {
			out[k] = nil
		}
	}
	return out
}

// createRequest decodes a Create request and checks what the SDK
// guarantees of every Create a provider sees: a config its schema accepts,
// and an idempotency key.
func (s *server) createRequest(ctx context.Context, req *pb.Create_Request) (*CreateRequest, Diagnostics) {
	cfg, err := fromDynamic(req.GetConfig())
	if err != nil {
		return nil, DiagnosticsFromError(err)
	}
	if ds := s.checkConfig(ctx, req.GetType(), cfg); ds.HasError() {
		return nil, ds
	}
	if req.GetIdempotencyKey() == "" {
		return nil, Diagnostics{Errorf("create %s: the request carries no idempotency key", req.GetName())}
	}
	return &CreateRequest{Type: req.GetType(), Name: req.GetName(), Config: cfg, IdempotencyKey: req.GetIdempotencyKey(), Protection: fromProtection(req.GetProtection()), ReadBack: req.GetReadBack()}, nil
}

// toCreateResponse is resp on the wire, with ds (the call's own
// diagnostics) after the provider's.
func toCreateResponse(resp *CreateResponse, ds Diagnostics) *pb.Create_Response {
	out := &pb.Create_Response{}
	if resp != nil {
		ds = append(slices.Clone(resp.Diagnostics), ds...)
		attrs, err := toDynamic(resp.Attributes)
		ds = append(ds, DiagnosticsFromError(err)...)
		out.Id, out.Attributes, out.Private = resp.ID, attrs, resp.Private
	}
	out.Diagnostics = toDiagnostics(ds)
	return out
}

// CreateMany checks each request as Create does, then asks a provider that
// implements BatchCreator about the ones that pass, in one call; for one
// that does not, it is one Create after the other, so a host may call it
// either way (a host calls it only when Capabilities.CreateMany says the
// provider implements it). A request that fails the check, or repeats the
// idempotency key of an earlier one, gets its own error result and never
// reaches the provider.
func (s *server) CreateMany(ctx context.Context, req *pb.CreateMany_Request) (*pb.CreateMany_Response, error) {
	out := &pb.CreateMany_Response{Results: make([]*pb.Create_Response, len(req.GetCreates()))}
	var (
		creates []*CreateRequest
		at      []int // creates[j] answers request at[j]
		keys    = map[string]int{}
	)
	for i, r := range req.GetCreates() {
		cr, ds := s.createRequest(ctx, r)
		if !ds.HasError() {
			if first, dup := keys[cr.IdempotencyKey]; dup {
				ds = Diagnostics{Errorf("create %s: idempotency key %q is also that of request %d of this CreateMany: each Create has its own", cr.Name, cr.IdempotencyKey, first)}
			}
		}
		if ds.HasError() {
			out.Results[i] = &pb.Create_Response{Diagnostics: toDiagnostics(ds)}
			continue
		}
		keys[cr.IdempotencyKey] = i
		creates, at = append(creates, cr), append(at, i)
	}
	var many func([]*CreateRequest) ([]*CreateResponse, Diagnostics, bool, error)
	if batch, ok := s.impl.(BatchCreator); ok {
		many = func(creates []*CreateRequest) ([]*CreateResponse, Diagnostics, bool, error) {
			resp, err := batch.CreateMany(ctx, &CreateManyRequest{Creates: creates})
			if resp == nil {
				return nil, nil, false, err
			}
			return resp.Results, resp.Diagnostics, true, err
		}
	}
	ds := answerMany(s, "CreateMany", "creates", creates, at, out.Results,
		func(cr *CreateRequest) (*CreateResponse, error) { return s.impl.Create(ctx, cr) },
		many, toCreateResponse,
		func(r *CreateResponse) *CreateResponse {
			if r == nil {
				r = &CreateResponse{Diagnostics: Diagnostics{Errorf("provider returned no result for this create")}}
			}
			return r
		})
	out.Diagnostics = toDiagnostics(ds)
	if ds.HasError() {
		out.Results = nil
		return out, nil
	}
	s.readBack(ctx, creates, pick(out.Results, at))
	return out, nil
}

// pick is the elements of s at the positions at, in that order.
func pick[T any](s []T, at []int) []T {
	out := make([]T, len(at))
	for k, i := range at {
		out[k] = s[i]
	}
	return out
}

func (s *server) Update(ctx context.Context, req *pb.Update_Request) (*pb.Update_Response, error) {
	cfg, err := fromDynamic(req.GetConfig())
	if err != nil {
		return &pb.Update_Response{Diagnostics: toDiagnostics(DiagnosticsFromError(err))}, nil
	}
	prior, err := fromDynamic(req.GetPriorAttributes())
	if err != nil {
		return &pb.Update_Response{Diagnostics: toDiagnostics(DiagnosticsFromError(err))}, nil
	}
	if ds := s.checkConfig(ctx, req.GetType(), cfg); ds.HasError() {
		return &pb.Update_Response{Diagnostics: toDiagnostics(ds)}, nil
	}
	var resp *UpdateResponse
	ds := s.call(func() (Diagnostics, error) {
		var err error
		resp, err = s.impl.Update(ctx, &UpdateRequest{Type: req.GetType(), Name: req.GetName(), ID: req.GetId(), PriorAttributes: prior, Config: cfg, Protection: fromProtection(req.GetProtection()), Private: req.GetPrivate()})
		return nil, err
	})
	out := &pb.Update_Response{}
	if resp != nil {
		ds = append(resp.Diagnostics, ds...)
		attrs, err := toDynamic(resp.Attributes)
		ds = append(ds, DiagnosticsFromError(err)...)
		out.Attributes, out.Private = attrs, resp.Private
	}
	out.Diagnostics = toDiagnostics(ds)
	return out, nil
}

// Delete refuses a protected resource before the provider sees the request:
// this is the second of the two places protection is enforced (the first is
// the host's single deletion path).
func (s *server) Delete(ctx context.Context, req *pb.Delete_Request) (*pb.Delete_Response, error) {
	if p := fromProtection(req.GetProtection()); p == ProtectionProtected {
		return &pb.Delete_Response{Diagnostics: toDiagnostics(Diagnostics{ErrProtectedDelete(req.GetType(), req.GetName())})}, nil
	}
	attrs, err := fromDynamic(req.GetAttributes())
	if err != nil {
		return &pb.Delete_Response{Diagnostics: toDiagnostics(DiagnosticsFromError(err))}, nil
	}
	ds := s.call(func() (Diagnostics, error) {
		resp, err := s.impl.Delete(ctx, &DeleteRequest{Type: req.GetType(), Name: req.GetName(), ID: req.GetId(), Attributes: attrs, Protection: fromProtection(req.GetProtection()), Private: req.GetPrivate(), ExpectedKey: req.GetExpectedKey()})
		if resp != nil {
			return resp.Diagnostics, err
		}
		return nil, err
	})
	out := &pb.Delete_Response{Diagnostics: toDiagnostics(ds)}
	if req.GetReadBack() && !ds.HasError() {
		out.ReadBack = s.readBacks(ctx, []*ReadRequest{{Type: req.GetType(), Name: req.GetName(), ID: req.GetId(), Private: req.GetPrivate()}})[0]
	}
	return out, nil
}

// ErrProtectedDelete is the diagnostic Serve returns for a Delete request
// that carries ProtectionProtected.
func ErrProtectedDelete(typ, name string) Diagnostic {
	return Diagnostic{
		Severity: SeverityError,
		Summary:  fmt.Sprintf("refused to delete protected resource %s (%s)", name, typ),
		Detail:   "the provider SDK never deletes a protected resource; lower its protection in the spec and apply first",
	}
}
