//go:build unix

package localprovider_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bulwark-iac/bulwark/plugins/local/localprovider"
	"github.com/bulwark-iac/bulwark/sdk"
	"github.com/bulwark-iac/bulwark/sdk/providertest"
)

// The file data source reads a regular file under the root, and refuses
// every way out of it: .., an absolute path, a symbolic link (out or in),
// a hard link, a fifo (without blocking), a device, a folder, a name the
// provider reserves, a file too big. Served over the real transport, so
// Serve's check of the config runs too.
func TestFileData(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "root")
	outside := filepath.Join(base, "outside")
	for _, d := range []string{filepath.Join(root, "conf", "deep"), outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(path, content string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(root, "conf", "app.yaml"), "port: 8080\n")
	write(filepath.Join(root, "conf", "deep", "blob"), "\xff\x00\x01")
	write(filepath.Join(root, ".hidden"), "reserved")
	write(filepath.Join(outside, "secret"), "the host's secret")
	link := func(target, name string) {
		t.Helper()
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	link(filepath.Join(outside, "secret"), "out-abs")
	link("../outside/secret", "out-rel")
	link(outside, "outdir")
	link("conf/app.yaml", "in-link")
	link("conf", "conflink")
	if err := os.Link(filepath.Join(outside, "secret"), filepath.Join(root, "hard")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(root, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "big"), make([]byte, localprovider.MaxDataFileSize+1), 0o644); err != nil {
		t.Fatal(err)
	}
	device := syscall.Mknod(filepath.Join(root, "null"), syscall.S_IFCHR|0o666, 0x103) // 1:3, /dev/null

	p := localprovider.New()
	if resp, err := p.Configure(context.Background(), &sdk.ConfigureRequest{Config: sdk.Attributes{"root": root}, DataDir: t.TempDir(), ReadOnly: true}); err != nil || resp.Diagnostics.HasError() {
		t.Fatalf("Configure: %v %v", resp, err)
	}
	host := providertest.ServeGRPC(t, p)
	s, err := host.GetSchema(context.Background(), &sdk.GetSchemaRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s.DataSource("file"); !ok || !s.Capabilities.ReadData {
		t.Fatalf("no file data source: %+v %+v", s.DataSources, s.Capabilities)
	}
	read := func(path any) *sdk.ReadDataResponse {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		r, err := host.(sdk.DataReader).ReadData(ctx, &sdk.ReadDataRequest{Type: "file", Name: "f", Config: sdk.Attributes{"path": path}})
		if err != nil {
			t.Fatalf("ReadData %v: %v", path, err)
		}
		return r
	}

	t.Run("text", func(t *testing.T) {
		r := read("conf//./app.yaml")
		sum := sha256.Sum256([]byte("port: 8080\n"))
		want := sdk.Attributes{"path": "conf/app.yaml", "content": "port: 8080\n", "content_base64": base64.StdEncoding.EncodeToString([]byte("port: 8080\n")),
			"sha256": hex.EncodeToString(sum[:]), "size": 11.0}
		if r.Diagnostics.HasError() {
			t.Fatal(r.Diagnostics)
		}
		for k, v := range want {
			if r.Attributes[k] != v {
				t.Errorf("%s = %#v, want %#v", k, r.Attributes[k], v)
			}
		}
	})
	t.Run("binary", func(t *testing.T) {
		r := read("conf/deep/blob")
		if r.Diagnostics.HasError() || r.Attributes["content"] != nil || r.Attributes["content_base64"] != "/wAB" || r.Attributes["size"] != 3.0 {
			t.Errorf("binary file: %v %v", r.Attributes, r.Diagnostics)
		}
	})

	attacks := []struct {
		name, path, want string
	}{
		{"dotdot", "../outside/secret", "escapes the root"},
		{"dotdot inside", "conf/../../outside/secret", "escapes the root"},
		{"absolute", filepath.Join(outside, "secret"), "is absolute"},
		{"symlink out, absolute", "out-abs", "symbolic link"},
		{"symlink out, relative", "out-rel", "symbolic link"},
		{"through a symlinked folder out", "outdir/secret", "symbolic link"},
		{"symlink in", "in-link", "symbolic link"},
		{"through a symlinked folder in", "conflink/app.yaml", "symbolic link"},
		{"hard link", "hard", "hard links"},
		{"fifo", "fifo", "not a regular file"},
		{"folder", "conf", "is a folder"},
		{"reserved name", ".hidden", "reserved for the provider"},
		{"too big", "big", "more than the"},
		{"missing", "conf/none", "no such file"},
		{"empty", "", "must not be empty"},
		{"backslash", `conf\app.yaml`, "backslash"},
	}
	for _, tt := range attacks {
		t.Run(tt.name, func(t *testing.T) {
			r := read(tt.path)
			if !r.Diagnostics.HasError() || !strings.Contains(r.Diagnostics.Err().Error(), tt.want) || r.Attributes != nil {
				t.Errorf("read %q: %v %v; want an error with %q", tt.path, r.Attributes, r.Diagnostics, tt.want)
			}
			if r.Diagnostics.HasError() && strings.Contains(r.Diagnostics.Err().Error(), "the host's secret") {
				t.Errorf("the error shows the outside file's content: %v", r.Diagnostics)
			}
		})
	}
	t.Run("device", func(t *testing.T) {
		if device != nil {
			t.Skipf("cannot make a device node here (%v): needs CAP_MKNOD", device)
		}
		r := read("null")
		if !r.Diagnostics.HasError() || !strings.Contains(r.Diagnostics.Err().Error(), "not a regular file") {
			t.Errorf("a device: %v %v", r.Attributes, r.Diagnostics)
		}
	})
	t.Run("wrong type", func(t *testing.T) {
		r := read(3.0)
		if !r.Diagnostics.HasError() || !strings.Contains(r.Diagnostics.Err().Error(), "must be a string") {
			t.Errorf("a number as path: %v", r.Diagnostics)
		}
	})
	// Nothing was written: the read-only session changed nothing.
	if _, err := os.Lstat(filepath.Join(root, localprovider.PendingFile)); !os.IsNotExist(err) {
		t.Errorf("the file data source wrote %s: %v", localprovider.PendingFile, err)
	}
}

// A read-only session on a root that does not exist reads no file, and
// makes no root.
func TestFileDataAbsentRoot(t *testing.T) {
	root := filepath.Join(t.TempDir(), "none")
	p := localprovider.New()
	if resp, err := p.Configure(context.Background(), &sdk.ConfigureRequest{Config: sdk.Attributes{"root": root}, ReadOnly: true}); err != nil || resp.Diagnostics.HasError() {
		t.Fatalf("Configure: %v %v", resp, err)
	}
	r, err := p.(sdk.DataReader).ReadData(context.Background(), &sdk.ReadDataRequest{Type: "file", Name: "f", Config: sdk.Attributes{"path": "a"}})
	if err != nil || !r.Diagnostics.HasError() || !strings.Contains(r.Diagnostics.Err().Error(), "does not exist") {
		t.Errorf("read under an absent root: %v %v", r, err)
	}
	if _, err := os.Lstat(root); !os.IsNotExist(err) {
		t.Errorf("the read made the root: %v", err)
	}
}
