package awsprovider

import (
	"fmt"

	"github.com/bulwark-iac/bulwark/sdk"
)

// conflict is the diagnostic of a Create that found its resource's identity
// taken by a resource made under another idempotency key (owner), or under
// none (owner ""), and did not claim it.
func conflict(summary, owner string) sdk.Diagnostic {
	return sdk.Conflict(summary, owner)
}

// withPath sets the attribute a diagnostic is about.
func withPath(d sdk.Diagnostic, attr string) sdk.Diagnostic {
	d.AttributePath = []string{attr}
	return d
}

// notOurs is why a Delete leaves a bucket or table alone: the resource
// carries the key it was created under, and what now has its name carries
// another (or none): someone made it again after ours went.
func notOurs(kind, name, carried, recorded string) error {
	found := "no idempotency key"
	if recorded != "" {
		found = "idempotency key " + recorded
	}
	d := conflict(fmt.Sprintf("%s %q is not the one this resource created (under idempotency key %s): it carries %s, so it was made again by someone else; not deleting it",
		kind, name, carried, found), recorded)
	d.Detail = "nothing was deleted or emptied; `bulwark state forget` stops managing the resource without touching it"
	return d
}
