package tfinstall_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bulwark-iac/bulwark/core/tfinstall"
	"github.com/bulwark-iac/bulwark/core/tfinstall/registrytest"
)

func startRegistry(t *testing.T, ps ...registrytest.Provider) *registrytest.Server {
	t.Helper()
	srv, err := registrytest.New(ps...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return srv
}

func TestInstall(t *testing.T) {
	other := tfinstall.Platform{OS: "plan9", Arch: "arm"}
	srv := startRegistry(t,
		registrytest.Provider{Namespace: "acme", Type: "widget", Versions: []string{"1.0.0", "1.4.2", "2.0.0-rc1", "2.0.0", "2.1.0"},
			Platforms: []tfinstall.Platform{plat, other}},
		registrytest.Provider{Namespace: "acme", Type: "elsewhere", Versions: []string{"1.0.0"}, Platforms: []tfinstall.Platform{other}},
		registrytest.Provider{Namespace: "acme", Type: "ancient", Versions: []string{"0.1.0"}, Protocols: []string{"4.0"}},
	)
	zh := func(version string, p tfinstall.Platform) tfinstall.Hash {
		path := filepath.Join(t.TempDir(), "a.zip")
		write(t, path, string(srv.ArchiveBytes("acme", "widget", version, p)), 0o644)
		h, err := tfinstall.HashZip(path)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	tests := []struct {
		name        string
		source      string
		constraint  string
		fault       registrytest.Fault
		trustedKey  string // "server", "foreign" or ""
		wantVersion string
		wantTrust   tfinstall.Trust
		wantZH      []tfinstall.Hash
		wantErr     any
		wantMsg     []string
		wantNoFetch bool // the archive is never downloaded
	}{
		{
			name: "newest matching, signed by a key the registry names", source: "acme/widget", constraint: "~> 1.0",
			wantVersion: "1.4.2", wantTrust: tfinstall.TrustRegistry,
		},
		{
			name: "no constraint: the newest release, not a pre-release", source: "acme/widget",
			wantVersion: "2.1.0", wantTrust: tfinstall.TrustRegistry,
		},
		{
			name: "a trusted key", source: "acme/widget", constraint: "= 2.0.0", trustedKey: "server",
			wantVersion: "2.0.0", wantTrust: tfinstall.TrustKey,
		},
		{
			name: "unsigned: installed, said to be, and only the archive's zh: recorded", source: "acme/widget", constraint: "1.0.0",
			fault: registrytest.Fault{HideKeys: true}, wantVersion: "1.0.0", wantTrust: tfinstall.TrustNone,
		},
		{
			name: "the registry's shasum is not the archive's", source: "acme/widget", fault: registrytest.Fault{WrongShasum: true},
			wantErr: new(*tfinstall.ChecksumError), wantMsg: []string{"SHA256SUMS says", "refusing to install it"}, wantNoFetch: true,
		},
		{
			name: "the archive served is not the one published", source: "acme/widget", fault: registrytest.Fault{CorruptArchive: true},
			wantErr: new(*tfinstall.ChecksumError), wantMsg: []string{"the registry's shasum says", "terraform-provider-widget_2.1.0_" + plat.String() + ".zip"},
		},
		{
			name: "signed by a key the registry does not name", source: "acme/widget", fault: registrytest.Fault{ForeignSignature: true},
			wantErr: new(*tfinstall.SignatureError), wantMsg: []string{"not a valid signature by any key the registry names"}, wantNoFetch: true,
		},
		{
			name: "signed by a key other than the trusted one", source: "acme/widget", trustedKey: "foreign",
			wantErr: new(*tfinstall.SignatureError), wantMsg: []string{"not a valid signature by any trusted key"}, wantNoFetch: true,
		},
		{
			name: "a trusted key, and no signature", source: "acme/widget", trustedKey: "server", fault: registrytest.Fault{NoSignature: true},
			wantErr: new(*tfinstall.SignatureError), wantMsg: []string{"no shasums_signature_url"}, wantNoFetch: true,
		},
		{
			name: "no version matches", source: "acme/widget", constraint: "~> 3.0",
			wantErr: new(*tfinstall.NoVersionError), wantMsg: []string{`no version matches "~> 3.0"`, "the registry offers 2.1.0, 2.0.0, 2.0.0-rc1, 1.4.2, 1.0.0"},
		},
		{
			name: "a missing version", source: "acme/widget", constraint: "= 1.2.3",
			wantErr: new(*tfinstall.NoVersionError), wantMsg: []string{`no version matches "= 1.2.3"`},
		},
		{
			name: "the registry lists it, the download is missing", source: "acme/widget", fault: registrytest.Fault{MissingDownload: true},
			wantErr: new(*tfinstall.NoVersionError), wantMsg: []string{"no package of version 2.1.0 for " + plat.String()},
		},
		{
			name: "not built for this platform", source: "acme/elsewhere",
			wantErr: new(*tfinstall.NoVersionError), wantMsg: []string{"1.0.0 not built for " + plat.String()},
		},
		{
			name: "a protocol bulwark does not speak", source: "acme/ancient",
			wantErr: new(*tfinstall.NoVersionError), wantMsg: []string{"0.1.0 speak neither plugin protocol 5 nor 6"},
		},
		{
			name: "an unknown provider", source: "acme/nothing",
			wantErr: new(*tfinstall.NoVersionError), wantMsg: []string{"does not know this provider"},
		},
	}
	foreign, err := registrytest.NewKey("not the registry")
	if err != nil {
		t.Fatal(err)
	}
	foreignPub, err := registrytest.ArmoredPublicKey(foreign)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv.SetFault(tt.fault)
			defer srv.SetFault(registrytest.Fault{})
			src, err := tfinstall.ParseSource(srv.Host + "/" + tt.source)
			if err != nil {
				t.Fatal(err)
			}
			in := &tfinstall.Installer{Registry: tfinstall.Registry{Client: srv.Client()}, Dir: t.TempDir()}
			switch tt.trustedKey {
			case "server":
				in.TrustedKeys = srv.PublicKey
			case "foreign":
				in.TrustedKeys = foreignPub
			}
			fetchesBefore := srv.Hits("/files/acme/widget/2.1.0/terraform-provider-widget_2.1.0_" + plat.String() + ".zip")
			got, err := in.Install(context.Background(), src, mustConstraints(t, tt.constraint))
			if tt.wantErr != nil {
				if err == nil || !errors.As(err, tt.wantErr) {
					t.Fatalf("Install: %v, want a %T", err, tt.wantErr)
				}
				for _, w := range append(tt.wantMsg, src.String()) {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("the error %q says nothing of %q", err, w)
					}
				}
				if tt.wantNoFetch && srv.Hits("/files/acme/widget/2.1.0/terraform-provider-widget_2.1.0_"+plat.String()+".zip") != fetchesBefore {
					t.Errorf("the archive was downloaded")
				}
				entries, _ := os.ReadDir(in.Dir)
				if len(entries) != 0 {
					t.Errorf("a refused install left %v in the provider folder", entries)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Package.Version != tt.wantVersion || got.Trust != tt.wantTrust {
				t.Fatalf("installed %s, %q; want %s, %q", got.Package.Version, got.Trust, tt.wantVersion, tt.wantTrust)
			}
			if tt.wantTrust != tfinstall.TrustNone && got.KeyID == "" {
				t.Errorf("no key id")
			}
			// The unpacked layout, where a Finder finds it.
			wantDir := filepath.Join(in.Dir, srv.Host, "acme", "widget", tt.wantVersion, plat.String())
			if got.Package.Dir != wantDir || got.Package.Exe != "terraform-provider-widget_v"+tt.wantVersion {
				t.Fatalf("installed into %s (%s), want %s", got.Package.Dir, got.Package.Exe, wantDir)
			}
			f := &tfinstall.Finder{Locations: tfinstall.Locations{Caches: []string{in.Dir}}}
			found, err := f.Find(context.Background(), tfinstall.Request{Source: src, Version: tt.wantVersion})
			if err != nil {
				t.Fatal(err)
			}
			if err := tfinstall.Verify(found, got.Hashes); err != nil {
				t.Fatal(err)
			}
			// The hashes: the package's h1:, and the zh: of every platform's
			// archive when signed, else the one downloaded.
			h1, _ := tfinstall.HashDir(wantDir)
			want := []tfinstall.Hash{h1, zh(tt.wantVersion, plat)}
			if tt.wantTrust != tfinstall.TrustNone {
				want = append(want, zh(tt.wantVersion, other))
			}
			if len(got.Hashes) != len(want) {
				t.Fatalf("hashes %v, want %v", got.Hashes, want)
			}
			for _, h := range want {
				if !strings.Contains(strings.Join(hashStrings(got.Hashes), " "), string(h)) {
					t.Errorf("hashes %v lack %s", got.Hashes, h)
				}
			}
		})
	}
}

func hashStrings(hs []tfinstall.Hash) []string {
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = string(h)
	}
	return out
}

// A client that does not trust the server's certificate gets no further
// than discovery.
func TestInstallRefusesAnUntrustedServer(t *testing.T) {
	srv := startRegistry(t, registrytest.Provider{Namespace: "acme", Type: "widget", Versions: []string{"1.0.0"}})
	src, _ := tfinstall.ParseSource(srv.Host + "/acme/widget")
	in := &tfinstall.Installer{Dir: t.TempDir()}
	_, err := in.Install(context.Background(), src, tfinstall.Constraints{})
	var re *tfinstall.RegistryError
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("Install: %v, want a certificate error", err)
	}
}
