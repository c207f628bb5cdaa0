package sdk

// Pure, nil-safe translations between the Go types of this package and the
// generated v1 messages. Both adapters (server.go, client.go) use them.

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/bulwark-iac/bulwark/sdk/proto/dynamic"
	pb "github.com/bulwark-iac/bulwark/sdk/proto/providerv1"
)

func toDynamic(a Attributes) (*pb.DynamicValue, error) {
	if a == nil {
		return nil, nil
	}
	b, err := json.Marshal(a)
	if err != nil {
		return nil, fmt.Errorf("encode attributes: %w", err)
	}
	return &pb.DynamicValue{Json: b}, nil
}

func fromDynamic(v *pb.DynamicValue) (Attributes, error) {
	if v == nil || len(v.Json) == 0 {
		return nil, nil
	}
	a, err := dynamic.Decode(v.Json)
	if err != nil {
		return nil, fmt.Errorf("decode attributes: %w", err)
	}
	return a, nil
}

func toDiagnostics(ds Diagnostics) []*pb.Diagnostic {
	if len(ds) == 0 {
		return nil
	}
	out := make([]*pb.Diagnostic, len(ds))
	for i, d := range ds {
		sev := pb.Diagnostic_SEVERITY_ERROR
		if d.Severity == SeverityWarning {
			sev = pb.Diagnostic_SEVERITY_WARNING
		}
		out[i] = &pb.Diagnostic{Severity: sev, Summary: d.Summary, Detail: d.Detail, AttributePath: d.AttributePath, Code: d.Code,
			Throttled: d.Throttled, RetryAfterMs: d.RetryAfter.Milliseconds()}
		if d.Throttled && d.RetryAfter > 0 && out[i].RetryAfterMs == 0 {
			out[i].RetryAfterMs = 1 // a wait under a millisecond is still a wait asked for
		}
	}
	return out
}

func fromDiagnostics(ds []*pb.Diagnostic) Diagnostics {
	if len(ds) == 0 {
		return nil
	}
	out := make(Diagnostics, 0, len(ds))
	for _, d := range ds {
		if d == nil {
			continue
		}
		sev := SeverityError
		if d.Severity == pb.Diagnostic_SEVERITY_WARNING {
			sev = SeverityWarning
		}
		out = append(out, Diagnostic{Severity: sev, Summary: d.Summary, Detail: d.Detail, AttributePath: d.AttributePath, Code: d.Code,
			Throttled: d.Throttled, RetryAfter: retryAfter(d)})
	}
	return out
}

func toProtection(p Protection) pb.Protection {
	switch p {
	case ProtectionEphemeral:
		return pb.Protection_PROTECTION_EPHEMERAL
	case ProtectionDurable:
		return pb.Protection_PROTECTION_DURABLE
	case ProtectionProtected:
		return pb.Protection_PROTECTION_PROTECTED
	}
	return pb.Protection_PROTECTION_UNSPECIFIED
}

func fromProtection(p pb.Protection) Protection {
	switch p {
	case pb.Protection_PROTECTION_EPHEMERAL:
		return ProtectionEphemeral
	case pb.Protection_PROTECTION_DURABLE:
		return ProtectionDurable
	case pb.Protection_PROTECTION_PROTECTED:
		return ProtectionProtected
	}
	return ProtectionUnspecified
}

var attrTypes = map[AttributeType]pb.Attribute_Type{
	TypeString: pb.Attribute_TYPE_STRING,
	TypeNumber: pb.Attribute_TYPE_NUMBER,
	TypeBool:   pb.Attribute_TYPE_BOOL,
	TypeList:   pb.Attribute_TYPE_LIST,
	TypeMap:    pb.Attribute_TYPE_MAP,
}

