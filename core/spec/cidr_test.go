package spec

import (
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"
)

// TestCIDRFunctions checks the CIDR functions against the examples of
// Terraform's documentation, and their refusals.
func TestCIDRFunctions(t *testing.T) {
	str, num := cty.StringVal, cty.NumberIntVal
	tests := []struct {
		fn   string
		args []cty.Value
		want cty.Value
		err  string
	}{
		{"cidrhost", []cty.Value{str("10.12.112.0/20"), num(16)}, str("10.12.112.16"), ""},
		{"cidrhost", []cty.Value{str("10.12.112.0/20"), num(268)}, str("10.12.113.12"), ""},
		{"cidrhost", []cty.Value{str("fd00:fd12:3456:7890:00a2::/72"), num(34)}, str("fd00:fd12:3456:7890::22"), ""},
		{"cidrhost", []cty.Value{str("10.0.0.0/24"), num(-1)}, str("10.0.0.255"), ""},
		{"cidrhost", []cty.Value{str("10.0.0.0/24"), num(256)}, cty.NilVal, "host number 256 is not one of them"},
		{"cidrnetmask", []cty.Value{str("172.16.0.0/12")}, str("255.240.0.0"), ""},
		{"cidrnetmask", []cty.Value{str("fd00::/8")}, cty.NilVal, "IPv4 prefixes only"},
		{"cidrsubnet", []cty.Value{str("172.16.0.0/12"), num(4), num(2)}, str("172.18.0.0/16"), ""},
		{"cidrsubnet", []cty.Value{str("10.1.2.0/24"), num(4), num(15)}, str("10.1.2.240/28"), ""},
		{"cidrsubnet", []cty.Value{str("fd00:fd12:3456:7890::/56"), num(16), num(162)}, str("fd00:fd12:3456:7800:a200::/72"), ""},
		{"cidrsubnet", []cty.Value{str("10.1.2.0/24"), num(4), num(16)}, cty.NilVal, "netnum 16 is not one of them"},
		{"cidrsubnet", []cty.Value{str("10.1.2.0/24"), num(9), num(0)}, cty.NilVal, "at most 8 more bits"},
		{"cidrsubnet", []cty.Value{str("not-a-cidr"), num(1), num(0)}, cty.NilVal, `invalid CIDR prefix "not-a-cidr"`},
		{"cidrsubnets", []cty.Value{str("10.1.0.0/16"), num(4), num(4), num(8), num(4)},
			cty.ListVal([]cty.Value{str("10.1.0.0/20"), str("10.1.16.0/20"), str("10.1.32.0/24"), str("10.1.48.0/20")}), ""},
		{"cidrsubnets", []cty.Value{str("fd00:fd12:3456:7890::/56"), num(16), num(16), num(16), num(32)},
			cty.ListVal([]cty.Value{str("fd00:fd12:3456:7800::/72"), str("fd00:fd12:3456:7800:100::/72"), str("fd00:fd12:3456:7800:200::/72"), str("fd00:fd12:3456:7800:300::/88")}), ""},
		{"cidrsubnets", []cty.Value{str("10.0.0.0/30"), num(1), num(1), num(1)}, cty.NilVal, "not enough room"},
	}
	for _, tt := range tests {
		got, err := Functions()[tt.fn].Call(tt.args)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%s%v: error %v, want one with %q", tt.fn, tt.args, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s%v: %v", tt.fn, tt.args, err)
			continue
		}
		if !got.RawEquals(tt.want) {
			t.Errorf("%s%v = %#v, want %#v", tt.fn, tt.args, got, tt.want)
		}
	}
}
