package sdk

import (
	"context"
	"slices"
	"testing"
)

// withoutValidate is every method of a Provider but ValidateResource.
type withoutValidate interface {
	GetSchema(ctx context.Context, req *GetSchemaRequest) (*GetSchemaResponse, error)
	Configure(ctx context.Context, req *ConfigureRequest) (*ConfigureResponse, error)
	Read(ctx context.Context, req *ReadRequest) (*ReadResponse, error)
	Create(ctx context.Context, req *CreateRequest) (*CreateResponse, error)
	Update(ctx context.Context, req *UpdateRequest) (*UpdateResponse, error)
	Delete(ctx context.Context, req *DeleteRequest) (*DeleteResponse, error)
}

// noValidation is a provider with no validation of its own: it takes
// the SDK's (SchemaValidation).
type noValidation struct {
	SchemaValidation
	withoutValidate
}

// saysOwn is a provider with a validation of its own that says so.
type saysOwn struct{ *recorder }

func (saysOwn) ValidatesBySchema() bool { return false }

// Serve announces SchemaValidation for a provider whose validation is its
// schema (one embedding SchemaValidation), and for no other, over the real
// transport; such a provider, asked anyway (a host that predates it),
// still answers the schema's check.
func TestServeAnnouncesSchemaValidation(t *testing.T) {
	for _, tc := range []struct {
		name string
		impl Provider
		want bool
	}{
		{"embeds SchemaValidation", noValidation{withoutValidate: &recorder{}}, true},
		{"validates itself", &recorder{}, false},
		{"says it validates itself", saysOwn{&recorder{}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			host := dispense(t, tc.impl)
			s, err := host.GetSchema(t.Context(), &GetSchemaRequest{})
			if err != nil {
				t.Fatal(err)
			}
			if s.Capabilities.SchemaValidation != tc.want {
				t.Errorf("SchemaValidation %v, want %v", s.Capabilities.SchemaValidation, tc.want)
			}
			if !tc.want {
				return
			}
			vr, err := host.ValidateResource(t.Context(), &ValidateResourceRequest{Type: "bucket", Name: "b", Config: Attributes{"no_such": 1}})
			if err != nil {
				t.Fatal(err)
			}
			if !vr.Diagnostics.HasError() || !slices.Equal(vr.Diagnostics[0].AttributePath, []string{"no_such"}) {
				t.Errorf("an unknown attribute validated as %+v, want the schema's error at no_such", vr.Diagnostics)
			}
		})
	}
}
