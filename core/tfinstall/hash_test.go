package tfinstall_test

import (
	"archive/zip"
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/dirhash"

	"github.com/bulwark-iac/bulwark/core/tfinstall"
	"github.com/bulwark-iac/bulwark/core/tfinstall/registrytest"
)

// The h1: hashes are dirhash.Hash1's, the function Terraform's
// PackageHashV1 calls, over a folder and over a zip.
func TestHashesAreDirhash(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "terraform-provider-demo_v1.0.0"), "#!/bin/sh\n", 0o755)
	write(t, filepath.Join(dir, "LICENSE"), "MIT\n", 0o644)
	write(t, filepath.Join(dir, "docs", "README.md"), "# demo\n", 0o644)
	got, err := tfinstall.HashDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	want, err := dirhash.HashDir(dir, "", dirhash.Hash1)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Fatalf("HashDir = %s, dirhash.HashDir = %s", got, want)
	}

	// A zip of the same files, with a folder entry (which unpacks to no
	// file): the h1: of its content is the folder's.
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, name := range []string{"terraform-provider-demo_v1.0.0", "LICENSE", "docs/", "docs/README.md"} {
		w, err := zw.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasSuffix(name, "/") {
			b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
			if err != nil {
				t.Fatal(err)
			}
			w.Write(b)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	zipPath := filepath.Join(t.TempDir(), "p.zip")
	write(t, zipPath, buf.String(), 0o644)
	zc, err := tfinstall.HashZipContent(zipPath)
	if err != nil {
		t.Fatal(err)
	}
	if zc != got {
		t.Fatalf("HashZipContent = %s, the unpacked folder's = %s", zc, got)
	}

	// Without folder entries, it is dirhash.HashZip too.
	z, err := registrytest.Archive("demo", "1.0.0", []byte("#!/bin/sh\n"))
	if err != nil {
		t.Fatal(err)
	}
	write(t, zipPath, string(z), 0o644)
	zc, err = tfinstall.HashZipContent(zipPath)
	if err != nil {
		t.Fatal(err)
	}
	want, err = dirhash.HashZip(zipPath, dirhash.Hash1)
	if err != nil {
		t.Fatal(err)
	}
	if string(zc) != want {
		t.Fatalf("HashZipContent = %s, dirhash.HashZip = %s", zc, want)
	}

	// zh: is the hex SHA-256 of the zip's bytes: a known value.
	write(t, zipPath, "abc", 0o644)
	zh, err := tfinstall.HashZip(zipPath)
	if err != nil {
		t.Fatal(err)
	}
	if zh != "zh:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" {
		t.Fatalf("HashZip = %s", zh)
	}
}

func TestParseHash(t *testing.T) {
	for _, ok := range []string{"h1:lC/f/TVZtsJORt8tlFrz3wfWk8Y6t3j/QH6pn4gKUKI=", "zh:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"} {
		if _, err := tfinstall.ParseHash(ok); err != nil {
			t.Errorf("ParseHash(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"", "sha256:abc", "h1:abc", "zh:BA7816BF8F01CFEA414140DE5DAE2223B00361A396177A9CB410FF61F20015AD", "zh:12"} {
		if _, err := tfinstall.ParseHash(bad); err == nil {
			t.Errorf("ParseHash(%q): no error", bad)
		}
	}
}

// A package folder holding a link is refused: what it points to could
// change after the hash.
func TestHashDirRefusesLinks(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "real"), "x", 0o644)
	if err := os.Symlink("real", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if _, err := tfinstall.HashDir(dir); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("HashDir: %v", err)
	}
}

func TestCopyVerified(t *testing.T) {
	src, _ := tfinstall.ParseSource("hashicorp/random")
	dir := t.TempDir()
	write(t, filepath.Join(dir, "terraform-provider-random_v3.6.3"), "#!/bin/sh\necho ok\n", 0o755)
	write(t, filepath.Join(dir, "LICENSE"), "MIT\n", 0o644)
	pkg := &tfinstall.Package{Source: src, Version: "3.6.3", Platform: plat, Dir: dir, Files: []string{"LICENSE", "terraform-provider-random_v3.6.3"}, Exe: "terraform-provider-random_v3.6.3"}
	h1, err := tfinstall.HashDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	zh := tfinstall.Hash("zh:" + strings.Repeat("1", 64))

	t.Run("the copy runs", func(t *testing.T) {
		dst := filepath.Join(t.TempDir(), "run")
		exe, err := tfinstall.CopyVerified(pkg, dst, []tfinstall.Hash{zh, h1})
		if err != nil {
			t.Fatal(err)
		}
		if exe != filepath.Join(dst, "terraform-provider-random_v3.6.3") {
			t.Fatalf("exe %s", exe)
		}
		if fi, err := os.Stat(exe); err != nil || fi.Mode().Perm() != 0o500 {
			t.Fatalf("the copy: %v, %v", fi, err)
		}
		if got, _ := tfinstall.HashDir(dst); got != h1 {
			t.Fatalf("the copy's hash %s, want %s", got, h1)
		}
	})
	t.Run("changed bytes are refused, naming the provider and both hashes", func(t *testing.T) {
		other := tfinstall.Hash("h1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=")
		dst := filepath.Join(t.TempDir(), "run")
		_, err := tfinstall.CopyVerified(pkg, dst, []tfinstall.Hash{other, zh})
		var ie *tfinstall.IntegrityError
		if !errors.As(err, &ie) {
			t.Fatalf("CopyVerified: %v, want an IntegrityError", err)
		}
		for _, w := range []string{"registry.terraform.io/hashicorp/random", string(h1), string(other), "refusing to run it"} {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("the error %q says nothing of %q", err, w)
			}
		}
		if _, err := os.Stat(dst); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the refused copy is left: %v", err)
		}
	})
	t.Run("no hash to check against", func(t *testing.T) {
		_, err := tfinstall.CopyVerified(pkg, filepath.Join(t.TempDir(), "run"), nil)
		var nl *tfinstall.NotLockedError
		if !errors.As(err, &nl) {
			t.Fatalf("CopyVerified: %v, want a NotLockedError", err)
		}
	})
	t.Run("an unpacked zip the lock knows by its zh: alone", func(t *testing.T) {
		root := t.TempDir()
		packed(t, filepath.Join(root, "mirror"), "registry.terraform.io/hashicorp/random", "3.6.3", plat.String())
		f := &tfinstall.Finder{Locations: tfinstall.Locations{Mirrors: []string{filepath.Join(root, "mirror")}}, UnpackDir: filepath.Join(root, "unpacked")}
		p, err := f.Find(t.Context(), tfinstall.Request{Source: src})
		if err != nil {
			t.Fatal(err)
		}
		zipZH, err := tfinstall.HashZip(p.Zip)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tfinstall.CopyVerified(p, filepath.Join(root, "run1"), []tfinstall.Hash{zipZH}); err != nil {
			t.Fatal(err)
		}
		// The unpacked folder changed after the zip was checked.
		write(t, p.ExePath(), "#!/bin/sh\necho impostor\n", 0o755)
		var ie *tfinstall.IntegrityError
		if _, err := tfinstall.CopyVerified(p, filepath.Join(root, "run2"), []tfinstall.Hash{zipZH}); !errors.As(err, &ie) {
			t.Fatalf("CopyVerified of a changed unpacked folder: %v", err)
		}
	})
}

