// Command bulwark-provider-hello is an example bulwark provider: greetings, kept in greetings.json in
// the host's data folder. A greeting's id is the idempotency key of the Create that made it.
package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"sync"

	"github.com/bulwark-iac/bulwark/sdk"
	"github.com/bulwark-iac/bulwark/sdk/atomicfile"
)

type hello struct {
	mu    sync.Mutex                // held by every call
	file  string                    // greetings.json in the data folder
	world map[string]sdk.Attributes // what it holds, by name: text, shout, id. Replaced, never changed in place
}

func (h *hello) GetSchema(context.Context, *sdk.GetSchemaRequest) (*sdk.GetSchemaResponse, error) {
	return &sdk.GetSchemaResponse{ProviderName: "hello", ProviderVersion: "0.1.0", ResourceTypes: []sdk.ResourceType{{
		Name: "greeting", Attributes: []sdk.Attribute{{Name: "text", Type: sdk.TypeString, Required: true, ForceNew: true},
			{Name: "shout", Type: sdk.TypeBool}, {Name: "id", Type: sdk.TypeString, Computed: true}},
		// Greetings are kept by name: an old and a new one of a name cannot exist at once, so a replace
		// (a new text) deletes the old one first. The zero value says so; a type whose instances can
		// coexist says when: sdk.Coexistence{Always: true}, or WhenDiffers its identity attributes.
		Coexistence: sdk.Coexistence{}}},
		// Optional: Read reports the key each greeting was made under, and Create never claims a taken name.
		Capabilities: sdk.Capabilities{IdempotencyKeys: true}}, nil
}

func (h *hello) Configure(_ context.Context, req *sdk.ConfigureRequest) (*sdk.ConfigureResponse, error) {
	defer h.lock()() // hello takes no provider config
	h.file, h.world = filepath.Join(req.DataDir, "greetings.json"), map[string]sdk.Attributes{}
	if b, err := os.ReadFile(h.file); !os.IsNotExist(err) { // else nothing is made yet
		return &sdk.ConfigureResponse{}, cmp.Or(err, json.Unmarshal(b, &h.world))
	}
	return &sdk.ConfigureResponse{}, nil
}

func (h *hello) ValidateResource(context.Context, *sdk.ValidateResourceRequest) (*sdk.ValidateResourceResponse, error) {
	return &sdk.ValidateResourceResponse{}, nil // sdk.Serve has checked the config against the schema
}

func (h *hello) Read(_ context.Context, req *sdk.ReadRequest) (*sdk.ReadResponse, error) {
	defer h.lock()()
	if a, id := h.world[req.Name], cmp.Or(req.ID, req.IdempotencyKey); a != nil && (id == "" || a["id"] == id) {
		// The id is the key the greeting was created under: report it (Capabilities.IdempotencyKeys),
		// unless an import stamped a claim on it since (see Import).
		attrs := maps.Clone(a)
		delete(attrs, "claim")
		return &sdk.ReadResponse{Exists: true, ID: a["id"].(string), Attributes: attrs, IdempotencyKey: keyOf(a)}, nil
	}
	return &sdk.ReadResponse{}, nil // absent is Exists false, not an error
}

// keyOf is the key a greeting carries: the claim an import stamped on it, else the key it was made under.
func keyOf(a sdk.Attributes) string {
	claim, _ := a["claim"].(string)
	return cmp.Or(claim, a["id"].(string))
}

// Import is optional (sdk.Importer; sdk.Serve sees it and declares Capabilities.Import): without it the host
// takes a greeting over with Read by id. hello uses it to say why an id cannot be imported under that name.
func (h *hello) Import(ctx context.Context, req *sdk.ImportRequest) (*sdk.ImportResponse, error) {
	for name, a := range h.snapshot() {
		if a["id"] == req.ID && name != req.Name {
			return nil, sdk.Errorf("greeting %s is named %s, not %s: use that name in the spec", req.ID, name, req.Name)
		}
	}
	if req.ClaimKey != "" { // the importing stack's claim: stamp it, unless another stack holds the greeting
		if err := h.claim(req.Name, req.ID, func(cur string) (string, error) {
			if !sdk.Claimable(cur, req.ClaimKey, req.ReplacesKey) {
				return "", sdk.Conflict(fmt.Sprintf("greeting %s is claimed by another stack", req.Name), cur)
			}
			return req.ClaimKey, nil
		}); err != nil {
			return nil, err
		}
	}
	r, err := h.Read(ctx, &sdk.ReadRequest{Type: req.Type, Name: req.Name, ID: req.ID})
	if err != nil {
		return nil, err
	}
	return &sdk.ImportResponse{Exists: r.Exists, ID: r.ID, Attributes: r.Attributes, IdempotencyKey: r.IdempotencyKey,
		Claimed: r.Exists && req.ClaimKey != "" && r.IdempotencyKey == req.ClaimKey}, nil
}

