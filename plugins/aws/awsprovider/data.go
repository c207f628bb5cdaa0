package awsprovider

import (
	"context"

	"github.com/bulwark-iac/bulwark/sdk"
)

// The aws provider's data source: s3_bucket reads an existing bucket (one
// another stack, or no stack, made) by name, for its ARN, region and
// regional domain name, as Terraform's aws_s3_bucket data source does.
const dataBucket = "s3_bucket"

// Its results.
const attrRegionalDomain = "bucket_regional_domain_name"

var _ sdk.DataReader = (*provider)(nil)

// dataSources returns the schema of every data source the provider reads.
func dataSources() []sdk.DataSourceType {
	return []sdk.DataSourceType{{
		Name:        dataBucket,
		Description: "an existing S3 bucket, by name: its ARN, region and regional domain name; an error when it does not exist or these credentials cannot see it",
		Attributes: []sdk.Attribute{
			{Name: attrBucket, Type: sdk.TypeString, Required: true, Description: "the bucket's name"},
			{Name: attrARN, Type: sdk.TypeString, Computed: true, Description: "the bucket's ARN"},
			{Name: attrRegion, Type: sdk.TypeString, Computed: true, Description: "the region the bucket lives in"},
			{Name: attrRegionalDomain, Type: sdk.TypeString, Computed: true, Description: "the bucket's regional domain name, BUCKET.s3.REGION.amazonaws.com"},
		},
	}}
}

// ReadData reads a data source: one HeadBucket, never a write, so a
// read-only session (a plan) reads too.
func (p *provider) ReadData(ctx context.Context, req *sdk.ReadDataRequest) (*sdk.ReadDataResponse, error) {
	if req.Type != dataBucket {
		return nil, sdk.Errorf("unknown data source type %q", req.Type)
	}
	spec, ds := parseBucket(req.Config)
	if ds.HasError() {
		return &sdk.ReadDataResponse{Diagnostics: ds}, nil
	}
	c, ctx, cancel, err := p.begin(ctx, "")
	if err != nil {
		return nil, err
	}
	defer cancel()
	exists, region, err := c.headBucket(ctx, spec.name)
	if err != nil {
		return nil, c.finish(ctx, "read data "+req.Name, err)
	}
	if !exists {
		return &sdk.ReadDataResponse{Diagnostics: sdk.Diagnostics{sdk.AttributeErrorf([]string{attrBucket},
			"data %s: no bucket %q (or these credentials cannot see it)", req.Name, spec.name)}}, nil
	}
	if region == "" {
		region = c.region
	}
	return &sdk.ReadDataResponse{Attributes: sdk.Attributes{
		attrBucket:         spec.name,
		attrARN:            bucketARN(region, spec.name),
		attrRegion:         region,
		attrRegionalDomain: spec.name + ".s3." + region + "." + dnsSuffix(region),
	}}, nil
}

// dnsSuffix is the domain of AWS's endpoints in region's partition.
func dnsSuffix(region string) string {
	switch partition(region) {
	case "aws-cn":
		return "amazonaws.com.cn"
	case "aws-iso":
		return "c2s.ic.gov"
	case "aws-iso-b":
		return "sc2s.sgov.gov"
	}
	return "amazonaws.com"
}
