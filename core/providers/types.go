package providers

import (
	"strings"

	"github.com/bulwark-iac/bulwark/core/protection"
)

// Attributes are the values of a resource's attributes, as decoded from JSON:
// string, float64, bool, []any, map[string]any or nil.
type Attributes = map[string]any

// AttributeType is the type of an attribute's value.
type AttributeType int

const (
	TypeUnspecified AttributeType = iota
	TypeString
	TypeNumber
	TypeBool
	TypeList
	TypeMap
)

func (t AttributeType) String() string {
	switch t {
	case TypeString:
		return "string"
	case TypeNumber:
		return "number"
	case TypeBool:
		return "bool"
	case TypeList:
		return "list"
	case TypeMap:
		return "map"
	}
	return "unspecified"
}

// Attribute describes one attribute of a resource type.
type Attribute struct {
	Name        string
	Type        AttributeType
	Required    bool // must be set in the configuration
	Computed    bool // set by the provider, never by the configuration
	Sensitive   bool // never shown in plans or output
	ForceNew    bool // a change replaces the resource
	Description string
}

// ResourceType describes one type of resource a provider manages.
type ResourceType struct {
	Name        string
	Description string
	Attributes  []Attribute
	// Coexistence says when an old and a new instance of the type can
	// exist at once, so that a replace creates the new one before it
	// deletes the old one. The zero value says they never can (the
	// conservative default): every replace of the type deletes first.
	Coexistence Coexistence
}

// Coexistence says when two instances of a type can exist at the same
// time (during a replace: the new one made, the old one not yet deleted).
type Coexistence struct {
	// Always: any two can (the provider names each one itself).
	Always bool
	// WhenDiffers: else two can when at least one of these attributes has
	// another value in the new configuration than in the old one (their
	// identity: a bucket's name, a folder's path). Two whose values are
	// all the same cannot.
	WhenDiffers []string
}

// Attribute returns the attribute named name, or false.
func (rt ResourceType) Attribute(name string) (Attribute, bool) {
	for _, a := range rt.Attributes {
		if a.Name == name {
			return a, true
		}
	}
	return Attribute{}, false
}

type GetSchemaRequest struct{}

type GetSchemaResponse struct {
	ProviderName    string
	ProviderVersion string
	ResourceTypes   []ResourceType
	// Capabilities are the optional parts of the contract this provider
	// offers. Over bulwark's own protocol the author sets IdempotencyKeys
	// and the sdk's Serve sets the others (below, "Serve" is that).
	Capabilities Capabilities
	// ProviderConfig describes the provider's own configuration (types,
	// required, sensitive). The host checks a spec's provider config against
	// it, and never shows a sensitive value. Nil: not described, not checked.
	ProviderConfig []Attribute
	// DataSources are the types of data the provider reads (ReadData),
	// when Capabilities.ReadData says it offers them.
	DataSources []DataSourceType
	Diagnostics Diagnostics
}

// DataSourceType describes one type of data a provider reads: its
// arguments (the config a spec's data entry writes: Required or optional,
// never Computed) and its results (Computed), which references read.
type DataSourceType struct {
	Name        string
	Description string
	Attributes  []Attribute
}

// Attribute returns the attribute named name, or false.
func (dt DataSourceType) Attribute(name string) (Attribute, bool) {
	for _, a := range dt.Attributes {
		if a.Name == name {
			return a, true
		}
	}
	return Attribute{}, false
}

// DataSource returns the data source type named name, or false.
func (s *GetSchemaResponse) DataSource(name string) (DataSourceType, bool) {
	for _, dt := range s.DataSources {
		if dt.Name == name {
			return dt, true
		}
	}
	return DataSourceType{}, false
}

// ReadDataRequest reads one data source: a spec's data entry.
type ReadDataRequest struct {
	Type string
	// Name is the data entry's name in the spec, for messages.
	Name   string
	Config Attributes
}

// ReadDataResponse is what a data source read answers: its arguments as
// the provider saw them and its results. A data source never mutates
// anything; the host reads it at plan time and never journals it.
type ReadDataResponse struct {
	Attributes  Attributes
	Diagnostics Diagnostics
}

