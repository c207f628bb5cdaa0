package awsprovider

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/bulwark-iac/bulwark/sdk"
)

// throttles is what the SDK's retryers take for a throttling error: the
// API error codes of retry.DefaultThrottleErrorCodes (Throttling,
// ThrottlingException, SlowDown, RequestLimitExceeded,
// TooManyRequestsException, ProvisionedThroughputExceededException,
// RequestThrottled, …) and an HTTP 429 whose body named no code.
var throttles = retry.IsErrorThrottles(retry.DefaultThrottles)

// maxRetryAfter bounds the wait a response's header may ask for: past it
// the header is taken for a mistake and the host backs off on its own.
const maxRetryAfter = 10 * time.Minute

// asThrottled returns err as an sdk.Throttled diagnostic when AWS refused
// the call for its rate limit and the SDK's standard retryer (maxAttempts
// tries, with its own backoff) did not get it through: the host then
// lowers how many calls it makes at once and sends the same request again,
// rather than failing the step. A Create so answered may have made part of
// its resource before the refused call (a bucket, then its marker): the
// retry carries the same idempotency key and finishes what it finds, as
// after a crash. The wait is the response's x-amz-retry-after
// (milliseconds) or Retry-After (seconds), when it has one.
func asThrottled(what string, err error) (sdk.Diagnostic, bool) {
	if err == nil || throttles.IsErrorThrottle(err) != aws.TrueTernary {
		return sdk.Diagnostic{}, false
	}
	code := apiCode(err)
	if code == "" {
		code = "HTTP 429"
	}
	return sdk.Throttled(retryAfter(err), "%s: throttled by AWS (%s) after %d tries: %v", what, code, maxAttempts, err), true
}

// retryAfter is the wait the response behind err asked for, 0 when it
// asked for none (or for something unreadable or absurd).
func retryAfter(err error) time.Duration {
	var re *smithyhttp.ResponseError
	if !errors.As(err, &re) || re.Response == nil || re.Response.Response == nil {
		return 0
	}
	h := re.Response.Header
	if v := strings.TrimSpace(h.Get("X-Amz-Retry-After")); v != "" {
		if ms, perr := strconv.ParseInt(v, 10, 64); perr == nil && ms > 0 && ms <= maxRetryAfter.Milliseconds() {
			return time.Duration(ms) * time.Millisecond
		}
	}
	if v := strings.TrimSpace(h.Get("Retry-After")); v != "" {
		if s, perr := strconv.ParseInt(v, 10, 64); perr == nil && s > 0 && s <= int64(maxRetryAfter/time.Second) {
			return time.Duration(s) * time.Second
		}
		if at, perr := http.ParseTime(v); perr == nil {
			if d := time.Until(at); d > 0 && d <= maxRetryAfter {
				return d
			}
		}
	}
	return 0
}
