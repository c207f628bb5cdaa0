package sdk

import (
	"context"
	"fmt"
	"testing"
)

// backReader is a provider whose Read goes wrong as readMode says (its
// Create never does, but for a resource named "bad"), and whose Create
// hands its resource private data Read reports back.
type backReader struct {
	recorder
	readMode string // "", "error", "panic", "error diagnostic", "batch too few"
}

func (b *backReader) Create(_ context.Context, req *CreateRequest) (*CreateResponse, error) {
	b.record("Create", req)
	if req.Name == "bad" {
		return &CreateResponse{Diagnostics: Diagnostics{Errorf("cannot make bad")}}, nil
	}
	return &CreateResponse{ID: "id-" + req.Name, Private: []byte("p-" + req.Name)}, nil
}

func (b *backReader) Read(_ context.Context, req *ReadRequest) (*ReadResponse, error) {
	b.record("Read", req)
	return b.read(req)
}

func (b *backReader) read(req *ReadRequest) (*ReadResponse, error) {
	switch b.readMode {
	case "error":
		return nil, fmt.Errorf("the read failed")
	case "panic":
		panic("the read panicked")
	case "error diagnostic":
		return &ReadResponse{Diagnostics: Diagnostics{Errorf("the read failed")}}, nil
	}
	return &ReadResponse{Exists: true, ID: req.ID, Attributes: Attributes{"name": req.Name, "private": string(req.Private), "size": req.Config["size"]}}, nil
}

// batchBackReader is a backReader with ReadMany.
type batchBackReader struct{ backReader }

func (b *batchBackReader) ReadMany(_ context.Context, req *ReadManyRequest) (*ReadManyResponse, error) {
	b.record("ReadMany", req)
	out := &ReadManyResponse{}
	for _, r := range req.Reads {
		rr, err := b.read(r)
		if err != nil {
			return nil, err
		}
		out.Results = append(out.Results, rr)
	}
	if b.readMode == "batch too few" {
		out.Results = out.Results[1:]
	}
	return out, nil
}

// A Create that asks for read_back is answered, over the real transport,
// with what the provider's own Read returns for the resource just made (by
// its new id, the request's config and the answer's private data); one
// that does not ask, or fails, gets none and no Read is made; and a read
// that goes wrong takes the read-back away, never the Create's success.
func TestCreateReadsBack(t *testing.T) {
	tests := []struct {
		name, resource, readMode string
		ask                      bool
		wantBack, wantRead       bool
	}{
		{name: "asked", resource: "a", ask: true, wantBack: true, wantRead: true},
		{name: "not asked", resource: "a"},
		{name: "create failed", resource: "bad", ask: true},
		{name: "read error", resource: "a", readMode: "error", ask: true, wantRead: true},
		{name: "read panic", resource: "a", readMode: "panic", ask: true, wantRead: true},
		{name: "read error diagnostic", resource: "a", readMode: "error diagnostic", ask: true, wantRead: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			impl := &backReader{readMode: tt.readMode}
			host := dispense(t, impl)
			cfg := Attributes{"name": tt.resource, "size": 3.0, "id_hint": "h"}
			resp, err := host.Create(context.Background(), &CreateRequest{Type: "bucket", Name: tt.resource, Config: cfg, IdempotencyKey: "op_1/" + tt.resource, ReadBack: tt.ask})
			if err != nil {
				t.Fatal(err)
			}
			if failed := resp.Diagnostics.HasError(); failed != (tt.resource == "bad") {
				t.Fatalf("the Create's diagnostics %v: the read-back must not change its outcome", resp.Diagnostics)
			}
			if got := impl.count("Read") == 1; got != tt.wantRead {
				t.Errorf("the provider's Reads %d, want a read %v", impl.count("Read"), tt.wantRead)
			}
			if (resp.ReadBack != nil) != tt.wantBack {
				t.Fatalf("read-back %+v, want one %v", resp.ReadBack, tt.wantBack)
			}
			if !tt.wantBack {
				return
			}
			rb := resp.ReadBack
			if !rb.Exists || rb.ID != "id-a" || rb.Attributes["private"] != "p-a" || rb.Attributes["size"] != 3.0 {
				t.Errorf("read-back %+v: want the resource by its new id, read with its private data and the request's config", rb)
			}
			if got := impl.last("Read").(*ReadRequest); got.Type != "bucket" || got.Name != "a" || got.ID != "id-a" || got.IdempotencyKey != "" {
				t.Errorf("the read-back's Read %+v", got)
			}
		})
	}
}