// Capabilities are the optional parts of the provider contract. A provider
// written before one existed leaves it false, and the host treats it
// conservatively: without IdempotencyKeys, anything a Read finds by natural
// identity that the host's state does not record is somebody else's.
type Capabilities struct {
	// IdempotencyKeys promises two things: Read reports, in
	// ReadResponse.IdempotencyKey, the key each resource was created under;
	// and a Create whose identity (a name, a folder, a bucket) is already
	// taken by a resource made under another key, or none, fails with a
	// Conflict diagnostic and never claims it.
	IdempotencyKeys bool
	// Keyless says the provider takes no idempotency key at all (a
	// provider built for Terraform): a Read cannot find what a Create made
	// by its key, so a Create whose outcome a crash left unknown can only
	// be settled by a person. Never set over bulwark's own protocol, whose
	// contract makes every Read by key answer.
	Keyless bool
	// Import is set by Serve when the provider implements Importer.
	Import bool
	// ReadMany is set by Serve when the provider implements BatchReader:
	// the host then reads many resources in one call.
	ReadMany bool
	// ValidateMany is set by Serve when the provider implements
	// BatchValidator: the host then validates many resources in one call.
	ValidateMany bool
	// CreateMany is set by Serve when the provider implements
	// BatchCreator: the host then sends the Creates that are due at the
	// same time in one call.
	CreateMany bool
	// CreateReadsBack is set by Serve for every provider: a Create that
	// asks (CreateRequest.ReadBack) is answered with the resource as the
	// provider's own Read returns it once made (CreateResponse.ReadBack),
	// in the same call, and the host's Verify compares that read instead of
	// making one more round trip. A provider does nothing for it.
	CreateReadsBack bool
	// DeleteReadsBack is the same for a Delete (DeleteRequest.ReadBack,
	// DeleteResponse.ReadBack): Serve reads the resource by its id once the
	// provider deleted it, for the host's Verify, which expects it gone.
	DeleteReadsBack bool
	// ReadData says the provider reads data sources (ReadData); its
	// schema's DataSources list them. Set by Serve when the provider
	// implements DataReader; by a Terraform-protocol adapter when the
	// provider's schema has data sources.
	ReadData bool
	// SchemaValidation says the provider's ValidateResource checks nothing
	// its schema does not: the host's own schema check (CheckConfig) is the
	// whole validation, and it never calls ValidateResource or
	// ValidateMany to validate a config. Set by Serve for a provider with
	// no validation of its own (sdk.SchemaValidator); never by a
	// Terraform-protocol adapter.
	SchemaValidation bool
	// DeleteChecksKey says Delete honours DeleteRequest.ExpectedKey,
	// deciding and deleting as one act: the host then decides a delete's
	// ownership by the Delete itself, with no read before it. Never set by
	// a Terraform-protocol adapter (those providers stamp no key).
	DeleteChecksKey bool
}

// ValidateManyRequest is many ValidateResources.
type ValidateManyRequest struct {
	Resources []*ValidateResourceRequest
}

// ValidateManyResponse answers a ValidateManyRequest: one result per
// resource, in order.
type ValidateManyResponse struct {
	Results []*ValidateResourceResponse
	// Diagnostics concern the whole call; an error fails every validation.
	Diagnostics Diagnostics
}

// ReadManyRequest is many Reads.
type ReadManyRequest struct {
	Reads []*ReadRequest
}

// ReadManyResponse answers a ReadManyRequest: one result per read, in order.
type ReadManyResponse struct {
	Results []*ReadResponse
	// Diagnostics concern the whole call; an error fails every read.
	Diagnostics Diagnostics
}

// CreateManyRequest is many Creates.
type CreateManyRequest struct {
	Creates []*CreateRequest
}

// CreateManyResponse answers a CreateManyRequest: one result per Create, in
// order.
type CreateManyResponse struct {
	Results []*CreateResponse
	// Diagnostics concern the whole call; an error fails every Create.
	Diagnostics Diagnostics
}

// ImportRequest asks for the resource of type Type with id ID, which the
// host will record under Name.
type ImportRequest struct {
	Type   string
	Name   string
	ID     string
	Config Attributes
	// ClaimKey is the importing stack's key, to stamp on the resource as its
	// claim (docs/architecture.md, "Claims"): from then on Read reports it as
	// the resource's IdempotencyKey, so a second import anywhere meets a key
	// that is not its own. A provider that implements claims stamps it only
	// when the resource carries no key, a released one (see ReleasedKey),
	// ClaimKey itself, or ReplacesKey; for anything else it answers a
	// Conflict diagnostic naming the key found, and changes nothing. It then
	// sets ImportResponse.Claimed. Empty: read only, stamp nothing.
	ClaimKey string
	// ReplacesKey is a key the resource may carry that the host accepts
	// overwriting (its own stack's, stamped by an import a crash cut short);
	// empty: none.
	ReplacesKey string
}

