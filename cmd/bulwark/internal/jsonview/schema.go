package jsonview

import "github.com/bulwark-iac/bulwark/core/providers"

// ProvidersSchema and the types below are `bulwark providers schema --json`:
// what each provider says of itself, read without configuring it. Every
// field is always present (false, "" or [] when unset), but error.
type (
	ProvidersSchema struct {
		FormatVersion string           `json:"format_version"`
		Providers     []SchemaProvider `json:"providers"`
	}
	SchemaProvider struct {
		Name          string             `json:"name"` // the plugin's name: bulwark-provider-NAME, a spec's source
		Version       string             `json:"version"`
		Protocol      int                `json:"protocol"`
		Error         string             `json:"error,omitempty"` // the plugin did not start; nothing else is set
		Capabilities  SchemaCapabilities `json:"capabilities"`
		Config        []SchemaAttribute  `json:"provider_config"`
		ResourceTypes []SchemaType       `json:"resource_types"`
		// DataSources are the types of data the provider reads (a spec's
		// data: entries), when capabilities.read_data. (Added in 1.0,
		// additively.)
		DataSources []SchemaDataSource `json:"data_sources"`
	}
	SchemaDataSource struct {
		Name        string            `json:"name"`
		Description string            `json:"description"`
		Attributes  []SchemaAttribute `json:"attributes"`
	}
	SchemaCapabilities struct {
		IdempotencyKeys bool `json:"idempotency_keys"`
		Import          bool `json:"import"`
		ReadMany        bool `json:"read_many"`
		ValidateMany    bool `json:"validate_many"`
		CreateMany      bool `json:"create_many"`
		CreateReadsBack bool `json:"create_reads_back"`
		DeleteReadsBack bool `json:"delete_reads_back"`
		// NoIdempotencyKeys: the provider takes no idempotency key (one
		// built for Terraform); a create of its types that a crash
		// interrupts stops resume for a person.
		NoIdempotencyKeys bool `json:"no_idempotency_keys,omitempty"`
		// ReadData: the provider reads data sources (data_sources).
		ReadData bool `json:"read_data"`
		// SchemaValidation: the provider's validation is its schema, which
		// bulwark checks itself: it never asks the provider to validate.
		SchemaValidation bool `json:"schema_validation"`
		// DeleteChecksKey: the provider deletes only a resource that
		// carries the key bulwark recorded for it, as one act, so bulwark
		// reads nothing before a delete to decide its ownership.
		DeleteChecksKey bool `json:"delete_checks_key"`
	}
	SchemaType struct {
		Name        string            `json:"name"`
		Description string            `json:"description"`
		Attributes  []SchemaAttribute `json:"attributes"`
		// Coexistence says when an old and a new instance can exist at
		// once, so a replace creates first (providers.Coexistence).
		Coexistence SchemaCoexistence `json:"coexistence"`
	}
	SchemaCoexistence struct {
		Always      bool     `json:"always"`
		WhenDiffers []string `json:"when_differs"`
	}
	SchemaAttribute struct {
		Name        string `json:"name"`
		Type        string `json:"type"` // string, number, bool, list, map
		Required    bool   `json:"required"`
		Computed    bool   `json:"computed"`
		Sensitive   bool   `json:"sensitive"`
		ForceNew    bool   `json:"force_new"`
		Description string `json:"description"`
	}
)

func schemaAttributes(as []providers.Attribute) []SchemaAttribute {
	out := make([]SchemaAttribute, 0, len(as))
	for _, a := range as {
		out = append(out, SchemaAttribute{Name: a.Name, Type: a.Type.String(), Required: a.Required, Computed: a.Computed,
			Sensitive: a.Sensitive, ForceNew: a.ForceNew, Description: a.Description})
	}
	return out
}

// NewSchemaProvider is what GetSchema said, in the order the provider said it.
func NewSchemaProvider(name string, protocol int, s *providers.GetSchemaResponse) SchemaProvider {
	p := SchemaProvider{Name: name, Version: s.ProviderVersion, Protocol: protocol,
		Capabilities: SchemaCapabilities{IdempotencyKeys: s.Capabilities.IdempotencyKeys, Import: s.Capabilities.Import,
			ReadMany: s.Capabilities.ReadMany, ValidateMany: s.Capabilities.ValidateMany, CreateMany: s.Capabilities.CreateMany,
			CreateReadsBack: s.Capabilities.CreateReadsBack, DeleteReadsBack: s.Capabilities.DeleteReadsBack,
			NoIdempotencyKeys: s.Capabilities.Keyless, ReadData: s.Capabilities.ReadData, SchemaValidation: s.Capabilities.SchemaValidation,
			DeleteChecksKey: s.Capabilities.DeleteChecksKey},
		Config:        schemaAttributes(s.ProviderConfig),
		ResourceTypes: make([]SchemaType, 0, len(s.ResourceTypes)),
		DataSources:   make([]SchemaDataSource, 0, len(s.DataSources)),
	}
	for _, dt := range s.DataSources {
		p.DataSources = append(p.DataSources, SchemaDataSource{Name: dt.Name, Description: dt.Description, Attributes: schemaAttributes(dt.Attributes)})
	}
	for _, rt := range s.ResourceTypes {
		p.ResourceTypes = append(p.ResourceTypes, SchemaType{Name: rt.Name, Description: rt.Description, Attributes: schemaAttributes(rt.Attributes),
			Coexistence: SchemaCoexistence{Always: rt.Coexistence.Always, WhenDiffers: append([]string{}, rt.Coexistence.WhenDiffers...)}})
	}
	return p
}
