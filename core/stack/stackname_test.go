package stack

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/bulwark-iac/bulwark/core/resolve"
	"github.com/bulwark-iac/bulwark/core/spec"
	"github.com/bulwark-iac/bulwark/core/state"
)

// TestUnresolvedStackNameOpensNothing: a spec whose stack name uses
// variables opens no state until the name is resolved, so no command can
// read or write another environment's stack (or one named ""); once
// resolved, the state is the resolved name's.
func TestUnresolvedStackNameOpensNothing(t *testing.T) {
	text := []byte("version: 1\nstack: app-${var.env}\nvariables:\n  env: {type: string}\nproviders: {mock: {}}\nresources: []\n")
	sp, err := spec.Parse("stack.yaml", text)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	opts := Options{StorageOptions: StorageOptions{StateDir: dir}}
	tests := []struct {
		name string
		run  func() error
	}{
		{"backend", func() error {
			_, err := opts.Backend(context.Background(), sp.Stack, state.Sealing{})
			return err
		}},
		{"load state", func() error { _, err := LoadState(sp, opts); return err }},
		{"load opened", func() error { _, err := LoadOpened(sp, opts); return err }},
		{"journal", func() error { _, err := ReadJournalKinds(sp, opts); return err }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.run(); !errors.Is(err, ErrNoStackName) {
				t.Errorf("err = %v, want ErrNoStackName", err)
			}
		})
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("the state folder holds %v", ents)
	}
	named, err := resolve.WithStackName(sp, map[string]any{"env": "prod"})
	if err != nil {
		t.Fatal(err)
	}
	be, err := opts.Backend(context.Background(), named.Stack, state.Sealing{})
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	if got, want := StackDir(dir, named.Stack), filepath.Join(dir, "app-prod"); got != want {
		t.Errorf("StackDir = %s, want %s", got, want)
	}
}
