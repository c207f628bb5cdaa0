package inspect

import (
	"context"
	"os"
	"path/filepath"
	"strings"

	"github.com/bulwark-iac/bulwark/core/pluginhost"
	"github.com/bulwark-iac/bulwark/core/providers"
	"github.com/bulwark-iac/bulwark/core/stack"
)

// ProviderSchema is one provider as Schemas started it: its protocol and
// schema, or why it did not start.
type ProviderSchema struct {
	Name     string
	Protocol int
	Schema   *providers.GetSchemaResponse
	Err      error
}

// Schemas starts each provider of names (a plugin's name, or a Terraform
// provider's source address, found and pinned as a run would under opts'
// plugin folders and lock) for its schema only, never Configure: a
// provider whose config only a spec can give would refuse an empty one
// (`providers`, `providers schema`). A provider that does not start is
// reported in its entry; the error is the context's, once it is done, with
// every entry made (each a refusal from then on).
func Schemas(ctx context.Context, opts *stack.Options, names []string) ([]ProviderSchema, error) {
	tmp, err := os.MkdirTemp("", "bulwark-schema-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	host := pluginhost.New(pluginhost.Options{Dirs: opts.PluginDirs, Logger: opts.Logger, StartTimeout: opts.StartTimeout, CallTimeout: opts.CallTimeout})
	defer host.Close()
	out := make([]ProviderSchema, 0, len(names))
	for _, n := range names {
		pc := pluginhost.Config{Name: n, Source: n, DataDir: filepath.Join(tmp, strings.ReplaceAll(n, "/", "_")), ReadOnly: true, SchemaOnly: true}
		var err error
		if strings.Contains(n, "/") {
			err = stack.TerraformPlugin(ctx, opts, &pc, n, "", filepath.Join(tmp, "copies"))
		}
		var p *pluginhost.Plugin
		if err == nil {
			p, err = host.Start(ctx, pc)
		}
		if err != nil {
			out = append(out, ProviderSchema{Name: n, Err: err})
			continue
		}
		out = append(out, ProviderSchema{Name: n, Protocol: p.Protocol(), Schema: p.Schema()})
	}
	return out, ctx.Err()
}
