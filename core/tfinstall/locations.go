package tfinstall

import (
	"path/filepath"
	"strings"
)

// Environment variables bulwark reads for Terraform providers.
const (
	// EnvMirror names filesystem mirror folders (a list, separated as
	// PATH is), searched before Terraform's implied local mirrors.
	EnvMirror = "BULWARK_PROVIDER_MIRROR"
	// EnvProviderDir is bulwark's provider folder: where `providers
	// install` installs and packed zips are unpacked. Default:
	// $XDG_CACHE_HOME/bulwark/providers (~/.cache/bulwark/providers).
	EnvProviderDir = "BULWARK_PROVIDER_DIR"
	// EnvPluginCache is Terraform's plugin cache folder, searched too.
	EnvPluginCache = "TF_PLUGIN_CACHE_DIR"
	// EnvTrustedKey names an armored OpenPGP public key file that must
	// have signed a registry's SHA256SUMS (see Installer.TrustedKeys).
	EnvTrustedKey = "BULWARK_PROVIDER_KEY"
)

// Locations are the folders a Finder searches, in order: the first that
// holds a version the constraint allows is the one used.
type Locations struct {
	// PluginDirs are bulwark's plugin folders (--plugin-dir first). Each
	// may hold Terraform's layouts and bare executables
	// terraform-provider-TYPE[_vVERSION].
	PluginDirs []string
	// Mirrors are filesystem mirrors, packed or unpacked layout.
	Mirrors []string
	// Caches are plugin cache folders (unpacked layout; packed zips are
	// read too).
	Caches []string
}

// All returns every folder, in the order searched.
func (l Locations) All() []string {
	out := append([]string(nil), l.PluginDirs...)
	out = append(out, l.Mirrors...)
	return append(out, l.Caches...)
}

// DefaultLocations returns where a Terraform user keeps providers on this
// machine (Linux and the BSDs; macOS and Windows keep Terraform's folders
// elsewhere, and there EnvMirror names them):
//
//   - pluginDirs, as given (bulwark's --plugin-dir and plugin lookup);
//   - the mirrors of EnvMirror, then Terraform's implied local mirrors:
//     terraform.d/plugins in the working folder, ~/.terraform.d/plugins,
//     $XDG_DATA_HOME/terraform/plugins (~/.local/share/terraform/plugins)
//     and terraform/plugins under each of $XDG_DATA_DIRS
//     (/usr/local/share:/usr/share);
//   - the caches: $TF_PLUGIN_CACHE_DIR, then bulwark's provider folder
//     (ProviderDir).
//
// getenv is os.Getenv outside tests. A folder that does not exist is
// skipped when searched.
func DefaultLocations(pluginDirs []string, getenv func(string) string) Locations {
	var l Locations
	l.PluginDirs = append(l.PluginDirs, pluginDirs...)
	l.Mirrors = append(l.Mirrors, filepath.SplitList(getenv(EnvMirror))...)
	l.Mirrors = append(l.Mirrors, filepath.Join("terraform.d", "plugins"))
	home := getenv("HOME")
	if home != "" {
		l.Mirrors = append(l.Mirrors, filepath.Join(home, ".terraform.d", "plugins"))
	}
	if d := getenv("XDG_DATA_HOME"); d != "" {
		l.Mirrors = append(l.Mirrors, filepath.Join(d, "terraform", "plugins"))
	} else if home != "" {
		l.Mirrors = append(l.Mirrors, filepath.Join(home, ".local", "share", "terraform", "plugins"))
	}
	dataDirs := getenv("XDG_DATA_DIRS")
	if dataDirs == "" {
		dataDirs = "/usr/local/share/:/usr/share/"
	}
	for _, d := range filepath.SplitList(dataDirs) {
		if d != "" {
			l.Mirrors = append(l.Mirrors, filepath.Join(d, "terraform", "plugins"))
		}
	}
	if d := getenv(EnvPluginCache); d != "" {
		l.Caches = append(l.Caches, d)
	}
	if d := ProviderDir(getenv); d != "" {
		l.Caches = append(l.Caches, d)
	}
	l.PluginDirs, l.Mirrors, l.Caches = dedupe(l.PluginDirs, nil), dedupe(l.Mirrors, l.PluginDirs), dedupe(l.Caches, append(l.PluginDirs, l.Mirrors...))
	return l
}

// ProviderDir is bulwark's provider folder: $BULWARK_PROVIDER_DIR, else
// bulwark/providers under the user's cache folder; "" when there is none.
func ProviderDir(getenv func(string) string) string {
	if d := getenv(EnvProviderDir); d != "" {
		return d
	}
	if d := getenv("XDG_CACHE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "bulwark", "providers")
	}
	if h := getenv("HOME"); h != "" {
		return filepath.Join(h, ".cache", "bulwark", "providers")
	}
	return ""
}

// dedupe drops empty entries and those seen before or in also.
func dedupe(dirs, also []string) []string {
	seen := map[string]bool{}
	for _, d := range also {
		seen[filepath.Clean(d)] = true
	}
	var out []string
	for _, d := range dirs {
		if strings.TrimSpace(d) == "" || seen[filepath.Clean(d)] {
			continue
		}
		seen[filepath.Clean(d)] = true
		out = append(out, d)
	}
	return out
}
