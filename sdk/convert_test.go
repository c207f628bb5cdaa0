package sdk

import (
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	pb "github.com/bulwark-iac/bulwark/sdk/proto/providerv1"
)

// wire sends a message through its binary encoding, as gRPC does, so a
// round trip also proves the fields survive the real encoding.
func wire[T proto.Message](t *testing.T, m T, fresh T) T {
	t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatalf("marshal %T: %v", m, err)
	}
	if err := proto.Unmarshal(b, fresh); err != nil {
		t.Fatalf("unmarshal %T: %v", m, err)
	}
	return fresh
}

func TestSchemaRoundTrip(t *testing.T) {
	full := &GetSchemaResponse{
		ProviderName:    "mock",
		ProviderVersion: "1.2.3",
		ResourceTypes: []ResourceType{
			{Name: "bucket", Description: "a bucket", Attributes: []Attribute{
				{Name: "name", Type: TypeString, Required: true, Description: "the name"},
				{Name: "size", Type: TypeNumber},
				{Name: "zone", Type: TypeString, ForceNew: true},
				{Name: "arn", Type: TypeString, Computed: true},
				{Name: "secret", Type: TypeString, Sensitive: true},
				{Name: "enabled", Type: TypeBool},
				{Name: "zones", Type: TypeList},
				{Name: "tags", Type: TypeMap},
				{Name: "anything", Type: TypeUnspecified},
			}},
			{Name: "empty"},
		},
		Diagnostics: Diagnostics{
			{Severity: SeverityWarning, Summary: "old", Detail: "upgrade", AttributePath: []string{"a", "b"}},
		},
	}
	withData := &GetSchemaResponse{
		ProviderName: "mock",
		Capabilities: Capabilities{ReadData: true},
		DataSources: []DataSourceType{
			{Name: "lookup", Description: "finds one", Attributes: []Attribute{
				{Name: "name", Type: TypeString, Required: true},
				{Name: "zone", Type: TypeString},
				{Name: "id", Type: TypeString, Computed: true},
				{Name: "token", Type: TypeString, Computed: true, Sensitive: true},
			}},
		},
	}
	tests := []struct {
		name string
		in   *GetSchemaResponse
		want *GetSchemaResponse
	}{
		{"nil", nil, &GetSchemaResponse{}},
		{"empty", &GetSchemaResponse{}, &GetSchemaResponse{}},
		{"every attribute type and flag", full, full},
		{"data sources", withData, withData},
		// Data sources without the capability (a plugin that lists them
		// but cannot read) are none.
		{"data sources without the capability", &GetSchemaResponse{DataSources: withData.DataSources}, &GetSchemaResponse{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := fromSchema(wire(t, toSchema(tt.in), &pb.GetSchema_Response{}))
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("round trip:\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestToSchemaAttributeTypes(t *testing.T) {
	tests := []struct {
		in   AttributeType
		want pb.Attribute_Type
	}{
		{TypeString, pb.Attribute_TYPE_STRING},
		{TypeNumber, pb.Attribute_TYPE_NUMBER},
		{TypeBool, pb.Attribute_TYPE_BOOL},
		{TypeList, pb.Attribute_TYPE_LIST},
		{TypeMap, pb.Attribute_TYPE_MAP},
		{TypeUnspecified, pb.Attribute_TYPE_UNSPECIFIED},
		{AttributeType(99), pb.Attribute_TYPE_UNSPECIFIED},
	}
	for _, tt := range tests {
		t.Run(tt.in.String(), func(t *testing.T) {
			out := toSchema(&GetSchemaResponse{ResourceTypes: []ResourceType{{Name: "t", Attributes: []Attribute{{Name: "a", Type: tt.in}}}}})
			if got := out.ResourceTypes[0].Attributes[0].Type; got != tt.want {
				t.Errorf("toSchema type %v = %v, want %v", tt.in, got, tt.want)
			}
		})
	}
}

func TestFromSchemaNilSafety(t *testing.T) {
	in := &pb.GetSchema_Response{
		ProviderName: "p",
		ResourceTypes: []*pb.ResourceType{
			nil,
			{Name: "t", Attributes: []*pb.Attribute{nil, {Name: "a", Type: pb.Attribute_Type(42)}}},
		},
		Diagnostics: []*pb.Diagnostic{nil, {Summary: "x"}},
	}
	got := fromSchema(in)
	want := &GetSchemaResponse{
		ProviderName:  "p",
		ResourceTypes: []ResourceType{{Name: "t", Attributes: []Attribute{{Name: "a", Type: TypeUnspecified}}}},
		Diagnostics:   Diagnostics{{Severity: SeverityError, Summary: "x"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("fromSchema:\n got %+v\nwant %+v", got, want)
	}
}

func TestDiagnosticsRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		in   Diagnostics
		want Diagnostics
	}{
		{"nil", nil, nil},
		{"empty is nil", Diagnostics{}, nil},
		{"error with path", Diagnostics{{Severity: SeverityError, Summary: "bad", Detail: "very", AttributePath: []string{"tags", "team"}}},
			Diagnostics{{Severity: SeverityError, Summary: "bad", Detail: "very", AttributePath: []string{"tags", "team"}}}},
		{"warning kept", Diagnostics{{Severity: SeverityWarning, Summary: "w"}}, Diagnostics{{Severity: SeverityWarning, Summary: "w"}}},
		// An unset severity must never be read as harmless.
		{"zero severity is an error", Diagnostics{{Summary: "z"}}, Diagnostics{{Severity: SeverityError, Summary: "z"}}},
		{"order kept", Diagnostics{Errorf("one"), {Severity: SeverityWarning, Summary: "two"}, Errorf("three")},
			Diagnostics{Errorf("one"), {Severity: SeverityWarning, Summary: "two"}, Errorf("three")}},
		{"throttled with a wait", Diagnostics{Throttled(1500*time.Millisecond, "slow down")}, Diagnostics{Throttled(1500*time.Millisecond, "slow down")}},
		{"throttled without a wait", Diagnostics{Throttled(0, "slow down")}, Diagnostics{Throttled(0, "slow down")}},
		// A wait under the wire's millisecond is still a wait asked for.
		{"throttled under a millisecond", Diagnostics{Throttled(time.Microsecond, "s")}, Diagnostics{Throttled(time.Millisecond, "s")}},
		{"negative wait is none", Diagnostics{{Severity: SeverityError, Summary: "s", Throttled: true, RetryAfter: -time.Second}}, Diagnostics{Throttled(0, "s")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msg := wire(t, &pb.Read_Response{Diagnostics: toDiagnostics(tt.in)}, &pb.Read_Response{})
			got := fromDiagnostics(msg.Diagnostics)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("round trip = %#v, want %#v", got, tt.want)
			}
		})
	}
}

func TestFromDiagnosticsSeverity(t *testing.T) {
	tests := []struct {
		in   pb.Diagnostic_Severity
		want Severity
	}{
		{pb.Diagnostic_SEVERITY_ERROR, SeverityError},
		{pb.Diagnostic_SEVERITY_WARNING, SeverityWarning},
		{pb.Diagnostic_SEVERITY_UNSPECIFIED, SeverityError},
		{pb.Diagnostic_Severity(17), SeverityError},
	}
	for _, tt := range tests {
		got := fromDiagnostics([]*pb.Diagnostic{{Severity: tt.in, Summary: "s"}})
		if len(got) != 1 || got[0].Severity != tt.want {
			t.Errorf("severity %v -> %+v, want %v", tt.in, got, tt.want)
		}
	}
	if got := fromDiagnostics([]*pb.Diagnostic{nil, nil}); len(got) != 0 {
		t.Errorf("only nil diagnostics -> %+v, want none", got)
	}
}

// A wait from the wire is read only on a throttled diagnostic, and never
// as negative or absurd.
func TestFromDiagnosticsRetryAfter(t *testing.T) {
	tests := []struct {
		name string
		in   *pb.Diagnostic
		want time.Duration
	}{
		{"throttled", &pb.Diagnostic{Throttled: true, RetryAfterMs: 250}, 250 * time.Millisecond},
		{"not throttled", &pb.Diagnostic{RetryAfterMs: 250}, 0},
		{"negative", &pb.Diagnostic{Throttled: true, RetryAfterMs: -5}, 0},
		{"over a day", &pb.Diagnostic{Throttled: true, RetryAfterMs: 1 << 60}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := fromDiagnostics([]*pb.Diagnostic{tt.in})
			if len(got) != 1 || got[0].RetryAfter != tt.want || got[0].Throttled != tt.in.Throttled {
				t.Errorf("got %+v, want RetryAfter %v", got, tt.want)
			}
		})
	}
}

func TestProtectionRoundTrip(t *testing.T) {
	tests := []struct {
		in   Protection
		wire pb.Protection
		back Protection
	}{
		{ProtectionEphemeral, pb.Protection_PROTECTION_EPHEMERAL, ProtectionEphemeral},
		{ProtectionDurable, pb.Protection_PROTECTION_DURABLE, ProtectionDurable},
		{ProtectionProtected, pb.Protection_PROTECTION_PROTECTED, ProtectionProtected},
		{ProtectionUnspecified, pb.Protection_PROTECTION_UNSPECIFIED, ProtectionUnspecified},
		{Protection(9), pb.Protection_PROTECTION_UNSPECIFIED, ProtectionUnspecified},
	}
	for _, tt := range tests {
		t.Run(tt.in.String(), func(t *testing.T) {
			w := toProtection(tt.in)
			if w != tt.wire {
				t.Errorf("toProtection(%v) = %v, want %v", tt.in, w, tt.wire)
			}
			if got := fromProtection(wire(t, &pb.Delete_Request{Protection: w}, &pb.Delete_Request{}).GetProtection()); got != tt.back {
				t.Errorf("fromProtection(%v) = %v, want %v", w, got, tt.back)
			}
		})
	}
	if got := fromProtection(pb.Protection(42)); got != ProtectionUnspecified {
		t.Errorf("fromProtection(42) = %v, want unspecified", got)
	}
}

func TestParseProtection(t *testing.T) {
	tests := []struct {
		in   string
		want Protection
		ok   bool
	}{
		{"", ProtectionEphemeral, true},
		{"ephemeral", ProtectionEphemeral, true},
		{"durable", ProtectionDurable, true},
		{"protected", ProtectionProtected, true},
		{"Protected", ProtectionUnspecified, false},
		{"unspecified", ProtectionUnspecified, false},
		{"permanent", ProtectionUnspecified, false},
	}
	for _, tt := range tests {
		got, ok := ParseProtection(tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("ParseProtection(%q) = %v, %v; want %v, %v", tt.in, got, ok, tt.want, tt.ok)
		}
		if ok && got.String() != tt.in && tt.in != "" {
			t.Errorf("ParseProtection(%q).String() = %q", tt.in, got.String())
		}
	}
}

func TestDynamicRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		in   Attributes
		want Attributes
	}{
		{"nil stays nil", nil, nil},
		{"empty stays empty, not nil", Attributes{}, Attributes{}},
		{"json values", Attributes{"s": "x", "n": 1.5, "b": true, "null": nil, "l": []any{"a", 2.0}, "m": map[string]any{"k": "v"}},
			Attributes{"s": "x", "n": 1.5, "b": true, "null": nil, "l": []any{"a", 2.0}, "m": map[string]any{"k": "v"}}},
		{"ints become float64", Attributes{"i": 2, "i64": int64(-7), "u": uint(3)}, Attributes{"i": 2.0, "i64": -7.0, "u": 3.0}},
		{"unicode and escapes", Attributes{"k\"ey": "värde\n<>&"}, Attributes{"k\"ey": "värde\n<>&"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dv, err := toDynamic(tt.in)
			if err != nil {
				t.Fatalf("toDynamic: %v", err)
			}
			if (dv == nil) != (tt.in == nil) {
				t.Fatalf("toDynamic(%v) = %v: nil-ness not kept", tt.in, dv)
			}
			if dv != nil {
				dv = wire(t, dv, &pb.DynamicValue{})
			}
			got, err := fromDynamic(dv)
			if err != nil {
				t.Fatalf("fromDynamic: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) || (got == nil) != (tt.want == nil) {
				t.Errorf("round trip = %#v, want %#v", got, tt.want)
			}
		})
	}
}

func TestDynamicErrors(t *testing.T) {
	for _, in := range []Attributes{{"nan": math.NaN()}, {"inf": math.Inf(1)}, {"ch": make(chan int)}, {"f": func() {}}} {
		if dv, err := toDynamic(in); err == nil || !strings.Contains(err.Error(), "encode attributes") {
			t.Errorf("toDynamic(%v) = %v, %v; want an encode error", in, dv, err)
		}
	}
	tests := []struct {
		name    string
		in      *pb.DynamicValue
		want    Attributes
		wantErr bool
	}{
		{"nil message", nil, nil, false},
		{"empty json", &pb.DynamicValue{}, nil, false},
		{"json null", &pb.DynamicValue{Json: []byte("null")}, nil, false},
		{"not an object", &pb.DynamicValue{Json: []byte(`[1,2]`)}, nil, true},
		{"a string", &pb.DynamicValue{Json: []byte(`"x"`)}, nil, true},
		{"truncated", &pb.DynamicValue{Json: []byte(`{"a":`)}, nil, true},
		{"garbage", &pb.DynamicValue{Json: []byte{0xff, 0xfe}}, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := fromDynamic(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("fromDynamic err = %v, wantErr %v", err, tt.wantErr)
			}
			if err != nil && !strings.Contains(err.Error(), "decode attributes") {
				t.Errorf("error %q does not say what failed", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("fromDynamic = %#v, want %#v", got, tt.want)
			}
		})
	}
}

func TestDiagnosticErrorText(t *testing.T) {
	tests := []struct {
		name string
		ds   Diagnostics
		err  bool
		text string
	}{
		{"none", nil, false, ""},
		{"only warnings", Diagnostics{{Severity: SeverityWarning, Summary: "w"}}, false, ""},
		{"errors joined, warnings left out", Diagnostics{
			AttributeErrorf([]string{"tags", "team"}, "bad %s", "value"),
			{Severity: SeverityWarning, Summary: "w"},
			{Severity: SeverityError, Summary: "gone", Detail: "really"},
		}, true, "tags.team: bad value; gone: really"},
		{"zero severity counts as error", Diagnostics{{Summary: "z"}}, true, "z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.ds.HasError(); got != tt.err {
				t.Errorf("HasError = %v, want %v", got, tt.err)
			}
			err := tt.ds.Err()
			if (err != nil) != tt.err {
				t.Fatalf("Err = %v, want error %v", err, tt.err)
			}
			if err != nil && err.Error() != tt.text {
				t.Errorf("Error() = %q, want %q", err.Error(), tt.text)
			}
		})
	}
}

func TestDiagnosticsFromError(t *testing.T) {
	ds := Diagnostics{AttributeErrorf([]string{"a"}, "x")}
	one := Errorf("single")
	tests := []struct {
		name string
		err  error
		want Diagnostics
	}{
		{"nil", nil, nil},
		{"plain error", errString("boom"), Diagnostics{{Severity: SeverityError, Summary: "boom"}}},
		{"diagnostics kept", ds, ds},
		{"wrapped diagnostics kept", wrapErr{ds}, ds},
		{"one diagnostic", one, Diagnostics{one}},
		{"wrapped diagnostic", wrapErr{one}, Diagnostics{one}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := DiagnosticsFromError(tt.err); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("DiagnosticsFromError = %#v, want %#v", got, tt.want)
			}
		})
	}
}

type errString string

func (e errString) Error() string { return string(e) }

type wrapErr struct{ err error }

func (w wrapErr) Error() string { return "wrapped: " + w.err.Error() }
func (w wrapErr) Unwrap() error { return w.err }