func toSchema(s *GetSchemaResponse) *pb.GetSchema_Response {
	if s == nil {
		return &pb.GetSchema_Response{}
	}
	out := &pb.GetSchema_Response{ProviderName: s.ProviderName, ProviderVersion: s.ProviderVersion, Diagnostics: toDiagnostics(s.Diagnostics)}
	for _, rt := range s.ResourceTypes {
		prt := &pb.ResourceType{Name: rt.Name, Description: rt.Description, Attributes: toAttributes(rt.Attributes)}
		if c := rt.Coexistence; c.Always || len(c.WhenDiffers) > 0 {
			prt.Coexistence = &pb.Coexistence{Always: c.Always, WhenDiffers: append([]string(nil), c.WhenDiffers...)}
		}
		out.ResourceTypes = append(out.ResourceTypes, prt)
	}
	if c := s.Capabilities; c != (Capabilities{}) {
		out.Capabilities = &pb.Capabilities{IdempotencyKeys: c.IdempotencyKeys, Import: c.Import, ReadMany: c.ReadMany, ValidateMany: c.ValidateMany, CreateMany: c.CreateMany, CreateReadsBack: c.CreateReadsBack, DeleteReadsBack: c.DeleteReadsBack, ReadData: c.ReadData, SchemaValidation: c.SchemaValidation, DeleteChecksKey: c.DeleteChecksKey}
	}
	out.ProviderConfig = toAttributes(s.ProviderConfig)
	for _, dt := range s.DataSources {
		out.DataSourceTypes = append(out.DataSourceTypes, &pb.DataSourceType{Name: dt.Name, Description: dt.Description, Attributes: toAttributes(dt.Attributes)})
	}
	return out
}

func toAttributes(as []Attribute) []*pb.Attribute {
	var out []*pb.Attribute
	for _, a := range as {
		out = append(out, &pb.Attribute{
			Name: a.Name, Type: attrTypes[a.Type], Required: a.Required, Computed: a.Computed,
			Sensitive: a.Sensitive, ForceNew: a.ForceNew, Description: a.Description,
		})
	}
	return out
}

func fromAttributes(as []*pb.Attribute) []Attribute {
	var out []Attribute
	for _, a := range as {
		if a == nil {
			continue
		}
		t := TypeUnspecified
		for k, v := range attrTypes {
			if v == a.Type {
				t = k
			}
		}
		out = append(out, Attribute{
			Name: a.Name, Type: t, Required: a.Required, Computed: a.Computed,
			Sensitive: a.Sensitive, ForceNew: a.ForceNew, Description: a.Description,
		})
	}
	return out
}

func fromSchema(s *pb.GetSchema_Response) *GetSchemaResponse {
	if s == nil {
		return &GetSchemaResponse{}
	}
	out := &GetSchemaResponse{ProviderName: s.ProviderName, ProviderVersion: s.ProviderVersion, Diagnostics: fromDiagnostics(s.Diagnostics)}
	for _, prt := range s.ResourceTypes {
		if prt == nil {
			continue
		}
		rt := ResourceType{Name: prt.Name, Description: prt.Description, Attributes: fromAttributes(prt.Attributes)}
		if c := prt.GetCoexistence(); c != nil {
			rt.Coexistence = Coexistence{Always: c.GetAlways(), WhenDiffers: append([]string(nil), c.GetWhenDiffers()...)}
		}
		out.ResourceTypes = append(out.ResourceTypes, rt)
	}
	if c := s.Capabilities; c != nil {
		out.Capabilities = Capabilities{IdempotencyKeys: c.IdempotencyKeys, Import: c.Import, ReadMany: c.GetReadMany(), ValidateMany: c.GetValidateMany(), CreateMany: c.GetCreateMany(), CreateReadsBack: c.GetCreateReadsBack(), DeleteReadsBack: c.GetDeleteReadsBack(), ReadData: c.GetReadData(), SchemaValidation: c.GetSchemaValidation(), DeleteChecksKey: c.GetDeleteChecksKey()}
	}
	out.ProviderConfig = fromAttributes(s.ProviderConfig)
	if out.Capabilities.ReadData {
		// Without the capability (an older plugin) there are no data
		// sources, whatever the schema says.
		for _, dt := range s.DataSourceTypes {
			if dt == nil {
				continue
			}
			out.DataSources = append(out.DataSources, DataSourceType{Name: dt.Name, Description: dt.Description, Attributes: fromAttributes(dt.Attributes)})
		}
	}
	return out
}

// retryAfter is a throttled diagnostic's wait; 0 for one that is not
// throttled, and for a negative or absurd value (over a day) from the
// wire.
func retryAfter(d *pb.Diagnostic) time.Duration {
	ms := d.RetryAfterMs
	if !d.Throttled || ms <= 0 || ms > int64(24*time.Hour/time.Millisecond) {
		return 0
	}
	return time.Duration(ms) * time.Millisecond
}
