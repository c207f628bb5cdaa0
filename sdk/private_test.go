package sdk

import (
	"bytes"
	"context"
	"testing"
)

// private is a provider that keeps private data: Create returns some, and
// Read, Update and Delete report what they were handed.
type private struct {
	recorder
	got map[string][]byte
}

func (p *private) Read(_ context.Context, req *ReadRequest) (*ReadResponse, error) {
	p.got["Read"] = req.Private
	return &ReadResponse{Exists: true, ID: "id-" + req.Name, Private: append([]byte("read:"), req.Private...)}, nil
}

func (p *private) Create(_ context.Context, req *CreateRequest) (*CreateResponse, error) {
	return &CreateResponse{ID: "id-" + req.Name, Private: []byte("made\x00\xff")}, nil
}

func (p *private) Update(_ context.Context, req *UpdateRequest) (*UpdateResponse, error) {
	p.got["Update"] = req.Private
	return &UpdateResponse{Private: []byte("updated")}, nil
}

func (p *private) Delete(_ context.Context, req *DeleteRequest) (*DeleteResponse, error) {
	p.got["Delete"] = req.Private
	return &DeleteResponse{}, nil
}

func (p *private) Import(_ context.Context, req *ImportRequest) (*ImportResponse, error) {
	return &ImportResponse{Exists: true, ID: req.ID, Private: []byte("imported")}, nil
}

// Private data travels both ways over the real transport, byte for byte
// (it is opaque to the host: any bytes, a NUL and a non-UTF-8 byte
// included), on Create, Read, Update, Delete and Import.
func TestGRPCPrivateData(t *testing.T) {
	impl := &private{got: map[string][]byte{}}
	host := dispense(t, impl)
	ctx := context.Background()

	cr, err := host.Create(ctx, &CreateRequest{Type: "bucket", Name: "b", Config: goodConfig, IdempotencyKey: "k"})
	if err != nil || cr.Diagnostics.HasError() {
		t.Fatalf("create: %+v %v", cr, err)
	}
	made := []byte("made\x00\xff")
	if !bytes.Equal(cr.Private, made) {
		t.Fatalf("create returned private %q, want %q", cr.Private, made)
	}
	rr, err := host.Read(ctx, &ReadRequest{Type: "bucket", Name: "b", ID: cr.ID, Private: cr.Private})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(impl.got["Read"], made) || string(rr.Private) != "read:"+string(made) {
		t.Errorf("read was handed %q and returned %q", impl.got["Read"], rr.Private)
	}
	ur, err := host.Update(ctx, &UpdateRequest{Type: "bucket", Name: "b", ID: cr.ID, Config: goodConfig, Private: made})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(impl.got["Update"], made) || string(ur.Private) != "updated" {
		t.Errorf("update was handed %q and returned %q", impl.got["Update"], ur.Private)
	}
	if _, err := host.Delete(ctx, &DeleteRequest{Type: "bucket", Name: "b", ID: cr.ID, Private: made}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(impl.got["Delete"], made) {
		t.Errorf("delete was handed %q", impl.got["Delete"])
	}
	ir, err := host.(Importer).Import(ctx, &ImportRequest{Type: "bucket", Name: "b", ID: "i"})
	if err != nil || string(ir.Private) != "imported" {
		t.Errorf("import %+v %v: want its private data", ir, err)
	}
	// A Read by key after a crash carries none.
	if _, err := host.Read(ctx, &ReadRequest{Type: "bucket", Name: "b", IdempotencyKey: "k"}); err != nil {
		t.Fatal(err)
	}
	if impl.got["Read"] != nil {
		t.Errorf("a read without private data was handed %q", impl.got["Read"])
	}
}