// ImportResponse is what an Import found.
type ImportResponse struct {
	Exists     bool
	ID         string
	Attributes Attributes
	// IdempotencyKey is the key the resource was created under, if any.
	IdempotencyKey string
	// Private is private data for the host to store with the resource.
	Private []byte
	// Claimed says the resource now carries the request's ClaimKey (then
	// also IdempotencyKey). A provider that cannot stamp leaves it false,
	// and the host knows a second import of the resource goes unseen.
	Claimed     bool
	Diagnostics Diagnostics
}

// ReleaseRequest asks to give up the claim Key on the resource with id ID.
type ReleaseRequest struct {
	Type string
	Name string
	ID   string
	// Key is the claim the stack's state records for the resource.
	Key string
	// Private is the private data the host stored with the resource.
	Private []byte
}

// ReleaseResponse answers a ReleaseRequest.
type ReleaseResponse struct {
	// Released: the resource no longer carries Key as a live claim (it
	// carries it released, or it is gone).
	Released    bool
	Diagnostics Diagnostics
}

// releasedPrefix starts a released claim.
const releasedPrefix = "released:"

// ReleasedKey is what a resource carries, instead of its claim key, once
// the claim is released: "released:" + key. A Create never takes over a
// resource that carries it (it is no Create's key), and an import may.
func ReleasedKey(key string) string { return releasedPrefix + key }

// ReleasedFrom returns the claim key a released key gave up; ok is false
// for anything that is not a released key.
func ReleasedFrom(key string) (string, bool) {
	k, ok := strings.CutPrefix(key, releasedPrefix)
	return k, ok && k != ""
}

// Claimable reports whether a provider may stamp claim on a resource that
// carries current, for an ImportRequest with that ClaimKey and ReplacesKey:
// it carries no key, a released one, the claim itself, or replaces.
func Claimable(current, claim, replaces string) bool {
	if _, released := ReleasedFrom(current); released || current == "" || current == claim {
		return true
	}
	return replaces != "" && current == replaces
}

// ResourceType returns the type named name, or false.
func (s *GetSchemaResponse) ResourceType(name string) (ResourceType, bool) {
	for _, rt := range s.ResourceTypes {
		if rt.Name == name {
			return rt, true
		}
	}
	return ResourceType{}, false
}

type ConfigureRequest struct {
	Config Attributes
	// DataDir is a folder the host assigns to this provider and keeps between
	// runs; it exists when Configure is called.
	DataDir string
	// ReadOnly says the host will only call GetSchema, ValidateResource and
	// Read in this session (a plan, a validate): the provider must write
	// nothing anywhere — no clean-up, no persisted counters.
	ReadOnly bool
}

type ConfigureResponse struct {
	Diagnostics Diagnostics
}

type ValidateResourceRequest struct {
	Type   string
	Name   string
	Config Attributes
}

type ValidateResourceResponse struct {
	Diagnostics Diagnostics
}

type ReadRequest struct {
	Type string
	Name string
	// ID is the id the host recorded; empty when it has none.
	ID string
	// IdempotencyKey is set when the host does not know the outcome of a
	// Create made under this key: Read must find what that Create made.
	IdempotencyKey string
	Config         Attributes
	// Private is the private data the host stored with the resource (see
	// CreateResponse.Private); nil when it has none, as on a Read by
	// IdempotencyKey after a crash.
	Private []byte
}

type ReadResponse struct {
	Exists     bool
	ID         string
	Attributes Attributes
	// IdempotencyKey is the key the resource was created under, when the
	// provider recorded one ("" otherwise). See Capabilities.IdempotencyKeys.
	IdempotencyKey string
	// Private, when not empty, replaces the private data the host stores
	// with the resource; empty keeps what it has (a provider that wants to
	// forget it sends a small value of its own meaning "nothing").
	Private []byte
	// Planned is the provider's own plan toward the request's Config, from
	// a provider that plans (a Terraform-protocol one: its defaults and
	// normalisation are its own); nil from one that does not (bulwark's
	// own protocol), whose drift the host computes (plan.Drift).
	Planned     *Planned
	Diagnostics Diagnostics
}

// Planned is a provider's plan for a resource it read, toward a config.
type Planned struct {
	// Changes are the attributes the plan changes, sorted; empty: the
	// resource is as the config wants it.
	Changes []string
	// RequiresReplace are those of them that the provider can only change
	// by replacing the resource, sorted.
	RequiresReplace []string
}

