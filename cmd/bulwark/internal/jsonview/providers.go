package jsonview

// Providers is `bulwark providers --json`: the provider plugins found in
// the lookup order, each started for its schema alone (no config given).
type Providers struct {
	FormatVersion string           `json:"format_version"`
	Dirs          []string         `json:"plugin_dirs"`
	Providers     []ProviderPlugin `json:"providers"`
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
