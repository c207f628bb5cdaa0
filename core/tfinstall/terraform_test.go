package tfinstall_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/bulwark-iac/bulwark/core/tfinstall"
	"github.com/bulwark-iac/bulwark/core/tfinstall/registrytest"
)

// TestHashesAgreeWithTerraform installs a package from the loopback
// registry, and has Terraform (on PATH; skipped without it) lock the same
// provider from the same registry: the lock file Terraform writes lists
// exactly the h1: and zh: hashes Install computed. The same package in a
// filesystem mirror, packed and unpacked, gets the same h1: from Terraform
// and from HashDir and HashZipContent.
func TestHashesAgreeWithTerraform(t *testing.T) {
	tf, err := exec.LookPath("terraform")
	if err != nil {
		t.Skip("terraform is not on PATH")
	}
	other := tfinstall.Platform{OS: "darwin", Arch: "arm64"}
	if tfinstall.CurrentPlatform() == other {
		other = tfinstall.Platform{OS: "linux", Arch: "amd64"}
	}
	srv, err := registrytest.New(registrytest.Provider{
		Namespace: "test", Type: "demo", Versions: []string{"1.2.3"},
		Platforms: []tfinstall.Platform{tfinstall.CurrentPlatform(), other},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	src, err := tfinstall.ParseSource(srv.Host + "/test/demo")
	if err != nil {
		t.Fatal(err)
	}
	in := &tfinstall.Installer{Registry: tfinstall.Registry{Client: srv.Client()}, Dir: t.TempDir()}
	got, err := in.Install(context.Background(), src, mustConstraints(t, "~> 1.2"))
	if err != nil {
		t.Fatal(err)
	}

	work := t.TempDir()
	ca := filepath.Join(work, "ca.pem")
	write(t, ca, string(srv.CertPEM), 0o644)
	write(t, filepath.Join(work, "empty.tfrc"), "", 0o644)
	cfg := filepath.Join(work, "cfg")
	write(t, filepath.Join(cfg, "main.tf"), `terraform {
  required_providers {
    demo = { source = "`+srv.Host+`/test/demo", version = "~> 1.2" }
  }
}
`, 0o644)
	env := append(os.Environ(), "SSL_CERT_FILE="+ca, "HOME="+work, "TF_CLI_CONFIG_FILE="+filepath.Join(work, "empty.tfrc"), "CHECKPOINT_DISABLE=1", "TF_IN_AUTOMATION=1")
	tfLock := func(args ...string) []tfinstall.Hash {
		t.Helper()
		os.Remove(filepath.Join(cfg, ".terraform.lock.hcl"))
		cmd := exec.Command(tf, append([]string{"providers", "lock", "-platform=" + tfinstall.CurrentPlatform().String()}, args...)...)
		cmd.Dir, cmd.Env = cfg, env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("terraform providers lock %v: %v\n%s", args, err, out)
		}
		b, err := os.ReadFile(filepath.Join(cfg, ".terraform.lock.hcl"))
		if err != nil {
			t.Fatal(err)
		}
		var hs []tfinstall.Hash
		for _, m := range regexp.MustCompile(`"((?:h1|zh):[^"]+)"`).FindAllStringSubmatch(string(b), -1) {
			hs = append(hs, tfinstall.Hash(m[1]))
		}
		slices.Sort(hs)
		return hs
	}
	t.Logf("Install: %v", got.Hashes)
	if d := cmp.Diff(tfLock(), got.Hashes); d != "" {
		t.Errorf("from the registry: Terraform's hashes (-) and Install's (+):\n%s", d)
	}

	// The same package in filesystem mirrors, packed and unpacked.
	zipBytes := srv.ArchiveBytes("test", "demo", "1.2.3", tfinstall.CurrentPlatform())
	packed := filepath.Join(work, "packed")
	zipPath := filepath.Join(packed, srv.Host, "test", "demo", "terraform-provider-demo_1.2.3_"+tfinstall.CurrentPlatform().String()+".zip")
	write(t, zipPath, string(zipBytes), 0o644)
	h1Zip, err := tfinstall.HashZipContent(zipPath)
	if err != nil {
		t.Fatal(err)
	}
	h1Dir, err := tfinstall.HashDir(got.Package.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(tfLock("-fs-mirror="+packed), []tfinstall.Hash{h1Zip}); d != "" {
		t.Errorf("packed mirror: Terraform's hashes (-) and HashZipContent's (+):\n%s", d)
	}
	if d := cmp.Diff(tfLock("-fs-mirror="+in.Dir), []tfinstall.Hash{h1Dir}); d != "" {
		t.Errorf("unpacked mirror: Terraform's hashes (-) and HashDir's (+):\n%s", d)
	}
}

func mustConstraints(t *testing.T, s string) tfinstall.Constraints {
	t.Helper()
	c, err := tfinstall.ParseConstraints(s)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func write(t *testing.T, path, content string, perm os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), perm); err != nil {
		t.Fatal(err)
	}
}