// Each Create of a CreateMany that asked and succeeded is read back: in one
// ReadMany when the provider has it, else a Read each; a batch read that
// answers wrong takes every read-back away and leaves the Creates as they
// were.
func TestCreateManyReadsBack(t *testing.T) {
	one := &backReader{}
	batch := &batchBackReader{}
	wrong := &batchBackReader{backReader{readMode: "batch too few"}}
	tests := []struct {
		name     string
		provider interface {
			Provider
			count(string) int
		}
		wantBacks        []bool // per request: a, bad, c, d (d does not ask)
		reads, readManys int
	}{
		{"reads one by one", one, []bool{true, false, true, false}, 2, 0},
		{"one ReadMany", batch, []bool{true, false, true, false}, 0, 1},
		{"ReadMany answers too few", wrong, []bool{false, false, false, false}, 0, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			host := dispense(t, tt.provider).(BatchCreator)
			var creates []*CreateRequest
			for _, n := range []string{"a", "bad", "c", "d"} {
				creates = append(creates, &CreateRequest{Type: "bucket", Name: n, Config: Attributes{"name": n, "id_hint": "h"}, IdempotencyKey: "op_1/" + n, ReadBack: n != "d"})
			}
			resp, err := host.CreateMany(context.Background(), &CreateManyRequest{Creates: creates})
			if err != nil || resp.Diagnostics.HasError() || len(resp.Results) != 4 {
				t.Fatalf("CreateMany: %+v %v", resp, err)
			}
			for i, r := range resp.Results {
				name := creates[i].Name
				if failed := r.Diagnostics.HasError(); failed != (name == "bad") {
					t.Errorf("%s: diagnostics %v", name, r.Diagnostics)
				}
				if (r.ReadBack != nil) != tt.wantBacks[i] {
					t.Errorf("%s: read-back %+v, want one %v", name, r.ReadBack, tt.wantBacks[i])
				}
				if r.ReadBack != nil && (r.ReadBack.ID != "id-"+name || r.ReadBack.Attributes["private"] != "p-"+name) {
					t.Errorf("%s: read-back %+v is not its own", name, r.ReadBack)
				}
			}
			if got, gotMany := tt.provider.count("Read"), tt.provider.count("ReadMany"); got != tt.reads || gotMany != tt.readManys {
				t.Errorf("Reads %d and ReadManys %d, want %d and %d", got, gotMany, tt.reads, tt.readManys)
			}
		})
	}
}

func (b *backReader) Delete(_ context.Context, req *DeleteRequest) (*DeleteResponse, error) {
	b.record("Delete", req)
	if req.Name == "bad" {
		return &DeleteResponse{Diagnostics: Diagnostics{Errorf("cannot delete bad")}}, nil
	}
	return &DeleteResponse{}, nil
}

// A Delete that asks for read_back is answered with what the provider's
// Read returns for the resource by its id (with the request's private
// data) once deleted; one refused as protected never reaches the provider
// and reads nothing; a failed Delete reads nothing; and a read that goes
// wrong takes the read-back away, never the Delete's success.
func TestDeleteReadsBack(t *testing.T) {
	tests := []struct {
		name, resource, readMode string
		protection               Protection
		ask                      bool
		wantBack, wantRead       bool
		wantDelete               bool
	}{
		{name: "asked", resource: "a", ask: true, wantBack: true, wantRead: true, wantDelete: true},
		{name: "not asked", resource: "a", wantDelete: true},
		{name: "protected", resource: "a", protection: ProtectionProtected, ask: true},
		{name: "delete failed", resource: "bad", ask: true, wantDelete: true},
		{name: "read error", resource: "a", readMode: "error", ask: true, wantRead: true, wantDelete: true},
		{name: "read panic", resource: "a", readMode: "panic", ask: true, wantRead: true, wantDelete: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			impl := &backReader{readMode: tt.readMode}
			host := dispense(t, impl)
			resp, err := host.Delete(context.Background(), &DeleteRequest{Type: "bucket", Name: tt.resource, ID: "id-" + tt.resource, Protection: tt.protection, Private: []byte("p-" + tt.resource), ReadBack: tt.ask})
			if err != nil {
				t.Fatal(err)
			}
			if failed := resp.Diagnostics.HasError(); failed != (tt.resource == "bad" || tt.protection == ProtectionProtected) {
				t.Fatalf("the Delete's diagnostics %v: the read-back must not change its outcome", resp.Diagnostics)
			}
			if got := impl.count("Delete") == 1; got != tt.wantDelete {
				t.Fatalf("the provider's Deletes %d, want a delete %v", impl.count("Delete"), tt.wantDelete)
			}
			if got := impl.count("Read") == 1; got != tt.wantRead {
				t.Errorf("the provider's Reads %d, want a read %v", impl.count("Read"), tt.wantRead)
			}
			if (resp.ReadBack != nil) != tt.wantBack {
				t.Fatalf("read-back %+v, want one %v", resp.ReadBack, tt.wantBack)
			}
			if tt.wantBack && (resp.ReadBack.ID != "id-a" || resp.ReadBack.Attributes["private"] != "p-a") {
				t.Errorf("read-back %+v: want the read by the deleted id, with its private data", resp.ReadBack)
			}
		})
	}
}
