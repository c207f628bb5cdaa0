package sdk

import (
	"context"
	"errors"
	"strings"
)

// Provider is what a provider author implements. Every method takes the
// call's context and a request, and returns a response or an error. An error
// is sent to the host as an error diagnostic; return Diagnostics (for example
// AttributeErrorf) to point at an attribute.
type Provider interface {
	GetSchema(ctx context.Context, req *GetSchemaRequest) (*GetSchemaResponse, error)
	Configure(ctx context.Context, req *ConfigureRequest) (*ConfigureResponse, error)
	ValidateResource(ctx context.Context, req *ValidateResourceRequest) (*ValidateResourceResponse, error)
	Read(ctx context.Context, req *ReadRequest) (*ReadResponse, error)
	Create(ctx context.Context, req *CreateRequest) (*CreateResponse, error)
	Update(ctx context.Context, req *UpdateRequest) (*UpdateResponse, error)
	Delete(ctx context.Context, req *DeleteRequest) (*DeleteResponse, error)
}

// Attributes are the values of a resource's attributes, as decoded from JSON:
// string, float64, bool, []any, map[string]any or nil.
type Attributes = map[string]any

// Protection is a resource's level on the protection ladder.
type Protection int

const (
	ProtectionUnspecified Protection = iota
	ProtectionEphemeral
	ProtectionDurable
	ProtectionProtected
)

func (p Protection) String() string {
	switch p {
	case ProtectionEphemeral:
		return "ephemeral"
	case ProtectionDurable:
		return "durable"
	case ProtectionProtected:
		return "protected"
	}
	return "unspecified"
}

// ParseProtection turns "ephemeral", "durable" or "protected" into a
// Protection; "" is ephemeral, the default level.
func ParseProtection(s string) (Protection, bool) {
	switch s {
	case "", "ephemeral":
		return ProtectionEphemeral, true
	case "durable":
		return ProtectionDurable, true
	case "protected":
		return ProtectionProtected, true
	}
	return ProtectionUnspecified, false
}

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
	// offers. The author sets IdempotencyKeys; Serve sets Import when the
	// provider implements Importer.
	Capabilities Capabilities
	// ProviderConfig describes the provider's own configuration (types,
	// required, sensitive). The host checks a spec's provider config against
	// it, and never shows a sensitive value. Nil: not described, not checked.
	ProviderConfig []Attribute
	// DataSources are the types of data the provider reads, for a
	// provider that implements DataReader (Serve then sets
	// Capabilities.ReadData).
	DataSources []DataSourceType
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
	// ReadData is set by Serve when the provider implements DataReader:
	// the host then reads the DataSources the schema lists.
	ReadData bool
	// SchemaValidation is set by Serve when the provider has no validation
	// of its own (SchemaValidator): its ValidateResource checks nothing
	// the schema does not, so the host, which checks the schema itself,
	// never calls it to validate a config.
	SchemaValidation bool
	// DeleteChecksKey promises that Delete honours
	// DeleteRequest.ExpectedKey: it deletes only a resource that carries
	// exactly that idempotency key, and decides and deletes as one act
	// (in one transaction, by a conditional request, or under the
	// provider's own lock), so nothing can take the resource over in
	// between. Anything else is left as it is and answered with
	// DeleteConflict. The host then makes no ownership read before a
	// Delete. The author sets it; a provider whose API cannot delete
	// conditionally must not (the host then reads first).
	DeleteChecksKey bool
}

// SchemaValidator is an optional interface: a provider whose
// ValidateResource checks nothing its schema does not (CheckConfig, which
// Serve applies before ValidateResource and the host applies before it
// calls) says so with ValidatesBySchema returning true, and Serve sets
// Capabilities.SchemaValidation: the host then validates its configs from
// the schema alone, with no call. Embed SchemaValidation to get both
// methods.
type SchemaValidator interface {
	ValidatesBySchema() bool
}

