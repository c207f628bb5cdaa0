package inspect

import (
	"context"
	"errors"
	"testing"

	"github.com/bulwark-iac/bulwark/core/pluginhost"
	"github.com/bulwark-iac/bulwark/core/stack"
)

// A provider that does not start is reported in its own entry, in order,
// and the others are still tried; a done context is the error.
func TestSchemasReportsWhatDoesNotStart(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("HOME", dir)
	opts := &stack.Options{PluginOptions: stack.PluginOptions{PluginDirs: []string{dir}}, StorageOptions: stack.StorageOptions{StateDir: dir}}
	got, err := Schemas(context.Background(), opts, []string{"nosuch", "acme/nosuch"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Name != "nosuch" || got[1].Name != "acme/nosuch" {
		t.Fatalf("entries %+v", got)
	}
	var nf *pluginhost.NotFoundError
	if !errors.As(got[0].Err, &nf) || got[0].Schema != nil {
		t.Errorf("a plugin not found: %+v", got[0])
	}
	if got[1].Err == nil || got[1].Schema != nil {
		t.Errorf("a Terraform provider not found: %+v", got[1])
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	got, err = Schemas(ctx, opts, []string{"nosuch"})
	if !errors.Is(err, context.Canceled) || len(got) != 1 || got[0].Err == nil {
		t.Errorf("cancelled: %+v, %v", got, err)
	}
}