func TestPin(t *testing.T) {
	src, _ := tfinstall.ParseSource("hashicorp/random")
	root := t.TempDir()
	packed(t, filepath.Join(root, "mirror"), "registry.terraform.io/hashicorp/random", "3.6.3", plat.String())
	bare(t, filepath.Join(root, "plugins"), "terraform-provider-random")
	f := &tfinstall.Finder{Locations: tfinstall.Locations{Mirrors: []string{filepath.Join(root, "mirror")}}, UnpackDir: filepath.Join(root, "unpacked")}
	p, err := f.Find(t.Context(), tfinstall.Request{Source: src})
	if err != nil {
		t.Fatal(err)
	}
	got, err := tfinstall.Pin(p)
	if err != nil {
		t.Fatal(err)
	}
	h1, _ := tfinstall.HashZipContent(p.Zip)
	zh, _ := tfinstall.HashZip(p.Zip)
	if len(got) != 2 || got[0] != h1 || got[1] != zh {
		t.Fatalf("Pin = %v, want [%s %s]", got, h1, zh)
	}
	f = &tfinstall.Finder{Locations: tfinstall.Locations{PluginDirs: []string{filepath.Join(root, "plugins")}}}
	if p, err = f.Find(t.Context(), tfinstall.Request{Source: src}); err != nil {
		t.Fatal(err)
	}
	if _, err := tfinstall.Pin(p); err == nil || !strings.Contains(err.Error(), "says no version") {
		t.Fatalf("Pin of an unversioned executable: %v", err)
	}
}