// SchemaValidation is what a provider with no validation of its own
// embeds: its ValidateResource accepts every config (Serve has already
// checked it against the schema), and it is a SchemaValidator. A provider
// that embeds it and defines its own ValidateResource must define
// ValidatesBySchema too, returning false, or the host skips that
// validation.
type SchemaValidation struct{}

// ValidateResource accepts the config: the schema check is all there is.
func (SchemaValidation) ValidateResource(context.Context, *ValidateResourceRequest) (*ValidateResourceResponse, error) {
	return &ValidateResourceResponse{}, nil
}

// ValidatesBySchema reports true: the schema is the whole validation.
func (SchemaValidation) ValidatesBySchema() bool { return true }

// DataSourceType describes one type of data a provider reads (a data
// source): what exists outside the stack and a spec only refers to (an
// account's identity, a file, a bucket someone else made). Its arguments
// are the attributes a spec's data entry sets (Required, or optional);
// its results are Computed.
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

// DataReader is an optional interface: a provider that implements it reads
// the data sources its schema lists (GetSchemaResponse.DataSources). The
// host reads them at plan time and never journals them: ReadData must
// change nothing, anywhere, and may be called in a read-only session.
// Serve checks the config against the data source's schema first (every
// argument known, of its type, the required ones set, no result set): a
// config it rejects never reaches the provider. What is not there is an
// error naming it, not an empty answer. Without it Serve answers the RPC
// Unimplemented, and the host reads no data from the provider.
type DataReader interface {
	ReadData(ctx context.Context, req *ReadDataRequest) (*ReadDataResponse, error)
}

// ReadDataRequest asks for the data source of type Type, which a spec's
// data entry Name configures with Config.
type ReadDataRequest struct {
	Type   string
	Name   string
	Config Attributes
}

// ReadDataResponse is what a data source read: its arguments (as the
// provider saw them) and its results. A Sensitive result is sealed by the
// host and never shown.
type ReadDataResponse struct {
	Attributes  Attributes
	Diagnostics Diagnostics
}

// ErrDataUnsupported is returned (wrapped) by a client's ReadData of a
// provider that reads no data (it does not implement DataReader, or its
// plugin predates ReadData).
var ErrDataUnsupported = errors.New("the provider reads no data sources")

