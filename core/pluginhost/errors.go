package pluginhost

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/bulwark-iac/bulwark/sdk"
)

// ErrPluginExited means the plugin process died or stopped answering.
var ErrPluginExited = errors.New("plugin did not respond (the process exited)")

// translate is the one place gRPC failures become host errors.
func translate(name, method string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("provider %s: %s: %w", name, method, err)
	}
	st, ok := status.FromError(err)
	if !ok {
		return fmt.Errorf("provider %s: %s: %w", name, method, err)
	}
	switch st.Code() {
	case codes.Unavailable:
		return fmt.Errorf("provider %s: %s: %w: %s", name, method, ErrPluginExited, st.Message())
	case codes.Canceled:
		return fmt.Errorf("provider %s: %s: %w", name, method, context.Canceled)
	case codes.DeadlineExceeded:
		return fmt.Errorf("provider %s: %s: %w", name, method, context.DeadlineExceeded)
	case codes.Unimplemented:
		return fmt.Errorf("provider %s: %s is not implemented by this plugin: %s", name, method, st.Message())
	}
	return fmt.Errorf("provider %s: %s: %s: %s", name, method, st.Code(), st.Message())
}

// diagErr turns a response's diagnostics into an error when one is an error.
func diagErr(name, method string, ds sdk.Diagnostics) error {
	if err := ds.Err(); err != nil {
		return &DiagnosticsError{Provider: name, Method: method, Diagnostics: ds}
	}
	return nil
}

// DiagnosticsError is a provider's refusal or failure, as diagnostics.
type DiagnosticsError struct {
	Provider    string
	Method      string
	Diagnostics sdk.Diagnostics
}

func (e *DiagnosticsError) Error() string {
	return fmt.Sprintf("provider %s: %s: %s", e.Provider, e.Method, e.Diagnostics.Error())
}

func (e *DiagnosticsError) Unwrap() error { return e.Diagnostics }
