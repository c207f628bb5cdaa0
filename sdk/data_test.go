package sdk

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// reader is a provider with one data source, "account": argument "name"
// (required), "region" (optional), results "id" and "secret" (sensitive).
type reader struct {
	recorder
	reads []*ReadDataRequest
	fail  error
}

func (r *reader) GetSchema(ctx context.Context, req *GetSchemaRequest) (*GetSchemaResponse, error) {
	s, err := r.recorder.GetSchema(ctx, req)
	if err != nil {
		return nil, err
	}
	s.DataSources = []DataSourceType{{Name: "account", Description: "an account", Attributes: []Attribute{
		{Name: "name", Type: TypeString, Required: true},
		{Name: "region", Type: TypeString},
		{Name: "id", Type: TypeString, Computed: true},
		{Name: "secret", Type: TypeString, Computed: true, Sensitive: true},
	}}}
	return s, nil
}

func (r *reader) ReadData(_ context.Context, req *ReadDataRequest) (*ReadDataResponse, error) {
	r.reads = append(r.reads, req)
	if r.fail != nil {
		return nil, r.fail
	}
	if req.Config["name"] == "panic" {
		panic("boom")
	}
	return &ReadDataResponse{Attributes: Attributes{"name": req.Config["name"], "id": "acct-" + req.Config["name"].(string), "secret": "s3cr3t"}}, nil
}

func TestCheckDataConfig(t *testing.T) {
	dt := DataSourceType{Name: "account", Attributes: []Attribute{
		{Name: "name", Type: TypeString, Required: true},
		{Name: "count", Type: TypeNumber},
		{Name: "id", Type: TypeString, Computed: true},
	}}
	tests := []struct {
		name string
		cfg  Attributes
		want []string // the summaries, in order
	}{
		{"valid", Attributes{"name": "a", "count": 2.0}, nil},
		{"optional left out", Attributes{"name": "a"}, nil},
		{"missing required", Attributes{}, []string{`missing required attribute "name" for data source account`}},
		{"null required", Attributes{"name": nil}, []string{`missing required attribute "name" for data source account`}},
		{"unknown", Attributes{"name": "a", "nope": 1.0}, []string{`unknown attribute "nope" for data source account`}},
		{"result set", Attributes{"name": "a", "id": "x"}, []string{`attribute "id" is computed by the provider and cannot be set`}},
		{"wrong type", Attributes{"name": true, "count": "2"}, []string{`attribute "count" must be a number, not a string`, `attribute "name" must be a string, not a bool`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, d := range CheckDataConfig(dt, tt.cfg) {
				got = append(got, d.Summary)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// Over the real transport: Serve announces ReadData and the data sources
// of a provider that implements DataReader, checks the config before the
// provider sees it, and answers what it read.
func TestGRPCReadData(t *testing.T) {
	r := &reader{}
	host := dispense(t, r)
	ctx := context.Background()
	s, err := host.GetSchema(ctx, &GetSchemaRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if !s.Capabilities.ReadData {
		t.Errorf("capabilities %+v: no ReadData", s.Capabilities)
	}
	dt, ok := s.DataSource("account")
	if !ok || dt.Description != "an account" || len(dt.Attributes) != 4 {
		t.Fatalf("data source %+v %v", dt, ok)
	}
	if a, _ := dt.Attribute("secret"); !a.Sensitive || !a.Computed {
		t.Errorf("secret is %+v", a)
	}
	dr := host.(DataReader)
	tests := []struct {
		name    string
		req     *ReadDataRequest
		want    Attributes
		wantErr string // in the diagnostics
		reaches bool   // the provider saw it
	}{
		{"read", &ReadDataRequest{Type: "account", Name: "me", Config: Attributes{"name": "alice"}},
			Attributes{"name": "alice", "id": "acct-alice", "secret": "s3cr3t"}, "", true},
		{"unknown type", &ReadDataRequest{Type: "nope", Name: "me", Config: Attributes{"name": "a"}}, nil, `unknown data source type "nope"`, false},
		{"missing argument", &ReadDataRequest{Type: "account", Name: "me", Config: Attributes{}}, nil, `missing required attribute "name"`, false},
		{"result in config", &ReadDataRequest{Type: "account", Name: "me", Config: Attributes{"name": "a", "secret": "x"}}, nil, `attribute "secret" is computed`, false},
		{"panic", &ReadDataRequest{Type: "account", Name: "me", Config: Attributes{"name": "panic"}}, nil, "provider panicked: boom", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(r.reads)
			resp, err := dr.ReadData(ctx, tt.req)
			if err != nil {
				t.Fatal(err)
			}
			if reached := len(r.reads) > before; reached != tt.reaches {
				t.Errorf("reached the provider: %v, want %v", reached, tt.reaches)
			}
			if tt.wantErr == "" {
				if resp.Diagnostics.HasError() || !reflect.DeepEqual(resp.Attributes, tt.want) {
					t.Errorf("got %+v %v, want %+v", resp.Attributes, resp.Diagnostics, tt.want)
				}
				return
			}
			if !resp.Diagnostics.HasError() || !strings.Contains(resp.Diagnostics.Err().Error(), tt.wantErr) || resp.Attributes != nil {
				t.Errorf("got %+v %v, want an error with %q", resp.Attributes, resp.Diagnostics, tt.wantErr)
			}
		})
	}
	// A provider's error is an error diagnostic, and no attributes.
	r.fail = errors.New("no such account")
	resp, err := dr.ReadData(ctx, &ReadDataRequest{Type: "account", Name: "me", Config: Attributes{"name": "bob"}})
	if err != nil || !resp.Diagnostics.HasError() || !strings.Contains(resp.Diagnostics.Err().Error(), "no such account") || resp.Attributes != nil {
		t.Errorf("failed read: %+v %v", resp, err)
	}
}

// A provider that is no DataReader offers no data sources, even if its
// schema lists some, and its ReadData is ErrDataUnsupported.
func TestGRPCNoDataReader(t *testing.T) {
	host := dispense(t, &listsButCannotRead{})
	ctx := context.Background()
	s, err := host.GetSchema(ctx, &GetSchemaRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Capabilities.ReadData || s.DataSources != nil {
		t.Errorf("a provider that cannot read offers %+v, %+v", s.Capabilities, s.DataSources)
	}
	_, err = host.(DataReader).ReadData(ctx, &ReadDataRequest{Type: "account", Name: "me", Config: Attributes{"name": "a"}})
	if !errors.Is(err, ErrDataUnsupported) {
		t.Errorf("ReadData of a provider that cannot: %v, want ErrDataUnsupported", err)
	}
}

type listsButCannotRead struct{ recorder }

func (l *listsButCannotRead) GetSchema(ctx context.Context, req *GetSchemaRequest) (*GetSchemaResponse, error) {
	s, err := l.recorder.GetSchema(ctx, req)
	if err != nil {
		return nil, err
	}
	s.DataSources = []DataSourceType{{Name: "account"}}
	return s, nil
}
