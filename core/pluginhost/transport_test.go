package pluginhost

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-plugin"

	"github.com/bulwark-iac/bulwark/core/pluginhost/grpcv1"
	"github.com/bulwark-iac/bulwark/core/providers"
	"github.com/bulwark-iac/bulwark/sdk/proto/handshake"
)

// A plugin that speaks only a version the host does not offer is refused,
// and the message names both sides' versions.
func TestProtocolMismatchNamesBothSides(t *testing.T) {
	dir := testPlugin(t)
	t.Setenv("TESTPLUGIN_MODE", "v2")
	h := New(Options{Dirs: []string{dir}, StartTimeout: 20 * time.Second})
	defer h.Close()
	_, err := h.Start(ctxT(t), Config{Name: "t", Source: "test", DataDir: t.TempDir()})
	var pe *ProtocolError
	if !errors.As(err, &pe) {
		t.Fatalf("Start = %v, want a ProtocolError", err)
	}
	if pe.Plugin != "2" || len(pe.Host) != 1 || pe.Host[0] != 1 {
		t.Fatalf("ProtocolError = %+v", pe)
	}
	if msg := err.Error(); !strings.Contains(msg, "speaks provider protocol 2") || !strings.Contains(msg, "this bulwark speaks [1]") {
		t.Fatalf("message does not name both sides: %s", msg)
	}
	waitNoneRunning(t, filepath.Join(dir, Prefix+"test"), 10*time.Second)
}

// A host that also offers a (test-only) version 2 still runs a v1 plugin,
// which negotiates version 1; and a v2 plugin negotiates 2 with it.
func TestHostOfferingV2StillRunsV1Plugins(t *testing.T) {
	dir := testPlugin(t)
	versions := map[int]plugin.PluginSet{grpcv1.ProtocolVersion: grpcv1.PluginSet()}
	versions[2] = plugin.PluginSet{handshake.PluginName: &grpcv1.Plugin{}} // test-only v2: same messages
	h := New(Options{Dirs: []string{dir}, Versions: versions})
	defer h.Close()
	p, err := h.Start(ctxT(t), Config{Name: "t", Source: "test", DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if p.Protocol() != 1 {
		t.Fatalf("negotiated %d with a v1 plugin, want 1", p.Protocol())
	}
	if _, err := p.Read(ctxT(t), &providers.ReadRequest{Type: "thing", Name: "x"}); err != nil {
		t.Fatalf("v1 plugin under a v1+v2 host: %v", err)
	}
	t.Setenv("TESTPLUGIN_MODE", "v2")
	p2, err := h.Start(ctxT(t), Config{Name: "t2", Source: "test", DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if p2.Protocol() != 2 {
		t.Fatalf("negotiated %d with a v2 plugin, want 2", p2.Protocol())
	}
}

// A plugin that never completes the handshake is given up on within the
// start timeout, with a message that says what happened.
func TestSilentPluginTimesOut(t *testing.T) {
	dir := testPlugin(t)
	t.Setenv("TESTPLUGIN_MODE", "silent")
	h := New(Options{Dirs: []string{dir}, StartTimeout: 500 * time.Millisecond})
	defer h.Close()
	t0 := time.Now()
	_, err := h.Start(ctxT(t), Config{Name: "t", Source: "test", DataDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "did not complete the plugin handshake in time") {
		t.Fatalf("Start = %v", err)
	}
	if d := time.Since(t0); d > 10*time.Second {
		t.Fatalf("gave up after %s, want about the 500ms start timeout", d)
	}
	waitNoneRunning(t, filepath.Join(dir, Prefix+"test"), 10*time.Second)
}

// A call that hangs ends at the host's call timeout, naming it.
func TestHangingCallEndsAtCallTimeout(t *testing.T) {
	dir := testPlugin(t)
	h := New(Options{Dirs: []string{dir}, CallTimeout: 300 * time.Millisecond})
	defer h.Close()
	p, err := h.Start(ctxT(t), Config{Name: "t", Source: "test", DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	_, err = p.Read(ctxT(t), &providers.ReadRequest{Type: "thing", Name: "hang"})
	if err == nil || !strings.Contains(err.Error(), "did not answer within 300ms (--plugin-call-timeout)") {
		t.Fatalf("Read = %v", err)
	}
	if d := time.Since(t0); d > 10*time.Second {
		t.Fatalf("returned after %s", d)
	}
}

// With a recorded sha256, the host runs a private copy of the bytes it
// verified; bytes that differ are refused, naming both hashes.
func TestIntegrityVerifiedCopy(t *testing.T) {
	src := filepath.Join(testPlugin(t), Prefix+"test")
	dir := t.TempDir()
	exe := filepath.Join(dir, Prefix+"test")
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(exe, b, 0o755); err != nil {
		t.Fatal(err)
	}
	sum, err := FileSHA256(exe)
	if err != nil {
		t.Fatal(err)
	}
	h := New(Options{Dirs: []string{dir}})
	defer h.Close()
	p, err := h.Start(ctxT(t), Config{Name: "t", Source: "test", DataDir: t.TempDir(), SHA256: sum})
	if err != nil {
		t.Fatal(err)
	}
	if p.run == exe || !strings.HasPrefix(filepath.Base(p.run), Prefix+"test-") {
		t.Fatalf("ran %s, want a private verified copy", p.run)
	}
	// Replace the original after the check: the running copy is unaffected,
	// and a restart still runs the verified copy.
	if err := os.WriteFile(exe, []byte("#!/bin/sh\necho evil\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	p.kill()
	if _, err := p.Read(ctxT(t), &providers.ReadRequest{Type: "thing", Name: "x"}); err != nil {
		t.Fatalf("restart after the original changed: %v", err)
	}
	_, err = h.Start(ctxT(t), Config{Name: "t2", Source: "test", DataDir: t.TempDir(), SHA256: sum})
	var ie *IntegrityError
	if !errors.As(err, &ie) || ie.Want != sum || ie.Got == sum || !strings.Contains(err.Error(), sum) || !strings.Contains(err.Error(), ie.Got) {
		t.Fatalf("Start of changed bytes = %v", err)
	}
	private := h.private
	h.Close()
	if _, err := os.Stat(private); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("private copies left after Close: %v", err)
	}
}
