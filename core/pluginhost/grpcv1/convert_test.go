package grpcv1

import (
	"reflect"
	"testing"
	"time"

	"github.com/bulwark-iac/bulwark/core/protection"
	"github.com/bulwark-iac/bulwark/core/providers"
	pb "github.com/bulwark-iac/bulwark/sdk/proto/providerv1"
)

// A level becomes the wire's enum here and nowhere else: each level its
// own value, and no level (or one out of range) the unspecified one, which
// the sdk's server treats as no level at all.
func TestToProtection(t *testing.T) {
	tests := []struct {
		in   protection.Level
		want pb.Protection
	}{
		{protection.Ephemeral, pb.Protection_PROTECTION_EPHEMERAL},
		{protection.Durable, pb.Protection_PROTECTION_DURABLE},
		{protection.Protected, pb.Protection_PROTECTION_PROTECTED},
		{protection.Unspecified, pb.Protection_PROTECTION_UNSPECIFIED},
		{protection.Level(42), pb.Protection_PROTECTION_UNSPECIFIED},
	}
	for _, tt := range tests {
		if got := toProtection(tt.in); got != tt.want {
			t.Errorf("toProtection(%v) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

// A schema off the wire keeps every attribute, the coexistence rule and
// every capability, and tolerates the nils a hostile plugin may send.
func TestFromSchema(t *testing.T) {
	tests := []struct {
		name string
		in   *pb.GetSchema_Response
		want *providers.GetSchemaResponse
	}{
		{"nil", nil, &providers.GetSchemaResponse{}},
		{"full", &pb.GetSchema_Response{
			ProviderName: "p", ProviderVersion: "1",
			ResourceTypes: []*pb.ResourceType{nil, {
				Name:        "bucket",
				Attributes:  []*pb.Attribute{nil, {Name: "name", Type: pb.Attribute_TYPE_STRING, Required: true, ForceNew: true}, {Name: "tags", Type: pb.Attribute_TYPE_MAP, Sensitive: true}},
				Coexistence: &pb.Coexistence{WhenDiffers: []string{"name"}},
			}},
			Capabilities:   &pb.Capabilities{IdempotencyKeys: true, Import: true, ReadMany: true, ValidateMany: true, CreateMany: true, CreateReadsBack: true, DeleteReadsBack: true, DeleteChecksKey: true},
			ProviderConfig: []*pb.Attribute{{Name: "region", Type: pb.Attribute_TYPE_STRING, Required: true}},
			Diagnostics: []*pb.Diagnostic{nil, {Severity: pb.Diagnostic_SEVERITY_WARNING, Summary: "old"},
				{Severity: pb.Diagnostic_SEVERITY_ERROR, Summary: "slow down", Throttled: true, RetryAfterMs: 1200},
				{Severity: pb.Diagnostic_SEVERITY_ERROR, Summary: "bad hint", Throttled: true, RetryAfterMs: -1}},
		}, &providers.GetSchemaResponse{
			ProviderName: "p", ProviderVersion: "1",
			ResourceTypes: []providers.ResourceType{{
				Name: "bucket",
				Attributes: []providers.Attribute{
					{Name: "name", Type: providers.TypeString, Required: true, ForceNew: true},
					{Name: "tags", Type: providers.TypeMap, Sensitive: true},
				},
				Coexistence: providers.Coexistence{WhenDiffers: []string{"name"}},
			}},
			Capabilities:   providers.Capabilities{IdempotencyKeys: true, Import: true, ReadMany: true, ValidateMany: true, CreateMany: true, CreateReadsBack: true, DeleteReadsBack: true, DeleteChecksKey: true},
			ProviderConfig: []providers.Attribute{{Name: "region", Type: providers.TypeString, Required: true}},
			Diagnostics: providers.Diagnostics{{Severity: providers.SeverityWarning, Summary: "old"},
				{Severity: providers.SeverityError, Summary: "slow down", Throttled: true, RetryAfter: 1200 * time.Millisecond},
				{Severity: providers.SeverityError, Summary: "bad hint", Throttled: true}},
		}},
		{"data sources", &pb.GetSchema_Response{
			Capabilities: &pb.Capabilities{ReadData: true},
			DataSourceTypes: []*pb.DataSourceType{nil, {Name: "lookup", Description: "finds", Attributes: []*pb.Attribute{
				{Name: "name", Type: pb.Attribute_TYPE_STRING, Required: true},
				{Name: "token", Type: pb.Attribute_TYPE_STRING, Computed: true, Sensitive: true},
			}}},
		}, &providers.GetSchemaResponse{
			Capabilities: providers.Capabilities{ReadData: true},
			DataSources: []providers.DataSourceType{{Name: "lookup", Description: "finds", Attributes: []providers.Attribute{
				{Name: "name", Type: providers.TypeString, Required: true},
				{Name: "token", Type: providers.TypeString, Computed: true, Sensitive: true},
			}}},
		}},
		// A schema that lists data sources without the capability offers
		// none: the host treats a missing capability as no data sources.
		{"data sources without the capability", &pb.GetSchema_Response{
			Capabilities:    &pb.Capabilities{Import: true},
			DataSourceTypes: []*pb.DataSourceType{{Name: "lookup"}},
		}, &providers.GetSchemaResponse{Capabilities: providers.Capabilities{Import: true}}},
		{"data sources and no capabilities at all", &pb.GetSchema_Response{
			DataSourceTypes: []*pb.DataSourceType{{Name: "lookup"}},
		}, &providers.GetSchemaResponse{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := fromSchema(tt.in); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("fromSchema:\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}