// Release is optional too (sdk.Releaser): `bulwark state forget` gives the stack's claim up through it, so
// another stack may import the greeting. Without it the claim stays, and no other stack can take it over.
func (h *hello) Release(_ context.Context, req *sdk.ReleaseRequest) (*sdk.ReleaseResponse, error) {
	err := h.claim(req.Name, req.ID, func(cur string) (string, error) {
		if cur != req.Key && cur != sdk.ReleasedKey(req.Key) {
			return "", sdk.Conflict(fmt.Sprintf("greeting %s does not carry the claim %s", req.Name, req.Key), cur)
		}
		return sdk.ReleasedKey(req.Key), nil
	})
	return &sdk.ReleaseResponse{Released: err == nil}, err
}

// claim sets the claim of greeting name (id id) to what next says, given the key it carries now; a greeting
// that is gone is left so.
func (h *hello) claim(name, id string, next func(cur string) (string, error)) error {
	defer h.lock()()
	a := h.world[name]
	if a == nil || a["id"] != id {
		return nil
	}
	claim, err := next(keyOf(a))
	if err != nil || claim == keyOf(a) {
		return err
	}
	cfg := maps.Clone(a)
	cfg["claim"] = claim
	return h.save(name, cfg, id)
}

func (h *hello) Create(_ context.Context, req *sdk.CreateRequest) (*sdk.CreateResponse, error) {
	defer h.lock()()
	if a := h.world[req.Name]; a != nil && a["id"] == req.IdempotencyKey { // a retry: what the first Create made
		return &sdk.CreateResponse{ID: req.IdempotencyKey, Attributes: a}, nil
	} else if a != nil { // taken under another key: a conflict, never claimed
		return nil, sdk.Conflict(fmt.Sprintf("greeting %s already exists", req.Name), a["id"].(string))
	}
	err := h.save(req.Name, req.Config, req.IdempotencyKey)
	return &sdk.CreateResponse{ID: req.IdempotencyKey, Attributes: h.world[req.Name]}, err
}

func (h *hello) Update(_ context.Context, req *sdk.UpdateRequest) (*sdk.UpdateResponse, error) {
	defer h.lock()()
	if a := h.world[req.Name]; a == nil || a["id"] != req.ID {
		return nil, sdk.Errorf("greeting %s (id %s) does not exist", req.Name, req.ID)
	}
	cfg := maps.Clone(req.Config)
	if claim, ok := h.world[req.Name]["claim"]; ok { // an update keeps the claim an import stamped
		cfg["claim"] = claim
	}
	if err := h.save(req.Name, cfg, req.ID); err != nil {
		return nil, err
	}
	attrs := maps.Clone(h.world[req.Name])
	delete(attrs, "claim")
	return &sdk.UpdateResponse{Attributes: attrs}, nil
}

func (h *hello) Delete(_ context.Context, req *sdk.DeleteRequest) (*sdk.DeleteResponse, error) {
	defer h.lock()()
	if a := h.world[req.Name]; a == nil || req.ID != "" && a["id"] != req.ID {
		return &sdk.DeleteResponse{}, nil // deleting what is gone succeeds
	}
	return &sdk.DeleteResponse{}, h.save(req.Name, nil, "")
}

func (h *hello) lock() (unlock func()) { h.mu.Lock(); return h.mu.Unlock }

func (h *hello) snapshot() map[string]sdk.Attributes { defer h.lock()(); return h.world }

// save sets greeting name to cfg and id (nil cfg: removes it) and writes the world atomically,
// so a crash leaves the old world or the new.
func (h *hello) save(name string, cfg sdk.Attributes, id string) error {
	w, a := maps.Clone(h.world), maps.Clone(cfg)
	delete(w, name)
	if a != nil {
		a["id"], w[name] = id, a
	}
	b, _ := json.Marshal(w) // attributes came as JSON: they encode
	if err := atomicfile.Write(h.file, b, 0o600); err != nil {
		return err
	}
	h.world = w
	return nil
}

func main() { sdk.Serve(&hello{}) }
