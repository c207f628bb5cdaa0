package awsprovider

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
)

// credentialCodes are the API error codes with which S3, DynamoDB or STS
// reject the credentials themselves (unknown key, wrong secret, expired or
// malformed token), whatever the request was about.
var credentialCodes = map[string]bool{
	// S3
	"SignatureDoesNotMatch": true,
	"InvalidAccessKeyId":    true,
	"InvalidToken":          true,
	"ExpiredToken":          true,
	"TokenRefreshRequired":  true,
	// DynamoDB (and the JSON protocols in general)
	"UnrecognizedClientException":         true,
	"InvalidSignatureException":           true,
	"ExpiredTokenException":               true,
	"MissingAuthenticationTokenException": true,
	"IncompleteSignatureException":        true,
	// STS
	"InvalidClientTokenId": true,
}

// credentialsRejected reports whether err says the credentials were
// rejected, as opposed to an answer about the resource.
func credentialsRejected(err error) bool {
	return credentialCodes[apiCode(err)]
}

// CredentialsError is what a call returns when AWS rejected the credentials
// it was signed with: the call learned nothing about the resource it was
// about (in particular not whether it exists or whose it is). It names where
// the credentials came from, never what they are.
type CredentialsError struct {
	Service string // the service that rejected them: "S3", "DynamoDB"
	Code    string // the API error code, e.g. "SignatureDoesNotMatch"
	Source  string // where the credentials came from, in words
	Err     error  // the API error
}

func (e *CredentialsError) Error() string {
	return fmt.Sprintf("credentials rejected by %s (%s): the credentials from %s are wrong, unknown or expired; "+
		"fix them and retry (this answer says nothing about the bucket or table itself)",
		e.Service, e.Code, e.Source)
}

func (e *CredentialsError) Unwrap() error { return e.Err }

// asCredentialsError returns err as a *CredentialsError when AWS rejected
// the credentials, else nil.
func (c *clients) asCredentialsError(ctx context.Context, err error) *CredentialsError {
	if err == nil {
		return nil
	}
	var ce *CredentialsError
	if errors.As(err, &ce) {
		return ce
	}
	if !credentialsRejected(err) {
		return nil
	}
	service := "AWS"
	var oe *smithy.OperationError
	if errors.As(err, &oe) && oe.ServiceID != "" {
		service = oe.ServiceID
	}
	return &CredentialsError{Service: service, Code: apiCode(err), Source: c.credentialSource(ctx), Err: err}
}

// credentialSource describes where the SDK's chain found the credentials
// the calls are signed with. It reads only the name of their source from
// the SDK's cache (the request was signed with them, so nothing is fetched
// anew); the values are dropped at once.
func (c *clients) credentialSource(ctx context.Context) string {
	profile := ""
	if c.profile != "" {
		profile = fmt.Sprintf(" (profile %q)", c.profile)
	}
	if c.creds == nil {
		return "the standard AWS credential chain" + profile
	}
	// The call's own deadline may be what ended it: allow a moment of our
	// own for reading the cache.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	creds, err := c.creds.Retrieve(rctx)
	source := creds.Source
	if err != nil || source == "" {
		return "the standard AWS credential chain" + profile
	}
	switch {
	case source == "EnvConfigCredentials":
		return "the environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN)"
	case strings.HasPrefix(source, "SharedConfigCredentials:"):
		file := strings.TrimSpace(strings.TrimPrefix(source, "SharedConfigCredentials:"))
		return "the shared credentials file " + file + profile
	case source == "SSOProvider":
		return "AWS IAM Identity Center (SSO)" + profile
	case source == "AssumeRoleProvider":
		return "an assumed role" + profile
	case source == "WebIdentityCredentials":
		return "a web identity token (AWS_WEB_IDENTITY_TOKEN_FILE or the profile's web_identity_token_file)"
	case source == "ProcessProvider":
		return "the profile's credential_process" + profile
	case source == "EC2RoleProvider":
		return "the EC2 instance role"
	case strings.Contains(source, "ECS") || strings.Contains(source, "Endpoint"):
		return "the container credentials endpoint"
	}
	return fmt.Sprintf("the standard AWS credential chain (source %s)%s", source, profile)
}

// whyForbidden tells what a 403 from HeadBucket means. HEAD answers carry no
// body, so a 403 says nothing by itself: wrong credentials, a bucket of
// another account, or missing permissions all look the same. ListObjectsV2
// on the bucket answers with a code in its body; the answer is branched on
// that code:
//
//   - a credential code (SignatureDoesNotMatch, InvalidAccessKeyId, …): the
//     credentials are rejected, a *CredentialsError;
//   - NoSuchBucket: there is no such bucket;
//   - AccessDenied (or the like): the bucket exists and these credentials
//     may not list it;
//   - success: it exists and is visible after all.
func (c *clients) whyForbidden(ctx context.Context, name string, headErr error) (bool, error) {
	_, err := c.s3.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(name), MaxKeys: aws.Int32(1)})
	if err == nil {
		return true, nil
	}
	if ce := c.asCredentialsError(ctx, err); ce != nil {
		return false, ce
	}
	switch apiCode(err) {
	case "NoSuchBucket", "NotFound":
		return false, nil
	case "AccessDenied", "AllAccessDisabled", "Forbidden":
		return false, &DeniedError{Bucket: name, Err: err}
	case "PermanentRedirect", "AuthorizationHeaderMalformed", "IllegalLocationConstraintException":
		return false, fmt.Errorf("bucket %q lives in another region than %s: set the provider's region to the bucket's: %w", name, c.region, err)
	}
	return false, fmt.Errorf("HeadBucket %s answered 403 and ListObjectsV2, asked why: %w (HeadBucket: %v)", name, err, headErr)
}

// DeniedError says a bucket exists but these (valid) credentials may not
// look into it: another account owns the name, or they lack s3:ListBucket on
// it. Either way it is not this stack's to claim.
type DeniedError struct {
	Bucket string
	Err    error // the API error that said so
}

func (e *DeniedError) Error() string {
	return fmt.Sprintf("bucket %q exists but these credentials may not list it: another account owns the name, or they lack s3:ListBucket on it", e.Bucket)
}

func (e *DeniedError) Unwrap() error { return e.Err }
