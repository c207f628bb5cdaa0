package spec

import (
	"errors"
	"testing"

	"github.com/bulwark-iac/bulwark/core/providers"
	"github.com/google/go-cmp/cmp"
)

func fakeSchema() *providers.GetSchemaResponse {
	return &providers.GetSchemaResponse{
		ProviderName: "mock",
		ResourceTypes: []providers.ResourceType{
			{Name: "s3_bucket", Attributes: []providers.Attribute{
				{Name: "bucket", Type: providers.TypeString, Required: true},
				{Name: "size", Type: providers.TypeNumber},
				{Name: "tags", Type: providers.TypeMap},
				{Name: "arn", Type: providers.TypeString, Computed: true},
			}},
			{Name: "compute", Attributes: []providers.Attribute{{Name: "size", Type: providers.TypeNumber}}},
			{Name: "network"},
		},
	}
}

const schemaSpec = `version: 1
stack: s
providers:
  mock: {}
  cloud: {source: aws}
default_provider: mock
resources:
  - name: typo
    type: s3_buckt
  - name: extra
    type: s3_bucket
    config:
      bucket: b
      colour: red
      size: big
      arn: x
      tags: {a: 1}
  - name: noconfig
    type: s3_bucket
  - name: partial
    type: s3_bucket
    config: {size: 1}
  - name: fine
    type: compute
    config: {size: 2}
  - name: elsewhere
    type: network
    provider: cloud
`

func TestCheckSchemas(t *testing.T) {
	s := mustParse(t, "stack.yaml", []byte(schemaSpec))
	err := s.CheckSchemas(map[string]*providers.GetSchemaResponse{"mock": fakeSchema()})
	var ps Problems
	if !errors.As(err, &ps) {
		t.Fatalf("CheckSchemas = %T %v, want Problems", err, err)
	}
	var got []string
	for _, p := range ps {
		got = append(got, p.Error())
	}
	want := []string{
		`stack.yaml:9:11: unknown resource type "s3_buckt" for provider mock (has: compute, network, s3_bucket)`,
		`stack.yaml:14:7: resource "extra": unknown attribute "colour" for type s3_bucket`,
		`stack.yaml:15:7: resource "extra": attribute "size" must be a number, not a string`,
		`stack.yaml:16:7: resource "extra": attribute "arn" is computed by the provider and cannot be set`,
		`stack.yaml:18:5: resource "noconfig": missing required attribute "bucket" for type s3_bucket`,
		`stack.yaml:22:13: resource "partial": missing required attribute "bucket" for type s3_bucket`,
		`stack.yaml:26:5: resource "elsewhere": no schema was read for provider "cloud"`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("problems mismatch (-want +got):\n%s", diff)
	}
}

func TestCheckSchemasOK(t *testing.T) {
	s := mustParse(t, "stack.yaml", readFile(t, "testdata/good/full.yaml"))
	schemas := map[string]*providers.GetSchemaResponse{
		"mock": {ResourceTypes: []providers.ResourceType{
			{Name: "network", Attributes: []providers.Attribute{{Name: "cidr", Type: providers.TypeString}, {Name: "zones", Type: providers.TypeList}}},
			{Name: "compute"},
		}},
		"cloud": {ResourceTypes: []providers.ResourceType{
			{Name: "s3_bucket", Attributes: []providers.Attribute{
				{Name: "bucket", Type: providers.TypeString, Required: true},
				{Name: "versioned", Type: providers.TypeBool},
				{Name: "size", Type: providers.TypeNumber},
				{Name: "tags", Type: providers.TypeMap},
				{Name: "note", Type: providers.TypeString},
				{Name: "created", Type: providers.TypeString},
			}},
		}},
	}
	if err := s.CheckSchemas(schemas); err != nil {
		t.Errorf("CheckSchemas: %v", err)
	}

	// With another default provider, the resources that did not name
	// theirs are checked against its schema.
	empty := map[string]*providers.GetSchemaResponse{"local": {}, "cloud": schemas["cloud"]}
	err := s.WithDefaultProvider("local").CheckSchemas(empty)
	want := "stack.yaml:10:11: unknown resource type \"network\" for provider local (has: none)\n" +
		"stack.yaml:23:11: unknown resource type \"compute\" for provider local (has: none)"
	if err == nil || err.Error() != want {
		t.Errorf("CheckSchemas = %v, want\n%s", err, want)
	}
}

func TestCheckSchemasReferences(t *testing.T) {
	s := mustParse(t, "stack.yaml", []byte(`version: 1
stack: s
providers: {mock: {}}
resources:
  - name: bucket
    type: s3_bucket
    config: {bucket: b}
  - name: web
    type: compute
    config:
      size: ${bucket.arn}
  - name: web2
    type: compute
    config:
      size: ${bucket.size}
  - name: other
    type: s3_bucket
    config:
      bucket: "${bucket.id}-${bucket.nope}"
      tags: {a: "${bucket.arn}", b: "${web.size}"}
      size: ${bucket.missing}
outputs:
  arn: {value: "${bucket.arn}"}
  bad: {value: "${web.zone}"}
`))
	err := s.CheckSchemas(map[string]*providers.GetSchemaResponse{"mock": fakeSchema()})
	var got []string
	var ps Problems
	if !errors.As(err, &ps) {
		t.Fatalf("err = %v", err)
	}
	for _, p := range ps {
		got = append(got, p.Error())
	}
	want := []string{
		`stack.yaml:11:7: resource "web": attribute "size" must be a number, not a string (the value of ${bucket.arn})`,
		`stack.yaml:19:29: unknown attribute "nope" in ${bucket.nope}: type s3_bucket of provider mock has id, bucket, size, tags, arn`,
		`stack.yaml:21:13: unknown attribute "missing" in ${bucket.missing}: type s3_bucket of provider mock has id, bucket, size, tags, arn`,
		`stack.yaml:24:17: unknown attribute "zone" in ${web.zone}: type compute of provider mock has id, size`,
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}

func TestCheckSchemasInstancesOnce(t *testing.T) {
	s := mustParse(t, "stack.yaml", []byte(`version: 1
stack: s
providers: {mock: {}}
resources:
  - name: web
    type: compute
    config: {size: big}
`))
	// As resolve.Expand makes them: three instances sharing positions.
	base := s.Resources[0]
	s.Resources = nil
	for _, k := range []string{"a", "b", "c"} {
		r := *base
		r.Addr = Address{Name: "web", Key: k, Keyed: true}
		r.Name = r.Addr.String()
		s.Resources = append(s.Resources, &r)
	}
	err := s.CheckSchemas(map[string]*providers.GetSchemaResponse{"mock": fakeSchema()})
	want := `stack.yaml:7:14: resource "web[a]": attribute "size" must be a number, not a string`
	if err == nil || err.Error() != want {
		t.Errorf("err = %v\nwant %s", err, want)
	}
}