type CreateRequest struct {
	Type   string
	Name   string
	Config Attributes
	// IdempotencyKey is unique to the step that asks: a second Create with the
	// same key must not make a second resource.
	IdempotencyKey string
	Protection     protection.Level
	// ReadBack is the host's ask for CreateResponse.ReadBack (of a provider
	// whose schema has Capabilities.CreateReadsBack). Serve answers it by
	// calling the provider's Read; a provider ignores it.
	ReadBack bool
}

type CreateResponse struct {
	ID         string
	Attributes Attributes
	// Private is data only the provider reads: the host stores it with the
	// resource in the state, sealed like a sensitive value (it may hold
	// secrets), and passes it back on every Read, Update and Delete of the
	// resource. It lives where the state lives (a file, PostgreSQL, S3), so
	// any machine that resumes the stack has it: a provider keeps in it, not
	// in its data folder, whatever it needs later about what it made (the
	// data folder is for caches).
	//
	// It is stored only once Create has answered. A Create that dies midway
	// (the process killed, the machine gone) returns nothing: what the next
	// attempt needs to recognise its own resource must be on the resource
	// itself from its birth (a tag, a marker), found by the idempotency key
	// the host journals before it calls Create.
	Private     []byte
	Diagnostics Diagnostics
	// ReadBack, on the host's side, is what the provider's Read answered for
	// the resource once made (by type, name, the new ID, the request's
	// config and Private), when the request asked for it and the Create
	// succeeded; nil when it was not asked for or the read failed (the host
	// then reads itself). Serve sets it: what a provider puts here is not
	// sent. A Terraform-protocol adapter answers it unasked, since it costs
	// no call: the state ApplyResourceChange returned, with the provider's
	// plan from it toward the config as its Planned.
	ReadBack *ReadResponse
}

type UpdateRequest struct {
	Type            string
	Name            string
	ID              string
	PriorAttributes Attributes
	Config          Attributes
	Protection      protection.Level
	// Private is the private data the host stored with the resource.
	Private []byte
}

type UpdateResponse struct {
	Attributes Attributes
	// Private, when not empty, replaces the stored private data (as
	// ReadResponse.Private).
	Private     []byte
	Diagnostics Diagnostics
	// ReadBack, when not nil, is the resource as a Read with the update's
	// config would answer it now, which the host's Verify compares instead
	// of reading again: a Terraform-protocol adapter answers it, at no
	// call's cost (see CreateResponse.ReadBack). Nothing else sets it; it
	// is not sent over bulwark's own protocol.
	ReadBack *ReadResponse
}

type DeleteRequest struct {
	Type       string
	Name       string
	ID         string
	Attributes Attributes
	Protection protection.Level
	// Private is the private data the host stored with the resource.
	Private []byte
	// ReadBack is the host's ask for DeleteResponse.ReadBack (of a provider
	// whose schema has Capabilities.DeleteReadsBack). Serve answers it by
	// calling the provider's Read; a provider ignores it.
	ReadBack bool
	// Observed says Private is what the provider's Read answered for the
	// resource just now (the delete step's Check, which found it there and
	// still this stack's), not only what the state recorded: a provider
	// that reads a resource before destroying it may take that read
	// instead. Set for a keyless provider (a Terraform-protocol adapter)
	// only; not sent over bulwark's own protocol.
	Observed bool
	// ExpectedKey is the idempotency key the state records for the
	// resource, for a provider with Capabilities.DeleteChecksKey: it
	// deletes only a resource that carries exactly this key, else nothing
	// (a Conflict diagnostic). Empty: no such check.
	ExpectedKey string
}

type DeleteResponse struct {
	Diagnostics Diagnostics
	// ReadBack, on the host's side, is what the provider's Read answered for
	// the resource (by type, name, ID and Private) once deleted, when the
	// request asked for it and the Delete succeeded; nil when it was not
	// asked for or the read failed (the host then reads itself). Serve sets
	// it: what a provider puts here is not sent. A Terraform-protocol
	// adapter answers it unasked (not found) when the provider's destroy
	// answered a null state, or its read before it found nothing.
	ReadBack *ReadResponse
}

// Result is one request of a batch the host answers request by request
// (pluginhost's ReadMany and CreateMany): what the single call would have
// returned. It is declared here, beside the responses it carries, so that
// what consumes a batch (core/observe's Provider, core/stack's) names it
// without importing the plugin host.
type Result[R any] struct {
	Response R
	Err      error
}

// ReadResult is one read of a batch: what Read would have returned.
type ReadResult = Result[*ReadResponse]

// CreateResult is one Create of a batch: what Create would have returned.
type CreateResult = Result[*CreateResponse]
