package grpcv1

// Pure, nil-safe translations between the host's types (core/providers)
// and the generated v1 messages: the one place a host value becomes a wire
// value and back (the protection level among them).

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/bulwark-iac/bulwark/core/protection"
	"github.com/bulwark-iac/bulwark/core/providers"
	"github.com/bulwark-iac/bulwark/sdk/proto/dynamic"
	pb "github.com/bulwark-iac/bulwark/sdk/proto/providerv1"
)

func toDynamic(a providers.Attributes) (*pb.DynamicValue, error) {
	if a == nil {
		return nil, nil
	}
	b, err := json.Marshal(a)
	if err != nil {
		return nil, fmt.Errorf("encode attributes: %w", err)
	}
	return &pb.DynamicValue{Json: b}, nil
}

func fromDynamic(v *pb.DynamicValue) (providers.Attributes, error) {
	if v == nil || len(v.Json) == 0 {
		return nil, nil
	}
	a, err := dynamic.Decode(v.Json)
	if err != nil {
		return nil, fmt.Errorf("decode attributes: %w", err)
	}
	return a, nil
}

func fromDiagnostics(ds []*pb.Diagnostic) providers.Diagnostics {
	if len(ds) == 0 {
		return nil
	}
	out := make(providers.Diagnostics, 0, len(ds))
	for _, d := range ds {
		if d == nil {
			continue
		}
		sev := providers.SeverityError
		if d.Severity == pb.Diagnostic_SEVERITY_WARNING {
			sev = providers.SeverityWarning
		}
		out = append(out, providers.Diagnostic{Severity: sev, Summary: d.Summary, Detail: d.Detail, AttributePath: d.AttributePath, Code: d.Code,
			Throttled: d.Throttled, RetryAfter: retryAfter(d)})
	}
	return out
}

func toProtection(p protection.Level) pb.Protection {
	switch p {
	case protection.Ephemeral:
		return pb.Protection_PROTECTION_EPHEMERAL
	case protection.Durable:
		return pb.Protection_PROTECTION_DURABLE
	case protection.Protected:
		return pb.Protection_PROTECTION_PROTECTED
	}
	return pb.Protection_PROTECTION_UNSPECIFIED
}

var attrTypes = map[providers.AttributeType]pb.Attribute_Type{
	providers.TypeString: pb.Attribute_TYPE_STRING,
	providers.TypeNumber: pb.Attribute_TYPE_NUMBER,
	providers.TypeBool:   pb.Attribute_TYPE_BOOL,
	providers.TypeList:   pb.Attribute_TYPE_LIST,
	providers.TypeMap:    pb.Attribute_TYPE_MAP,
}

func fromAttributes(as []*pb.Attribute) []providers.Attribute {
	var out []providers.Attribute
	for _, a := range as {
		if a == nil {
			continue
		}
		t := providers.TypeUnspecified
		for k, v := range attrTypes {
			if v == a.Type {
				t = k
			}
		}
		out = append(out, providers.Attribute{
			Name: a.Name, Type: t, Required: a.Required, Computed: a.Computed,
			Sensitive: a.Sensitive, ForceNew: a.ForceNew, Description: a.Description,
		})
	}
	return out
}

func fromSchema(s *pb.GetSchema_Response) *providers.GetSchemaResponse {
	if s == nil {
		return &providers.GetSchemaResponse{}
	}
	out := &providers.GetSchemaResponse{ProviderName: s.ProviderName, ProviderVersion: s.ProviderVersion, Diagnostics: fromDiagnostics(s.Diagnostics)}
	for _, prt := range s.ResourceTypes {
		if prt == nil {
			continue
		}
		rt := providers.ResourceType{Name: prt.Name, Description: prt.Description, Attributes: fromAttributes(prt.Attributes)}
		if c := prt.GetCoexistence(); c != nil {
			rt.Coexistence = providers.Coexistence{Always: c.GetAlways(), WhenDiffers: append([]string(nil), c.GetWhenDiffers()...)}
		}
		out.ResourceTypes = append(out.ResourceTypes, rt)
	}
	if c := s.Capabilities; c != nil {
		out.Capabilities = providers.Capabilities{IdempotencyKeys: c.IdempotencyKeys, Import: c.Import, ReadMany: c.GetReadMany(), ValidateMany: c.GetValidateMany(), CreateMany: c.GetCreateMany(), CreateReadsBack: c.GetCreateReadsBack(), DeleteReadsBack: c.GetDeleteReadsBack(), ReadData: c.GetReadData(), SchemaValidation: c.GetSchemaValidation(), DeleteChecksKey: c.GetDeleteChecksKey()}
	}
	out.ProviderConfig = fromAttributes(s.ProviderConfig)
	if out.Capabilities.ReadData {
		// Without the capability (a plugin that predates data sources)
		// there are none, whatever the schema lists.
		for _, dt := range s.DataSourceTypes {
			if dt == nil {
				continue
			}
			out.DataSources = append(out.DataSources, providers.DataSourceType{Name: dt.Name, Description: dt.Description, Attributes: fromAttributes(dt.Attributes)})
		}
	}
	return out
}

// retryAfter is a throttled diagnostic's wait; 0 for one that is not
// throttled, and for a negative or absurd value (over a day): a plugin's
// hint never parks a call for longer.
func retryAfter(d *pb.Diagnostic) time.Duration {
	ms := d.RetryAfterMs
	if !d.Throttled || ms <= 0 || ms > int64(24*time.Hour/time.Millisecond) {
		return 0
	}
	return time.Duration(ms) * time.Millisecond
}
