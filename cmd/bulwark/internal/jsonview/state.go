package jsonview

import (
	"github.com/bulwark-iac/bulwark/core/secrets"
	"github.com/bulwark-iac/bulwark/core/state"
)

// StateList is `bulwark state list --json`: every resource the state
// records, by name.
type StateList struct {
	FormatVersion string          `json:"format_version"`
	Stack         string          `json:"stack"`
	Resources     []StateResource `json:"resources"`
}

// StateShow is `bulwark state show --json`: one resource's record.
type StateShow struct {
	FormatVersion string        `json:"format_version"`
	Stack         string        `json:"stack"`
	Resource      StateResource `json:"resource"`
}

// StateResource is what the state records of one resource; sensitive
// values are secrets.Mask.
type StateResource struct {
	Name           string         `json:"name"`
	Type           string         `json:"type"`
	Provider       string         `json:"provider"`
	Source         string         `json:"source"`
	ID             string         `json:"id"`
	Protection     string         `json:"protection"`
	DependsOn      []string       `json:"depends_on"`
	Config         map[string]any `json:"config"`
	Attributes     map[string]any `json:"attributes"`
	Sensitive      []string       `json:"sensitive"`
	CreatedBy      string         `json:"created_by"`
	UpdatedBy      string         `json:"updated_by"`
	IdempotencyKey string         `json:"idempotency_key"`
	Imported       bool           `json:"imported"`
}

// NewStateResource is the document of one record.
func NewStateResource(r *state.Resource) StateResource {
	return StateResource{
		Name: r.Name, Type: r.Type, Provider: r.Provider, Source: r.Source, ID: r.ID, Protection: r.Protection.String(),
		DependsOn:  list(r.DependsOn),
		Config:     object(secrets.MaskKeys(r.Config, r.Sensitive)),
		Attributes: object(secrets.MaskKeys(r.Attributes, r.Sensitive)),
		Sensitive:  list(r.Sensitive), CreatedBy: r.CreatedBy, UpdatedBy: r.UpdatedBy,
		IdempotencyKey: r.IdempotencyKey, Imported: r.Imported,
	}
}

// NewStateList is the document of a state listing.
func NewStateList(stackName string, rs []*state.Resource) *StateList {
	out := &StateList{FormatVersion: FormatVersion, Stack: stackName, Resources: []StateResource{}}
	for _, r := range rs {
		out.Resources = append(out.Resources, NewStateResource(r))
	}
	return out
}

// NewStateShow is the document of one resource's record.
func NewStateShow(stackName string, r *state.Resource) *StateShow {
	return &StateShow{FormatVersion: FormatVersion, Stack: stackName, Resource: NewStateResource(r)}
}
