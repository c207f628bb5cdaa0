package graphsvg

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bulwark-iac/bulwark/core/internal/layouttest"
)

// layout is the layout program the tests run, built plain (layouttest).
var layout layouttest.Layout

func TestMain(m *testing.M) {
	code := m.Run()
	layout.Close()
	os.Exit(code)
}

// testProgram is the layout program of these tests.
func testProgram(tb testing.TB) string {
	tb.Helper()
	return layout.Program(tb)
}

func TestRendererReportsTheLayoutError(t *testing.T) {
	_, err := NewRenderer(testProgram(t)).Render(context.Background(), "digraph { a -> ")
	if err == nil || !strings.Contains(err.Error(), "lay out graph: parse dot") {
		t.Fatalf("Render of broken DOT: %v, want the layout program's parse error", err)
	}
}

func TestRendererWithoutTheProgram(t *testing.T) {
	missing := filepath.Join(t.TempDir(), ProgramName())
	_, err := NewRenderer(missing).Render(context.Background(), "digraph { a }")
	if err == nil || !strings.Contains(err.Error(), missing) {
		t.Fatalf("Render with no program: %v, want an error naming %s", err, missing)
	}
}

func TestRendererStopsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := NewRenderer(testProgram(t)).Render(ctx, "digraph { a }"); err == nil {
		t.Fatal("Render with a cancelled context succeeded")
	}
}

// Program looks beside the running executable only: this test binary's
// folder holds no bulwark-graphviz, and one on $PATH is not taken.
func TestProgramLooksBesideTheExecutableOnly(t *testing.T) {
	onPath := t.TempDir()
	if err := os.WriteFile(filepath.Join(onPath, ProgramName()), []byte("#!/bin/sh\necho planted\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", onPath+string(os.PathListSeparator)+os.Getenv("PATH"))
	p, err := Program()
	var missing *MissingProgramError
	if !errors.As(err, &missing) {
		t.Fatalf("Program() = %q, %v; want a MissingProgramError (no %s beside the test binary)", p, err, ProgramName())
	}
	exe, _ := os.Executable()
	exe, _ = filepath.EvalSymlinks(exe)
	if want := filepath.Join(filepath.Dir(exe), ProgramName()); missing.Path != want {
		t.Errorf("looked at %s, want %s", missing.Path, want)
	}
	if !strings.Contains(err.Error(), "go install github.com/bulwark-iac/bulwark/cmd/bulwark/cmd/bulwark-graphviz@") {
		t.Errorf("the error does not say how to install it: %v", err)
	}
}