func TestPrepare(t *testing.T) {
	src, _ := tfinstall.ParseSource("hashicorp/random")
	root := t.TempDir()
	mirror := filepath.Join(root, "mirror")
	unpacked(t, mirror, "registry.terraform.io/hashicorp/random", "3.6.0", plat.String(), "terraform-provider-random_v3.6.0")
	unpacked(t, mirror, "registry.terraform.io/hashicorp/random", "3.6.3", plat.String(), "terraform-provider-random_v3.6.3")
	f := &tfinstall.Finder{Locations: tfinstall.Locations{Mirrors: []string{mirror}}}
	// No lock: the newest match, run where it is.
	exe, p, err := tfinstall.Prepare(t.Context(), f, tfinstall.Request{Source: src, Constraints: mustConstraints(t, "~> 3.6")}, filepath.Join(root, "run0"))
	if err != nil {
		t.Fatal(err)
	}
	if exe != p.ExePath() || p.Version != "3.6.3" {
		t.Fatalf("Prepare = %s (%s)", exe, p.Version)
	}
	// Locked: the locked version, from a verified copy.
	h1, err := tfinstall.HashDir(filepath.Join(mirror, "registry.terraform.io/hashicorp/random/3.6.0", plat.String()))
	if err != nil {
		t.Fatal(err)
	}
	req := tfinstall.Request{Source: src, Constraints: mustConstraints(t, "~> 3.6"), Version: "3.6.0", Hashes: tfinstall.HashesOf([]string{string(h1)})}
	exe, p, err = tfinstall.Prepare(t.Context(), f, req, filepath.Join(root, "run1"))
	if err != nil {
		t.Fatal(err)
	}
	if exe != filepath.Join(root, "run1", "terraform-provider-random_v3.6.0") || p.Version != "3.6.0" {
		t.Fatalf("Prepare = %s (%s)", exe, p.Version)
	}
	// Changed bytes under the locked version: refused.
	write(t, filepath.Join(mirror, "registry.terraform.io/hashicorp/random/3.6.0", plat.String(), "terraform-provider-random_v3.6.0"), "#!/bin/sh\necho impostor\n", 0o755)
	var ie *tfinstall.IntegrityError
	if _, _, err := tfinstall.Prepare(t.Context(), f, req, filepath.Join(root, "run2")); !errors.As(err, &ie) {
		t.Fatalf("Prepare of changed bytes: %v", err)
	}
}

// A second unpack of the same zip keeps the folder; a folder holding other
// files is replaced.
func TestUnpackReplacesOnlyWhatDiffers(t *testing.T) {
	src, _ := tfinstall.ParseSource("hashicorp/random")
	root := t.TempDir()
	packed(t, filepath.Join(root, "mirror"), "registry.terraform.io/hashicorp/random", "3.6.3", plat.String())
	f := &tfinstall.Finder{Locations: tfinstall.Locations{Mirrors: []string{filepath.Join(root, "mirror")}}, UnpackDir: filepath.Join(root, "unpacked")}
	p1, err := f.Find(t.Context(), tfinstall.Request{Source: src})
	if err != nil {
		t.Fatal(err)
	}
	before, err := os.Stat(p1.ExePath())
	if err != nil {
		t.Fatal(err)
	}
	p2, err := f.Find(t.Context(), tfinstall.Request{Source: src})
	if err != nil {
		t.Fatal(err)
	}
	after, err := os.Stat(p2.ExePath())
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(before, after) {
		t.Errorf("the same files were unpacked again")
	}
	write(t, filepath.Join(p1.Dir, "extra"), "planted", 0o644)
	p3, err := f.Find(t.Context(), tfinstall.Request{Source: src})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(p3.Dir, "extra")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a planted file survived the unpack: %v", err)
	}
	h, _ := tfinstall.HashZipContent(p3.Zip)
	if got, _ := p3.Hash(); got != h {
		t.Errorf("unpacked %s, zip holds %s", got, h)
	}
	entries, _ := os.ReadDir(filepath.Dir(p3.Dir))
	if len(entries) != 1 {
		t.Errorf("left beside the package: %v", entries)
	}
}

func TestUnpackRefusesUnsafeZips(t *testing.T) {
	src, _ := tfinstall.ParseSource("hashicorp/random")
	for _, tt := range []struct {
		name  string
		entry string
		mode  os.FileMode
	}{
		{"a name out of the folder", "../terraform-provider-random_v3.6.3", 0o755},
		{"an absolute name", "/tmp/terraform-provider-random_v3.6.3", 0o755},
		{"a link", "terraform-provider-random_v3.6.3", os.ModeSymlink | 0o777},
	} {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			var buf bytes.Buffer
			zw := zip.NewWriter(&buf)
			h := &zip.FileHeader{Name: tt.entry}
			h.SetMode(tt.mode)
			w, err := zw.CreateHeader(h)
			if err != nil {
				t.Fatal(err)
			}
			w.Write([]byte("/etc/passwd"))
			zw.Close()
			write(t, filepath.Join(root, "mirror/registry.terraform.io/hashicorp/random/terraform-provider-random_3.6.3_"+plat.String()+".zip"), buf.String(), 0o644)
			f := &tfinstall.Finder{Locations: tfinstall.Locations{Mirrors: []string{filepath.Join(root, "mirror")}}, UnpackDir: filepath.Join(root, "unpacked")}
			if _, err := f.Find(t.Context(), tfinstall.Request{Source: src}); err == nil || !strings.Contains(err.Error(), "unpack") {
				t.Fatalf("Find: %v, want a refused unpack", err)
			}
			if entries, _ := os.ReadDir(filepath.Join(root, "unpacked/registry.terraform.io/hashicorp/random/3.6.3")); len(entries) != 0 {
				t.Errorf("something was unpacked: %v", entries)
			}
		})
	}
}
