package tfinstall_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/bulwark-iac/bulwark/core/tfinstall"
	"github.com/bulwark-iac/bulwark/core/tfinstall/registrytest"
)

// layout helpers: each writes one package into a folder, in one of the
// layouts Terraform users keep.

var plat = tfinstall.CurrentPlatform()

func unpacked(t *testing.T, root, hostNsType, version, platform, exe string) {
	write(t, filepath.Join(root, hostNsType, version, platform, exe), "#!/bin/sh\necho "+version+"\n", 0o755)
}

func packed(t *testing.T, root, hostNsType, version, platform string) {
	typ := filepath.Base(hostNsType)
	z, err := registrytest.Archive(typ, version, []byte("#!/bin/sh\necho "+version+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(root, hostNsType, "terraform-provider-"+typ+"_"+version+"_"+platform+".zip"), string(z), 0o644)
}

func bare(t *testing.T, dir, name string) {
	write(t, filepath.Join(dir, name), "#!/bin/sh\necho bare\n", 0o755)
}

func TestFind(t *testing.T) {
	const random = "registry.terraform.io/hashicorp/random"
	other := "darwin_arm64"
	if plat.String() == other {
		other = "linux_amd64"
	}
	tests := []struct {
		name       string
		setup      func(t *testing.T, pluginDir, mirror, cache string)
		constraint string
		locked     string // Request.Version
		// want: the version found, the folder it was found in ("plugin",
		// "mirror", "cache"), the executable's name, and whether it came
		// from a zip.
		wantVersion, wantLoc, wantExe string
		wantZip                       bool
		wantErr                       []string
	}{
		{
			name: "unpacked mirror",
			setup: func(t *testing.T, _, mirror, _ string) {
				unpacked(t, mirror, random, "3.6.3", plat.String(), "terraform-provider-random_v3.6.3")
			},
			constraint: "~> 3.6", wantVersion: "3.6.3", wantLoc: "mirror", wantExe: "terraform-provider-random_v3.6.3",
		},
		{
			name: "unpacked, the executable under another terraform-provider-TYPE name",
			setup: func(t *testing.T, _, mirror, _ string) {
				unpacked(t, mirror, random, "3.6.3", plat.String(), "terraform-provider-random")
				write(t, filepath.Join(mirror, random, "3.6.3", plat.String(), "LICENSE"), "MIT", 0o644)
			},
			wantVersion: "3.6.3", wantLoc: "mirror", wantExe: "terraform-provider-random",
		},
		{
			name: "packed mirror is unpacked",
			setup: func(t *testing.T, _, mirror, _ string) {
				packed(t, mirror, random, "3.6.3", plat.String())
			},
			constraint: "~> 3.6", wantVersion: "3.6.3", wantLoc: "mirror", wantExe: "terraform-provider-random_v3.6.3", wantZip: true,
		},
		{
			name: "an unpacked folder before a packed zip of the same version",
			setup: func(t *testing.T, _, mirror, _ string) {
				packed(t, mirror, random, "3.6.3", plat.String())
				unpacked(t, mirror, random, "3.6.3", plat.String(), "terraform-provider-random_v3.6.3")
			},
			wantVersion: "3.6.3", wantLoc: "mirror", wantExe: "terraform-provider-random_v3.6.3",
		},
		{
			name: "the newest match in a folder",
			setup: func(t *testing.T, _, mirror, _ string) {
				unpacked(t, mirror, random, "3.6.0", plat.String(), "terraform-provider-random_v3.6.0")
				packed(t, mirror, random, "3.6.3", plat.String())
				unpacked(t, mirror, random, "4.0.0", plat.String(), "terraform-provider-random_v4.0.0")
			},
			constraint: "~> 3.6", wantVersion: "3.6.3", wantLoc: "mirror", wantZip: true, wantExe: "terraform-provider-random_v3.6.3",
		},
		{
			name: "the first folder holding a match wins: --plugin-dir before a mirror",
			setup: func(t *testing.T, pluginDir, mirror, _ string) {
				bare(t, pluginDir, "terraform-provider-random_v3.6.0")
				unpacked(t, mirror, random, "3.7.0", plat.String(), "terraform-provider-random_v3.7.0")
			},
			constraint: "~> 3.6", wantVersion: "3.6.0", wantLoc: "plugin", wantExe: "terraform-provider-random_v3.6.0",
		},
		{
			name: "a mirror before the cache",
			setup: func(t *testing.T, _, mirror, cache string) {
				unpacked(t, mirror, random, "3.6.0", plat.String(), "terraform-provider-random_v3.6.0")
				unpacked(t, cache, random, "3.7.0", plat.String(), "terraform-provider-random_v3.7.0")
			},
			wantVersion: "3.6.0", wantLoc: "mirror", wantExe: "terraform-provider-random_v3.6.0",
		},
		{
			name: "the cache when no mirror matches",
			setup: func(t *testing.T, _, mirror, cache string) {
				unpacked(t, mirror, random, "2.0.0", plat.String(), "terraform-provider-random_v2.0.0")
				unpacked(t, cache, random, "3.7.0", plat.String(), "terraform-provider-random_v3.7.0")
			},
			constraint: ">= 3.0", wantVersion: "3.7.0", wantLoc: "cache", wantExe: "terraform-provider-random_v3.7.0",
		},
		{
			name: "the Terraform layouts under --plugin-dir too",
			setup: func(t *testing.T, pluginDir, _, _ string) {
				packed(t, pluginDir, random, "3.6.1", plat.String())
			},
			wantVersion: "3.6.1", wantLoc: "plugin", wantZip: true, wantExe: "terraform-provider-random_v3.6.1",
		},
		{
			name: "a bare executable without a version",
			setup: func(t *testing.T, pluginDir, _, _ string) {
				bare(t, pluginDir, "terraform-provider-random")
			},
			constraint: "~> 3.6", wantVersion: "", wantLoc: "plugin", wantExe: "terraform-provider-random",
		},
		{
			name: "Terraform 0.12's OS_ARCH folder and protocol suffix",
			setup: func(t *testing.T, pluginDir, _, _ string) {
				bare(t, filepath.Join(pluginDir, plat.String()), "terraform-provider-random_v3.6.2_x5")
			},
			wantVersion: "3.6.2", wantLoc: "plugin", wantExe: "terraform-provider-random_v3.6.2_x5",
		},
		{
			name: "folder names compared as Terraform normalises them",
			setup: func(t *testing.T, _, mirror, _ string) {
				unpacked(t, mirror, "Registry.Terraform.IO/HashiCorp/Random", "3.6.3", plat.String(), "terraform-provider-random_v3.6.3")
			},
			wantVersion: "3.6.3", wantLoc: "mirror", wantExe: "terraform-provider-random_v3.6.3",
		},
		{
			name: "the locked version, not the newest",
			setup: func(t *testing.T, _, mirror, _ string) {
				unpacked(t, mirror, random, "3.6.0", plat.String(), "terraform-provider-random_v3.6.0")
				unpacked(t, mirror, random, "3.6.3", plat.String(), "terraform-provider-random_v3.6.3")
			},
			constraint: "~> 3.6", locked: "3.6.0", wantVersion: "3.6.0", wantLoc: "mirror", wantExe: "terraform-provider-random_v3.6.0",
		},
		{
			name: "no version matches: every folder and the versions seen are named",
			setup: func(t *testing.T, pluginDir, mirror, cache string) {
				unpacked(t, mirror, random, "4.0.0", plat.String(), "terraform-provider-random_v4.0.0")
				packed(t, cache, random, "3.6.3", other)
				bare(t, pluginDir, "terraform-provider-random_v2.1.0")
				// Another provider's package is not seen.
				unpacked(t, mirror, "registry.terraform.io/hashicorp/aws", "3.6.3", plat.String(), "terraform-provider-aws_v3.6.3")
			},
			constraint: "~> 3.6",
			wantErr: []string{
				`provider registry.terraform.io/hashicorp/random: no package of a version matching "~> 3.6" for ` + plat.String(),
				"looked in PLUGIN, MIRROR, CACHE",
				"4.0.0 (" + plat.String() + ") at MIRROR/" + random + "/4.0.0/" + plat.String(),
				"3.6.3 (" + other + ") at CACHE/" + random + "/terraform-provider-random_3.6.3_" + other + ".zip",
				"2.1.0 (" + plat.String() + ") at PLUGIN/terraform-provider-random_v2.1.0",
				"bulwark providers install registry.terraform.io/hashicorp/random",
			},
		},
		{
			name:    "nothing anywhere",
			setup:   func(*testing.T, string, string, string) {},
			wantErr: []string{"no package of any version", "found no version of it"},
		},
		{
			name: "a version folder without an executable is no package",
			setup: func(t *testing.T, _, mirror, _ string) {
				write(t, filepath.Join(mirror, random, "3.6.3", plat.String(), "terraform-provider-random_v3.6.3"), "not executable", 0o644)
			},
			wantErr: []string{"found no version of it"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			dirs := map[string]string{"plugin": filepath.Join(root, "plugins"), "mirror": filepath.Join(root, "mirror"), "cache": filepath.Join(root, "cache")}
			for _, d := range dirs {
				if err := os.MkdirAll(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			tt.setup(t, dirs["plugin"], dirs["mirror"], dirs["cache"])
			f := &tfinstall.Finder{
				Locations: tfinstall.Locations{PluginDirs: []string{dirs["plugin"]}, Mirrors: []string{dirs["mirror"]}, Caches: []string{dirs["cache"]}},
				UnpackDir: filepath.Join(root, "unpacked"),
			}
			src, err := tfinstall.ParseSource("hashicorp/random")
			if err != nil {
				t.Fatal(err)
			}
			got, err := f.Find(context.Background(), tfinstall.Request{Source: src, Constraints: mustConstraints(t, tt.constraint), Version: tt.locked})
			if tt.wantErr != nil {
				var nf *tfinstall.NotFoundError
				if !errors.As(err, &nf) {
					t.Fatalf("Find: %v, want a NotFoundError", err)
				}
				msg := strings.NewReplacer(dirs["plugin"], "PLUGIN", dirs["mirror"], "MIRROR", dirs["cache"], "CACHE").Replace(err.Error())
				for _, w := range tt.wantErr {
					if !strings.Contains(msg, w) {
						t.Errorf("the error\n%s\nsays nothing of %q", msg, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Version != tt.wantVersion || got.Location != dirs[tt.wantLoc] || got.Exe != tt.wantExe || (got.Zip != "") != tt.wantZip {
				t.Fatalf("Find = version %q in %s, exe %s, zip %q; want %q in %s, exe %s, zip %v",
					got.Version, got.Location, got.Exe, got.Zip, tt.wantVersion, dirs[tt.wantLoc], tt.wantExe, tt.wantZip)
			}
			if tt.wantZip && !strings.HasPrefix(got.Dir, f.UnpackDir) {
				t.Errorf("a packed package runs from %s, not from the unpack folder %s", got.Dir, f.UnpackDir)
			}
			if fi, err := os.Stat(got.ExePath()); err != nil || fi.Mode().Perm()&0o100 == 0 {
				t.Errorf("the executable %s: %v, %v", got.ExePath(), fi, err)
			}
			// The package's hash is the h1: of exactly its files.
			h, err := got.Hash()
			if err != nil {
				t.Fatal(err)
			}
			if err := tfinstall.Verify(got, []tfinstall.Hash{h}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// A packed zip is checked against the lock before it is unpacked.
func TestFindChecksPackedZipAgainstTheLock(t *testing.T) {
	root := t.TempDir()
	mirror := filepath.Join(root, "mirror")
	packed(t, mirror, "registry.terraform.io/hashicorp/random", "3.6.3", plat.String())
	zipPath := filepath.Join(mirror, "registry.terraform.io/hashicorp/random", "terraform-provider-random_3.6.3_"+plat.String()+".zip")
	zh, err := tfinstall.HashZip(zipPath)
	if err != nil {
		t.Fatal(err)
	}
	h1, err := tfinstall.HashZipContent(zipPath)
	if err != nil {
		t.Fatal(err)
	}
	other := tfinstall.Hash("zh:" + strings.Repeat("0", 64))
	otherH1 := tfinstall.Hash("h1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=")
	src, _ := tfinstall.ParseSource("hashicorp/random")
	for _, tt := range []struct {
		name   string
		hashes []tfinstall.Hash
		ok     bool
	}{
		{"its zh: is locked", []tfinstall.Hash{other, zh}, true},
		{"its h1: is locked", []tfinstall.Hash{h1}, true},
		{"another zh: is locked", []tfinstall.Hash{other, h1}, false},
		{"another h1: is locked", []tfinstall.Hash{otherH1}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			unpack := filepath.Join(t.TempDir(), "unpacked")
			f := &tfinstall.Finder{Locations: tfinstall.Locations{Mirrors: []string{mirror}}, UnpackDir: unpack}
			_, err := f.Find(context.Background(), tfinstall.Request{Source: src, Hashes: tt.hashes})
			if tt.ok {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var ie *tfinstall.IntegrityError
			if !errors.As(err, &ie) {
				t.Fatalf("Find: %v, want an IntegrityError", err)
			}
			if _, err := os.Stat(unpack); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("a refused zip was unpacked: %v", err)
			}
		})
	}
}

func TestDefaultLocations(t *testing.T) {
	env := map[string]string{
		"HOME":                   "/home/u",
		"XDG_DATA_DIRS":          "/opt/share:/usr/share",
		tfinstall.EnvMirror:      "/m1:/m2",
		tfinstall.EnvPluginCache: "/tf-cache",
		"XDG_CACHE_HOME":         "/home/u/.cache",
	}
	got := tfinstall.DefaultLocations([]string{"plugins", "/m1"}, func(k string) string { return env[k] })
	want := tfinstall.Locations{
		PluginDirs: []string{"plugins", "/m1"},
		Mirrors: []string{"/m2", "terraform.d/plugins", "/home/u/.terraform.d/plugins", "/home/u/.local/share/terraform/plugins",
			"/opt/share/terraform/plugins", "/usr/share/terraform/plugins"},
		Caches: []string{"/tf-cache", "/home/u/.cache/bulwark/providers"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("DefaultLocations (-want +got):\n%s", d)
	}
	env = map[string]string{"HOME": "/home/u", "XDG_DATA_HOME": "/data", tfinstall.EnvProviderDir: "/bulwark-providers"}
	got = tfinstall.DefaultLocations(nil, func(k string) string { return env[k] })
	want = tfinstall.Locations{
		Mirrors: []string{"terraform.d/plugins", "/home/u/.terraform.d/plugins", "/data/terraform/plugins",
			"/usr/local/share/terraform/plugins", "/usr/share/terraform/plugins"},
		Caches: []string{"/bulwark-providers"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("DefaultLocations, XDG_DATA_HOME set (-want +got):\n%s", d)
	}
}
