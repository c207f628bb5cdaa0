package pluginhost

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"syscall"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/bulwark-iac/bulwark/core/printable"
	"github.com/bulwark-iac/bulwark/core/providers"
)

// ProtocolError refuses a plugin that speaks none of the protocol versions
// the host offers.
type ProtocolError struct {
	Provider string
	Plugin   string // what the plugin speaks, as it said
	Host     []int  // what the host offers
}

func (e *ProtocolError) Error() string {
	return fmt.Sprintf("provider %s speaks provider protocol %s; this bulwark speaks %v: use a plugin built for one of those, or a bulwark that speaks %s",
		e.Provider, e.Plugin, e.Host, e.Plugin)
}

// startError explains why a plugin did not start: a protocol mismatch, a
// handshake that never came or made no sense, or a process that died
// (exited, as ps tells, when known). What the plugin wrote is shown with
// its control characters escaped: it reaches a terminal.
func startError(name, path string, offered []int, err error, exited *os.ProcessState) error {
	msg := err.Error()
	if m := incompatible.FindStringSubmatch(msg); m != nil {
		return &ProtocolError{Provider: name, Plugin: m[1], Host: offered}
	}
	switch {
	case strings.Contains(msg, "timeout while waiting for plugin to start"):
		return fmt.Errorf("provider %s: %s did not complete the plugin handshake in time (--plugin-start-timeout); is it a bulwark provider?: %w", name, path, err)
	case exited != nil && (strings.Contains(msg, "Failed to read any lines from plugin's stdout") || strings.Contains(msg, "plugin exited before we could connect")):
		// It wrote nothing and is gone: it died, it did not misbehave.
		return fmt.Errorf("provider %s: %s %s (its stderr shows with BULWARK_LOG=debug)", name, path, howExited(exited))
	case strings.Contains(msg, "Unrecognized remote plugin message"):
		return &printableError{err: fmt.Errorf("provider %s: %s wrote something other than the plugin handshake on stdout (a plugin must log to stderr only): %w", name, path, err)}
	}
	return &printableError{err: fmt.Errorf("provider %s: start %s: %w", name, path, err)}
}

// howExited says how a plugin process that never completed its handshake
// ended.
func howExited(ps *os.ProcessState) string {
	ws, ok := ps.Sys().(syscall.WaitStatus)
	switch {
	case ok && ws.Signaled():
		return fmt.Sprintf("crashed before the plugin handshake: killed by signal %s", signalName(ws.Signal()))
	case ps.ExitCode() > 128 && ps.ExitCode() < 128+65:
		// A shell reports its child's death by signal N as 128+N.
		return fmt.Sprintf("exited before the plugin handshake with status %d (a wrapper's child killed by signal %s?)", ps.ExitCode(), signalName(syscall.Signal(ps.ExitCode()-128)))
	}
	return fmt.Sprintf("exited before the plugin handshake with status %d", ps.ExitCode())
}

// signalName is a signal's name as kill -l says it (SIGSEGV), with what
// it means.
func signalName(s syscall.Signal) string {
	names := map[syscall.Signal]string{
		syscall.SIGSEGV: "SIGSEGV", syscall.SIGABRT: "SIGABRT", syscall.SIGBUS: "SIGBUS", syscall.SIGILL: "SIGILL",
		syscall.SIGFPE: "SIGFPE", syscall.SIGKILL: "SIGKILL", syscall.SIGTERM: "SIGTERM", syscall.SIGINT: "SIGINT",
		syscall.SIGQUIT: "SIGQUIT", syscall.SIGTRAP: "SIGTRAP", syscall.SIGPIPE: "SIGPIPE", syscall.SIGHUP: "SIGHUP",
	}
	if n, ok := names[s]; ok {
		return fmt.Sprintf("%s (%s)", n, s)
	}
	return fmt.Sprintf("%d (%s)", int(s), s)
}

// printableError is an error whose text is printable's; it unwraps to the
// original.
type printableError struct{ err error }

func (e *printableError) Error() string { return printable.Text(e.err.Error()) }

func (e *printableError) Unwrap() error { return e.err }

var incompatible = regexp.MustCompile(`incompatible API version with plugin\. Plugin version: (\d+)`)

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
	if errors.Is(err, ErrPluginExited) {
		return err
	}
	if de := (*DiagnosticsError)(nil); errors.As(err, &de) && de.Provider == name && de.Method == method {
		// Already names the provider and the call.
		return err
	}
	st, ok := status.FromError(err)
	if !ok {
		return &printableError{err: fmt.Errorf("provider %s: %s: %w", name, method, err)}
	}
	st = status.New(st.Code(), printable.Text(st.Message())) // what the plugin said reaches a terminal
	switch st.Code() {
	case codes.Unavailable:
		if strings.Contains(st.Message(), "authentication handshake failed") {
			// The process runs, but the two sides did not authenticate
			// each other (see handshake.HostTLS): a restart would not help.
			return fmt.Errorf("provider %s: %s: the plugin's TLS handshake failed (host and plugin each accept only the certificate the other passed at start): %s", name, method, st.Message())
		}
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
func diagErr(name, method string, ds providers.Diagnostics) error {
	if err := ds.Err(); err != nil {
		return &DiagnosticsError{Provider: name, Method: method, Diagnostics: ds}
	}
	return nil
}

// DiagnosticsError is a provider's refusal or failure, as diagnostics.
type DiagnosticsError struct {
	Provider    string
	Method      string
	Diagnostics providers.Diagnostics
}

func (e *DiagnosticsError) Error() string {
	return fmt.Sprintf("provider %s: %s: %s", e.Provider, e.Method, printable.Text(e.Diagnostics.Error()))
}

func (e *DiagnosticsError) Unwrap() error { return e.Diagnostics }

// oneLine keeps a provider's error to one line for what bulwark prints,
// journals and emits as events: an error spanning several lines (a panic
// trace from a provider built on an older sdk, a pretty-printed response)
// keeps its first line and says how many followed. The full text goes to the
// host's log (BULWARK_LOG). errors.Is and errors.As still see the original.
func (p *Plugin) oneLine(method string, err error) error {
	if err == nil {
		return nil
	}
	text := strings.TrimSpace(err.Error())
	first, rest, ok := strings.Cut(text, "\n")
	if !ok {
		return err
	}
	p.host.opts.Logger.Error("provider error spans several lines; the full text", "provider", p.cfg.Name, "method", method, "error", text)
	n := strings.Count(rest, "\n") + 1
	return &lineError{err: err, text: fmt.Sprintf("%s [%d more line(s) in the log: BULWARK_LOG=error]", strings.TrimSpace(first), n)}
}

// lineError is an error shown as one line; it unwraps to the original.
type lineError struct {
	err  error
	text string
}

func (e *lineError) Error() string { return e.text }

func (e *lineError) Unwrap() error { return e.err }