// BatchValidator is an optional interface: a provider that implements it is
// asked to validate many resources in one call (validate, plan, apply),
// which saves a round trip per resource. Results[i] must answer
// Resources[i] as ValidateResource would; an error fails the whole call.
// Serve checks each config against the schema first, as it does for
// ValidateResource: a config the schema rejects is answered without the
// provider and is not in the provider's request.
type BatchValidator interface {
	ValidateMany(ctx context.Context, req *ValidateManyRequest) (*ValidateManyResponse, error)
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

// BatchReader is an optional interface: a provider that implements it is
// asked for many Reads in one call (a plan, and an apply's reads before its
// first step), which saves a round trip per resource. Results[i] must answer
// Reads[i], exactly as Read would have (Exists false for what is absent);
// an error fails every read of the call. Without it the host makes single
// Reads, several at once.
type BatchReader interface {
	ReadMany(ctx context.Context, req *ReadManyRequest) (*ReadManyResponse, error)
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

// BatchCreator is an optional interface: a provider that implements it is
// sent, in one call, the Creates that concurrent steps have ready while
// another call to it is in flight (an apply at --parallelism above 1). A
// lone Create still comes as a Create, at once. Results[i] must answer
// Creates[i] exactly as Create would have answered it alone, in any order
// of work the provider likes:
//
//   - each request has its own idempotency key (Serve never passes two
//     with the same key in one call), and a retried request with a key
//     already used makes no second resource, as for Create;
//   - a request that fails gets its own result with error diagnostics and
//     neither fails nor hides the others: return an error (or error
//     Diagnostics in the response) only for what fails the whole call;
//   - the context is the call's: it ends when every step in the call has
//     stopped waiting (the user interrupted twice), or at the host's call
//     timeout;
//   - a call that dies midway (the process killed) answers nothing, as a
//     Create that dies midway: the host finds what each request made by
//     its key, so what a request needs to recognise its resource must be on
//     the resource from its birth, as for Create.
//
// Serve checks each request as it checks a Create (config against the
// schema, an idempotency key): a request that fails that check is answered
// without the provider and is not in the provider's request. The win is
// whatever one call can share: a round trip, a lock, a write, an fsync.
type BatchCreator interface {
	CreateMany(ctx context.Context, req *CreateManyRequest) (*CreateManyResponse, error)
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

// Importer is an optional interface: a provider that implements it is asked
// to Import a resource the host takes over by id (bulwark import). Without
// it the host reads the resource by id with Read.
type Importer interface {
	Import(ctx context.Context, req *ImportRequest) (*ImportResponse, error)
}

// Closer is an optional interface: Serve calls Close once the host has
// disconnected (the host ends every plugin process that way when a command
// ends), for what is best done once before the process exits, such as
// folding a log of changes into one file. A host that dies (kill -9) takes
// its plugins with it and Close is never called: nothing that must be
// durable may wait for it.
type Closer interface {
	Close() error
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

// Releaser is an optional interface: a provider that implements it gives
// up a stack's claim on a resource when the stack forgets it (`bulwark
// state forget`). Release leaves the resource as it is but for its key: a
// resource that carries req.Key from then on carries ReleasedKey(req.Key)
// (and Read reports that), so another stack may import it, and `bulwark
// import --from STACK` can tell that STACK let it go. A resource that is
// gone is released (nothing to do); one that carries another key, live or
// released, is refused with a Conflict diagnostic and left alone; one
// already released under req.Key is released (a retry). Without it Serve
// answers the RPC Unimplemented and the host keeps the claim, saying so.
type Releaser interface {
	Release(ctx context.Context, req *ReleaseRequest) (*ReleaseResponse, error)
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

// ErrReleaseUnsupported is returned (wrapped) by a host's Release of a
// provider that cannot release claims (it does not implement Releaser, or
// its plugin predates Release).
var ErrReleaseUnsupported = errors.New("the provider cannot release claims")

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
	Private     []byte
	Diagnostics Diagnostics
}

type CreateRequest struct {
	Type   string
	Name   string
	Config Attributes
	// IdempotencyKey is unique to the step that asks: a second Create with the
	// same key must not make a second resource.
	IdempotencyKey string
	Protection     Protection
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
	// sent.
	ReadBack *ReadResponse
}

type UpdateRequest struct {
	Type            string
	Name            string
	ID              string
	PriorAttributes Attributes
	Config          Attributes
	Protection      Protection
	// Private is the private data the host stored with the resource.
	Private []byte
}

type UpdateResponse struct {
	Attributes Attributes
	// Private, when not empty, replaces the stored private data (as
	// ReadResponse.Private).
	Private     []byte
	Diagnostics Diagnostics
}

type DeleteRequest struct {
	Type       string
	Name       string
	ID         string
	Attributes Attributes
	Protection Protection
	// Private is the private data the host stored with the resource.
	Private []byte
	// ReadBack is the host's ask for DeleteResponse.ReadBack (of a provider
	// whose schema has Capabilities.DeleteReadsBack). Serve answers it by
	// calling the provider's Read; a provider ignores it.
	ReadBack bool
	// ExpectedKey, when not empty, is the idempotency key the host recorded
	// for the resource: delete it only if it carries exactly this key, as
	// one act with the delete, else delete nothing and answer
	// DeleteConflict. Sent only to a provider that announces
	// Capabilities.DeleteChecksKey. A resource already gone is deleted
	// successfully, as always.
	ExpectedKey string
}

type DeleteResponse struct {
	Diagnostics Diagnostics
	// ReadBack, on the host's side, is what the provider's Read answered for
	// the resource (by type, name, ID and Private) once deleted, when the
	// request asked for it and the Delete succeeded; nil when it was not
	// asked for or the read failed (the host then reads itself). Serve sets
	// it: what a provider puts here is not sent.
	ReadBack *ReadResponse
}
