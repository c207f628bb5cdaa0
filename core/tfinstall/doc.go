// Package tfinstall finds, verifies and installs provider packages built for
// Terraform and OpenTofu, the way their users already lay them out.
//
// It knows four things, and nothing of the plugin protocol:
//
//   - addresses and versions as Terraform writes them: a source address
//     [HOST/]NAMESPACE/TYPE (ParseSource; the host defaults to
//     registry.terraform.io) and a version constraint such as "~> 3.6"
//     (ParseConstraints), the newest matching version being the one chosen;
//   - where a package is on disk (Finder, DefaultLocations): bulwark's
//     plugin folders, the filesystem mirrors ($BULWARK_PROVIDER_MIRROR, then
//     those Terraform reads; packed zips or unpacked folders), and the cache
//     folders ($TF_PLUGIN_CACHE_DIR, then bulwark's provider folder,
//     ProviderDir), searched in that order;
//   - Terraform's package hashes (Hash): "h1:" over the unpacked package's
//     files (the algorithm of golang.org/x/mod/sumdb/dirhash's Hash1, written
//     here over sums taken while copying, as Terraform's
//     getproviders.PackageHashV1 computes it) and "zh:" (the SHA-256 of the
//     .zip, as a registry's SHA256SUMS lists it);
//   - Terraform's provider registry protocol (Installer): service discovery,
//     the versions and download endpoints, SHA256SUMS and its OpenPGP
//     signature, and the unpacked layout it installs into.
//
// What runs is what was verified: CopyVerified copies a package into a
// private folder, hashing the bytes as it copies them, and refuses a copy
// whose hash the lock does not list.
package tfinstall
