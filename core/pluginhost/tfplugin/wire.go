package tfplugin

import (
	"context"
	"fmt"

	"github.com/zclconf/go-cty/cty"

	"github.com/bulwark-iac/bulwark/core/providers"
)

// wire is one protocol version's calls in raw terms: values as the
// encoded bytes of their DynamicValues, schemas and diagnostics already in
// the package's types. wire5 and wire6 implement it over their generated
// clients; Provider does the rest once for both.
type wire interface {
	getSchema(ctx context.Context) (*ProviderSchema, error)
	validateProviderConfig(ctx context.Context, cfg []byte) (dynamic, providers.Diagnostics, error)
	configure(ctx context.Context, tfVersion string, cfg []byte) (providers.Diagnostics, error)
	validateResourceConfig(ctx context.Context, typeName string, cfg []byte) (providers.Diagnostics, error)
	validateDataSourceConfig(ctx context.Context, typeName string, cfg []byte) (providers.Diagnostics, error)
	upgradeResourceState(ctx context.Context, typeName string, version int64, rawJSON []byte) (dynamic, providers.Diagnostics, error)
	readResource(ctx context.Context, typeName string, state, private, meta []byte) (rawResult, error)
	planResourceChange(ctx context.Context, r rawPlan) (rawResult, error)
	applyResourceChange(ctx context.Context, r rawApply) (rawResult, error)
	importResourceState(ctx context.Context, typeName, id string) (rawImport, error)
	readDataSource(ctx context.Context, typeName string, cfg, meta []byte) (dynamic, providers.Diagnostics, error)
	stop(ctx context.Context) (string, error)
}

// dynamic is a DynamicValue's content.
type dynamic struct{ msgpack, json []byte }

func (d dynamic) empty() bool { return len(d.msgpack) == 0 && len(d.json) == 0 }

func (d dynamic) decode(ty cty.Type) (cty.Value, error) { return DecodeDynamic(d.msgpack, d.json, ty) }

type rawPlan struct {
	typeName                      string
	prior, proposed, config, meta []byte
	priorPrivate                  []byte
}

type rawApply struct {
	typeName                     string
	prior, planned, config, meta []byte
	plannedPrivate               []byte
}

// rawResult is what ReadResource, PlanResourceChange and
// ApplyResourceChange answer, each the part it has.
type rawResult struct {
	state           dynamic
	private         []byte
	requiresReplace []cty.Path
	legacy          bool
	diags           providers.Diagnostics
}

type rawImport struct {
	imported []rawImported
	diags    providers.Diagnostics
}

type rawImported struct {
	typeName string
	state    dynamic
	private  []byte
}

// pathStep is one step of an AttributePath, whichever version's.
type pathStep struct {
	name     string
	key      string
	index    int64
	selector int // 1 name, 2 key, 3 index, 0 none
}

// toPath turns the steps of an AttributePath into a cty.Path.
func toPath(steps []pathStep) cty.Path {
	var p cty.Path
	for _, s := range steps {
		switch s.selector {
		case 1:
			p = p.GetAttr(s.name)
		case 2:
			p = p.Index(cty.StringVal(s.key))
		case 3:
			p = p.Index(cty.NumberIntVal(s.index))
		}
	}
	return p
}

// diagnostic is one diagnostic in the host's terms.
func diagnostic(warning bool, summary, detail string, path cty.Path) providers.Diagnostic {
	sev := providers.SeverityError
	if warning {
		sev = providers.SeverityWarning
	}
	return providers.Diagnostic{Severity: sev, Summary: summary, Detail: detail, AttributePath: PathStrings(path)}
}

// deferredSummary is the summary of a deferred answer's diagnostic.
const deferredSummary = "the provider deferred the change"

// deferredDiag is the error a deferred answer is: the host never allows
// deferral (its client capabilities say so), so a provider that defers
// anyway has not done what it was asked.
func deferredDiag(reason string) providers.Diagnostic {
	return providers.Diagnostic{Severity: providers.SeverityError,
		Summary: deferredSummary,
		Detail:  fmt.Sprintf("reason %s; bulwark does not support deferred changes", reason)}
}
