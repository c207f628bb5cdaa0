package tfinstall_test

import (
	"strings"
	"testing"

	"github.com/bulwark-iac/bulwark/core/tfinstall"
)

func TestParseSource(t *testing.T) {
	tests := []struct {
		given   string
		want    string
		wantErr string
	}{
		{given: "hashicorp/random", want: "registry.terraform.io/hashicorp/random"},
		{given: "HashiCorp/Random", want: "registry.terraform.io/hashicorp/random"},
		{given: "registry.terraform.io/hashicorp/aws", want: "registry.terraform.io/hashicorp/aws"},
		{given: "Registry.OpenTofu.org/hashicorp/aws", want: "registry.opentofu.org/hashicorp/aws"},
		{given: "example.com:443/acme/widget", want: "example.com/acme/widget"},
		{given: "127.0.0.1:8443/acme/widget", want: "127.0.0.1:8443/acme/widget"},
		{given: "localhost:8443/acme/my-widget", want: "localhost:8443/acme/my-widget"},
		{given: "random", wantErr: "want [HOST/]NAMESPACE/TYPE"},
		{given: "a/b/c/d", wantErr: "want [HOST/]NAMESPACE/TYPE"},
		{given: "/random", wantErr: `invalid namespace "": must have at least one character`},
		{given: "hashicorp/", wantErr: `invalid type "": must have at least one character`},
		{given: "hashi.corp/random", wantErr: "dots are not allowed"},
		{given: "hashicorp/ran--dom", wantErr: "multiple consecutive dashes"},
		{given: "hashicorp/-random", wantErr: "leading or trailing dashes"},
		{given: "hashicorp/ran_dom", wantErr: "only letters, digits, and dashes"},
		{given: "hashicorp/terraform-provider-random", wantErr: `did you mean "registry.terraform.io/hashicorp/random"?`},
		{given: "hashicorp/terraform-random", wantErr: `may not start with "terraform-"`},
		{given: "example.com:0/a/b", wantErr: `invalid port "0"`},
		{given: "example.com:http/a/b", wantErr: `invalid port "http"`},
		{given: ":8443/a/b", wantErr: "empty hostname"},
	}
	for _, tt := range tests {
		t.Run(tt.given, func(t *testing.T) {
			got, err := tfinstall.ParseSource(tt.given)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseSource(%q) = %v, %v; want an error with %q", tt.given, got, err, tt.wantErr)
				}
				if !strings.Contains(err.Error(), tt.given) {
					t.Errorf("the error %q does not name the source", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.String() != tt.want {
				t.Fatalf("ParseSource(%q) = %s, want %s", tt.given, got, tt.want)
			}
			again, err := tfinstall.ParseSource(got.String())
			if err != nil || again != got {
				t.Fatalf("the normalised form does not parse to itself: %v, %v", again, err)
			}
		})
	}
}

func TestParseRequirement(t *testing.T) {
	src, c, err := tfinstall.ParseRequirement("hashicorp/random@~> 3.6")
	if err != nil {
		t.Fatal(err)
	}
	if src.String() != "registry.terraform.io/hashicorp/random" || c.String() != "~> 3.6" {
		t.Fatalf("got %s and %q", src, c)
	}
	if _, c, err = tfinstall.ParseRequirement("hashicorp/random"); err != nil || c.String() != "" {
		t.Fatalf("no constraint: %q, %v", c, err)
	}
	if _, _, err := tfinstall.ParseRequirement("hashicorp/random@~> banana"); err == nil || !strings.Contains(err.Error(), `version constraint "~> banana"`) {
		t.Fatalf("bad constraint: %v", err)
	}
}

func TestConstraints(t *testing.T) {
	versions := []string{"1.0.0", "1.4.0", "2.0.0-beta1", "2.0.0", "2.3.1", "3.5.9", "3.6.0", "3.6.3", "3.7.0", "4.0.0", "not-a-version"}
	tests := []struct {
		constraint string
		want       string // "" when none
		allows     []string
		refuses    []string
	}{
		{constraint: "", want: "4.0.0", refuses: []string{"2.0.0-beta1"}},
		{constraint: "~> 3.6", want: "3.7.0", allows: []string{"3.6.0", "3.6.3"}, refuses: []string{"3.5.9", "4.0.0"}},
		{constraint: "~> 3.6.0", want: "3.6.3", refuses: []string{"3.7.0"}},
		{constraint: ">= 1.0, < 2.0", want: "1.4.0", refuses: []string{"2.0.0", "2.0.0-beta1"}},
		{constraint: "= 1.0.0", want: "1.0.0", refuses: []string{"1.4.0"}},
		{constraint: "1.0.0", want: "1.0.0"},
		{constraint: ">= 1.0, != 4.0.0", want: "3.7.0", refuses: []string{"4.0.0"}},
		{constraint: "= 2.0.0-beta1", want: "2.0.0-beta1"},
		{constraint: "> 4.0.0", want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.constraint, func(t *testing.T) {
			c := mustConstraints(t, tt.constraint)
			got, ok := c.Newest(versions)
			if got != tt.want || ok != (tt.want != "") {
				t.Fatalf("Newest = %q, %v; want %q", got, ok, tt.want)
			}
			for _, v := range tt.allows {
				if !c.Allows(v) {
					t.Errorf("%q refuses %s", tt.constraint, v)
				}
			}
			for _, v := range tt.refuses {
				if c.Allows(v) {
					t.Errorf("%q allows %s", tt.constraint, v)
				}
			}
		})
	}
	for _, bad := range []string{"~>", ">= banana", "1.0 <"} {
		if _, err := tfinstall.ParseConstraints(bad); err == nil {
			t.Errorf("ParseConstraints(%q): no error", bad)
		}
	}
}
