package spec

import (
	"strings"
	"testing"

	"github.com/bulwark-iac/bulwark/core/providers"
	"github.com/google/go-cmp/cmp"
)

const providerConfigSpec = `version: 1
stack: s
providers:
  cloud:
    source: aws
    config:
      regin: us-east-1
      secret_key: 12345678
      profile: dev
  bare: {source: aws}
  old: {}
default_provider: old
resources: []
`

func awsLike() *providers.GetSchemaResponse {
	return &providers.GetSchemaResponse{ProviderName: "aws", ProviderConfig: []providers.Attribute{
		{Name: "region", Type: providers.TypeString, Required: true},
		{Name: "profile", Type: providers.TypeString},
		{Name: "secret_key", Type: providers.TypeString, Sensitive: true},
	}}
}

func TestCheckProviderConfig(t *testing.T) {
	s := mustParse(t, "stack.yaml", []byte(providerConfigSpec))
	tests := []struct {
		name   string
		schema *providers.GetSchemaResponse
		want   []string
	}{
		{"cloud", awsLike(), []string{
			`stack.yaml:7:7: provider "cloud": unknown config key "regin" (has: profile, region, secret_key)`,
			`stack.yaml:7:7: provider "cloud": missing required config key "region"`,
			`stack.yaml:8:7: provider "cloud": config key "secret_key": attribute "secret_key" must be a string, not a number`,
		}},
		// No config at all: the problem is at the provider's name.
		{"bare", awsLike(), []string{`stack.yaml:10:3: provider "bare": missing required config key "region"`}},
		// A provider that describes no config is not checked.
		{"old", &providers.GetSchemaResponse{ProviderName: "mock"}, nil},
		// Nor is one the spec does not declare.
		{"elsewhere", awsLike(), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			if err := s.CheckProviderConfig(tt.name, tt.schema); err != nil {
				for _, p := range err.(Problems) {
					got = append(got, p.Error())
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
			for _, g := range got {
				if strings.Contains(g, "12345678") {
					t.Errorf("a problem quotes a sensitive value: %s", g)
				}
			}
		})
	}
	// CheckSchemas checks every declared provider's config too.
	err := s.CheckSchemas(map[string]*providers.GetSchemaResponse{"cloud": awsLike(), "old": {}})
	if err == nil || !strings.Contains(err.Error(), `unknown config key "regin"`) {
		t.Errorf("CheckSchemas = %v", err)
	}
	// An undeclared provider swapped in by --provider runs with its default
	// config and is not checked.
	if err := s.WithDefaultProvider("other").CheckProviderConfig("other", awsLike()); err != nil {
		t.Errorf("undeclared provider checked: %v", err)
	}
}
