package awsprovider

import (
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/bulwark-iac/bulwark/sdk"
)

// awsError is err as the SDK returns an API error: the operation, the
// HTTP response (status and headers), the API error inside.
func awsError(status int, header http.Header, apiErr error) error {
	return &smithy.OperationError{ServiceID: "S3", OperationName: "PutObject", Err: &awshttp.ResponseError{
		ResponseError: &smithyhttp.ResponseError{
			Response: &smithyhttp.Response{Response: &http.Response{StatusCode: status, Header: header}},
			Err:      apiErr,
		},
		RequestID: "req-1",
	}}
}

func apiError(code string) error {
	return &smithy.GenericAPIError{Code: code, Message: "slow down"}
}

// AWS's throttling errors, as the SDK returns them once its retries are
// spent, become sdk.Throttled with the wait the response asked for; every
// other error stays what it was.
func TestAsThrottled(t *testing.T) {
	hdr := func(kv ...string) http.Header {
		h := http.Header{}
		for i := 0; i < len(kv); i += 2 {
			h.Set(kv[i], kv[i+1])
		}
		return h
	}
	tests := []struct {
		name      string
		err       error
		throttled bool
		wait      time.Duration
	}{
		{"nil", nil, false, 0},
		{"not an AWS error", errors.New("connection reset"), false, 0},
		{"NoSuchBucket", awsError(404, nil, apiError("NoSuchBucket")), false, 0},
		{"AccessDenied", awsError(403, nil, apiError("AccessDenied")), false, 0},
		{"SlowDown", awsError(503, nil, apiError("SlowDown")), true, 0},
		{"Throttling", awsError(400, nil, apiError("Throttling")), true, 0},
		{"ThrottlingException", awsError(400, nil, apiError("ThrottlingException")), true, 0},
		{"RequestLimitExceeded", awsError(503, nil, apiError("RequestLimitExceeded")), true, 0},
		{"TooManyRequestsException", awsError(429, nil, apiError("TooManyRequestsException")), true, 0},
		{"ProvisionedThroughputExceededException", awsError(400, nil, apiError("ProvisionedThroughputExceededException")), true, 0},
		{"RequestThrottled", awsError(400, nil, apiError("RequestThrottled")), true, 0},
		{"wrapped by the provider", fmt.Errorf("CreateBucket b: %w", awsError(503, nil, apiError("SlowDown"))), true, 0},
		{"429 with no code", awsError(429, nil, errors.New("unmodeled")), true, 0},
		{"x-amz-retry-after", awsError(503, hdr("X-Amz-Retry-After", "1500"), apiError("SlowDown")), true, 1500 * time.Millisecond},
		{"Retry-After seconds", awsError(429, hdr("Retry-After", "3"), apiError("TooManyRequestsException")), true, 3 * time.Second},
		{"x-amz-retry-after first", awsError(429, hdr("Retry-After", "3", "X-Amz-Retry-After", "200"), apiError("Throttling")), true, 200 * time.Millisecond},
		{"unreadable wait", awsError(503, hdr("Retry-After", "soon"), apiError("SlowDown")), true, 0},
		{"absurd wait", awsError(503, hdr("X-Amz-Retry-After", "999999999999"), apiError("SlowDown")), true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, ok := asThrottled("create storage", tt.err)
			if ok != tt.throttled {
				t.Fatalf("asThrottled = %v, want %v", ok, tt.throttled)
			}
			if !ok {
				return
			}
			if !d.Throttled || d.Severity != sdk.SeverityError || d.RetryAfter != tt.wait {
				t.Errorf("diagnostic %+v, want throttled with a wait of %v", d, tt.wait)
			}
			// What the host finds, through the error the provider returns.
			if got, ok := sdk.IsThrottled(d); !ok || got.RetryAfter != tt.wait {
				t.Errorf("sdk.IsThrottled(%v) = %+v %v", d, got, ok)
			}
		})
	}
}
