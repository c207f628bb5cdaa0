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
