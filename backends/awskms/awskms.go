// Package awskms is the awskms:// secrets provider's KMS client: a stack's
// data key is made by AWS KMS GenerateDataKey and opened by Decrypt, with
// aws-sdk-go-v2. It lives beside the S3 backend, outside core, so core and
// sdk never import the AWS SDK (core/secrets knows only its KMS interface).
//
// A provider is awskms://KEY-ID-or-ARN-or-alias[?region=REGION]. The
// credentials, the region and the endpoint come from the SDK's standard
// chain: AWS_REGION, AWS_ACCESS_KEY_ID…, a profile, and
// AWS_ENDPOINT_URL_KMS or AWS_ENDPOINT_URL (an emulator such as moto).
package awskms

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/kms/types"

	"github.com/bulwark-iac/bulwark/core/secrets"
)

// Client is one provider's KMS key.
type Client struct {
	api   *kms.Client
	keyID string
	// ctx binds the data key to bulwark: KMS refuses to decrypt it with
	// another encryption context.
	ectx map[string]string
}

// Parse splits a provider into its key and region.
func Parse(provider string) (keyID, region string, err error) {
	rest, ok := strings.CutPrefix(provider, secrets.KMSScheme)
	if !ok {
		return "", "", fmt.Errorf("%q is not an awskms:// provider", provider)
	}
	keyID, query, _ := strings.Cut(rest, "?")
	if keyID == "" {
		return "", "", errors.New("no KMS key: want awskms://KEY-ID-or-ARN[?region=REGION]")
	}
	if query != "" {
		q, err := url.ParseQuery(query)
		if err != nil {
			return "", "", fmt.Errorf("its query: %w", err)
		}
		for k := range q {
			if k != "region" {
				return "", "", fmt.Errorf("unknown setting %q (only region= is known)", k)
			}
		}
		region = q.Get("region")
	}
	return keyID, region, nil
}

// Open is a secrets.KMSOpener: the client of provider's key.
func Open(ctx context.Context, provider string) (secrets.KMS, error) {
	keyID, region, err := Parse(provider)
	if err != nil {
		return nil, err
	}
	var lo []func(*config.LoadOptions) error
	if region != "" {
		lo = append(lo, config.WithRegion(region))
	}
	cfg, err := config.LoadDefaultConfig(ctx, lo...)
	if err != nil {
		return nil, fmt.Errorf("load the AWS configuration: %w", err)
	}
	if cfg.Region == "" {
		// A key ARN names its region.
		if parts := strings.Split(keyID, ":"); len(parts) > 3 && strings.HasPrefix(keyID, "arn:") {
			cfg.Region = parts[3]
		}
	}
	if cfg.Region == "" {
		return nil, errors.New("no AWS region: add ?region=… to the provider, or set AWS_REGION")
	}
	return New(kms.NewFromConfig(cfg), keyID), nil
}

// New is the client of keyID through api.
func New(api *kms.Client, keyID string) *Client {
	return &Client{api: api, keyID: keyID, ectx: map[string]string{"bulwark": "secrets data key"}}
}

// GenerateDataKey asks KMS for a new data key of size bytes: its plaintext
// and the ciphertext that Decrypt opens again.
func (c *Client) GenerateDataKey(ctx context.Context, size int) (plain, wrapped []byte, err error) {
	out, err := c.api.GenerateDataKey(ctx, &kms.GenerateDataKeyInput{
		KeyId:             aws.String(c.keyID),
		NumberOfBytes:     aws.Int32(int32(size)),
		EncryptionContext: c.ectx,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("kms GenerateDataKey with key %s: %w", c.keyID, err)
	}
	return out.Plaintext, out.CiphertextBlob, nil
}

// Decrypt opens a data key GenerateDataKey made, under the same KMS key.
func (c *Client) Decrypt(ctx context.Context, wrapped []byte) ([]byte, error) {
	out, err := c.api.Decrypt(ctx, &kms.DecryptInput{
		KeyId:               aws.String(c.keyID),
		CiphertextBlob:      wrapped,
		EncryptionContext:   c.ectx,
		EncryptionAlgorithm: types.EncryptionAlgorithmSpecSymmetricDefault,
	})
	if err != nil {
		return nil, fmt.Errorf("kms Decrypt with key %s: %w", c.keyID, err)
	}
	return out.Plaintext, nil
}
