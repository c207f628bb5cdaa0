package pluginhost

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/bulwark-iac/bulwark/core/providers"
)

func TestTranslate(t *testing.T) {
	plain := errors.New("encode attributes: boom")
	tests := []struct {
		name    string
		err     error
		is      []error  // errors.Is must hold for each
		isNot   []error  // and must not for these
		message []string // pieces of the message
	}{
		{"unavailable means the plugin exited", status.Error(codes.Unavailable, "error reading from server: EOF"),
			[]error{ErrPluginExited}, []error{context.Canceled, context.DeadlineExceeded},
			[]string{"provider mock: Create: ", ErrPluginExited.Error(), "error reading from server: EOF"}},
		{"wrapped unavailable too", fmt.Errorf("rpc: %w", status.Error(codes.Unavailable, "connection refused")),
			[]error{ErrPluginExited}, nil, []string{"connection refused"}},
		{"a TLS handshake that failed is no exit", status.Error(codes.Unavailable, `connection error: desc = "transport: authentication handshake failed: tls: failed to verify certificate: x509: certificate signed by unknown authority"`),
			nil, []error{ErrPluginExited}, []string{"provider mock: Create: the plugin's TLS handshake failed", "unknown authority"}},
		{"grpc canceled", status.Error(codes.Canceled, "context canceled"),
			[]error{context.Canceled}, []error{ErrPluginExited}, []string{"provider mock: Create: context canceled"}},
		{"grpc deadline", status.Error(codes.DeadlineExceeded, "context deadline exceeded"),
			[]error{context.DeadlineExceeded}, []error{ErrPluginExited}, []string{"deadline exceeded"}},
		{"context canceled as is", context.Canceled, []error{context.Canceled}, []error{ErrPluginExited}, []string{"provider mock: Create: context canceled"}},
		{"wrapped deadline as is", fmt.Errorf("x: %w", context.DeadlineExceeded), []error{context.DeadlineExceeded}, []error{ErrPluginExited}, nil},
		{"unimplemented", status.Error(codes.Unimplemented, "unknown method Frobnicate"),
			nil, []error{ErrPluginExited}, []string{"Create is not implemented by this plugin", "unknown method Frobnicate"}},
		{"other codes keep code and message", status.Error(codes.Internal, "grpc: error unmarshalling request"),
			nil, []error{ErrPluginExited}, []string{"provider mock: Create: Internal: grpc: error unmarshalling request"}},
		{"resource exhausted", status.Error(codes.ResourceExhausted, "message larger than max"),
			nil, []error{ErrPluginExited}, []string{"ResourceExhausted", "message larger than max"}},
		{"not a status: wrapped", plain, []error{plain}, []error{ErrPluginExited}, []string{"provider mock: Create: encode attributes: boom"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := translate("mock", "Create", tt.err)
			if got == nil {
				t.Fatal("translate returned nil for an error")
			}
			for _, target := range tt.is {
				if !errors.Is(got, target) {
					t.Errorf("%v: errors.Is(%v) = false", got, target)
				}
			}
			for _, target := range tt.isNot {
				if errors.Is(got, target) {
					t.Errorf("%v: errors.Is(%v) = true", got, target)
				}
			}
			for _, m := range tt.message {
				if !strings.Contains(got.Error(), m) {
					t.Errorf("message %q does not contain %q", got.Error(), m)
				}
			}
		})
	}
	if err := translate("mock", "Read", nil); err != nil {
		t.Errorf("translate(nil) = %v", err)
	}
	// A provider's diagnostics already name the provider and the call: not
	// twice ("provider mock: Configure: provider mock: Configure: …").
	de := diagErr("mock", "Configure", providers.Diagnostics{providers.AttributeErrorf([]string{"region"}, "no region")})
	if got := translate("mock", "Configure", de); got.Error() != "provider mock: Configure: region: no region" || !errors.Is(got, de) {
		t.Errorf("translate(DiagnosticsError) = %q", got)
	}
}

func TestDiagnosticsError(t *testing.T) {
	warn := providers.Diagnostic{Severity: providers.SeverityWarning, Summary: "deprecated"}
	tests := []struct {
		name string
		ds   providers.Diagnostics
		msg  string // "" for no error
	}{
		{"none", nil, ""},
		{"warnings only", providers.Diagnostics{warn}, ""},
		{"one error", providers.Diagnostics{providers.AttributeErrorf([]string{"size"}, "too big")}, "provider mock: Update: size: too big"},
		{"errors joined, warnings left out", providers.Diagnostics{providers.Errorf("a"), warn, providers.Errorf("b")}, "provider mock: Update: a; b"},
		// What a provider says reaches a terminal: its control characters
		// are shown escaped, never sent raw.
		{"escape sequences escaped", providers.Diagnostics{providers.Errorf("\x1b]0;owned\a\x1b[2Jgone\rbad")}, `provider mock: Update: \x1b]0;owned\a\x1b[2Jgone\rbad`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := diagErr("mock", "Update", tt.ds)
			if tt.msg == "" {
				if err != nil {
					t.Fatalf("diagErr = %v, want nil", err)
				}
				return
			}
			var de *DiagnosticsError
			if !errors.As(err, &de) {
				t.Fatalf("diagErr = %T %v, want *DiagnosticsError", err, err)
			}
			if de.Provider != "mock" || de.Method != "Update" || len(de.Diagnostics) != len(tt.ds) {
				t.Errorf("DiagnosticsError = %+v", de)
			}
			if err.Error() != tt.msg {
				t.Errorf("message %q, want %q", err.Error(), tt.msg)
			}
			var ds providers.Diagnostics
			if !errors.As(err, &ds) || len(ds) != len(tt.ds) {
				t.Errorf("errors.As(providers.Diagnostics) = %v", ds)
			}
			if errors.Is(err, ErrPluginExited) {
				t.Error("a refusal reads as a dead plugin")
			}
		})
	}
}
