package jsonview

// Providers is `bulwark providers --json`: the provider plugins found in
// the lookup order, each started for its schema alone (no config given).
type Providers struct {
	FormatVersion string           `json:"format_version"`
	Dirs          []string         `json:"plugin_dirs"`
	Providers     []ProviderPlugin `json:"providers"`
	// Terraform are the Terraform providers of the spec given (`bulwark
	// providers SPEC`); empty without one.
	Terraform []TerraformProvider `json:"terraform_providers"`
}

// ProviderPlugin is one plugin found.
type ProviderPlugin struct {
	Name     string `json:"name"`
	Version  string `json:"version"`
	Protocol int    `json:"protocol"`
	SHA256   string `json:"sha256"`
	Path     string `json:"path"`
	// Error says why the plugin did not start ("" when it did; version and
	// protocol are then "" and 0).
	Error string `json:"error"`
}

// TerraformProvider is one Terraform provider a spec declares (`bulwark
// providers SPEC --json`), as a run would find it; not started.
type TerraformProvider struct {
	Name       string `json:"name"`       // the spec's name for it
	Source     string `json:"source"`     // HOST/NAMESPACE/TYPE
	Constraint string `json:"constraint"` // the spec's version constraint, "" for any
	Version    string `json:"version"`    // the version found, "" when none was
	Path       string `json:"path"`       // the executable found
	Location   string `json:"location"`   // the searched folder that held it
	// Lock is "locked" (bulwark.lock pins it and the bytes found match),
	// "not locked" (no lock, or the lock does not name it), "mismatch" (the
	// bytes found differ from the lock's hashes), "outside constraint" (the
	// lock pins a version the spec's constraint does not allow), or "not
	// found" (the lock pins a version no folder here holds).
	Lock        string `json:"lock"`
	LockVersion string `json:"lock_version,omitempty"` // the version the lock pins
	Error       string `json:"error,omitempty"`        // why it was not found or not verified
}
