package providerlock

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const sum = "6b86b273ff34fce19d6b804eff5a3f5747ada4eaa22f1d49c01e52ddb7875b4b"

func TestReadAndWrite(t *testing.T) {
	tests := []struct {
		name    string
		file    string
		want    *File
		wantErr string
	}{
		{
			name: "a lock written before Terraform providers still loads",
			file: `{"version": 1, "providers": {"mock": {"sha256": "` + sum + `"}}}`,
			want: &File{Version: 1, Providers: map[string]Entry{"mock": {SHA256: sum}}},
		},
		{
			name: "Terraform providers beside bulwark's own",
			file: `{"version": 1, "providers": {"mock": {"sha256": "` + sum + `"}},
			  "terraform_providers": {"registry.terraform.io/hashicorp/random": {"version": "3.6.3", "constraints": "~> 3.6", "hashes": ["h1:abc=", "zh:` + sum + `"]}}}`,
			want: &File{Version: 1, Providers: map[string]Entry{"mock": {SHA256: sum}}, Terraform: map[string]TerraformEntry{
				"registry.terraform.io/hashicorp/random": {Version: "3.6.3", Constraints: "~> 3.6", Hashes: []string{"h1:abc=", "zh:" + sum}},
			}},
		},
		{
			name:    "a hash of no known scheme",
			file:    `{"version": 1, "providers": {}, "terraform_providers": {"example.com/a/b": {"version": "1.0.0", "hashes": ["sha256:` + sum + `"]}}}`,
			wantErr: `terraform provider example.com/a/b: hash "sha256:`,
		},
		{
			name:    "no hashes",
			file:    `{"version": 1, "providers": {}, "terraform_providers": {"example.com/a/b": {"version": "1.0.0", "hashes": []}}}`,
			wantErr: "no hashes",
		},
		{
			name:    "no version",
			file:    `{"version": 1, "providers": {}, "terraform_providers": {"example.com/a/b": {"hashes": ["h1:x"]}}}`,
			wantErr: "no version",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), FileName)
			if err := os.WriteFile(path, []byte(tt.file), 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := Read(path)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Read: %v, want an error with %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Fatalf("Read (-want +got):\n%s", d)
			}
			// What is written reads back the same.
			if err := Write(path, got); err != nil {
				t.Fatal(err)
			}
			again, err := Read(path)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, again); d != "" {
				t.Fatalf("round trip (-want +got):\n%s", d)
			}
		})
	}
}

func TestWriteWithoutTerraformProvidersIsUnchanged(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	if err := Write(path, &File{Providers: map[string]Entry{"mock": {SHA256: sum}}}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := "{\n  \"version\": 1,\n  \"providers\": {\n    \"mock\": {\n      \"sha256\": \"" + sum + "\"\n    }\n  }\n}\n"
	if string(b) != want {
		t.Fatalf("wrote\n%s\nwant\n%s", b, want)
	}
}

func TestSetTerraform(t *testing.T) {
	var f File
	f.SetTerraform("example.com/a/b", TerraformEntry{Version: "1.0.0", Hashes: []string{"zh:2", "h1:1"}})
	f.SetTerraform("example.com/a/b", TerraformEntry{Version: "1.0.0", Constraints: "~> 1.0", Hashes: []string{"h1:3", "zh:2"}})
	want := TerraformEntry{Version: "1.0.0", Constraints: "~> 1.0", Hashes: []string{"h1:1", "h1:3", "zh:2"}}
	if d := cmp.Diff(want, f.Terraform["example.com/a/b"]); d != "" {
		t.Fatalf("same version: hashes merged (-want +got):\n%s", d)
	}
	f.SetTerraform("example.com/a/b", TerraformEntry{Version: "1.1.0", Hashes: []string{"h1:9"}})
	want = TerraformEntry{Version: "1.1.0", Hashes: []string{"h1:9"}}
	if d := cmp.Diff(want, f.Terraform["example.com/a/b"]); d != "" {
		t.Fatalf("new version: hashes replaced (-want +got):\n%s", d)
	}
}

func TestCheckTerraform(t *testing.T) {
	f := &File{}
	f.SetTerraform("registry.terraform.io/a/b", TerraformEntry{Version: "1.0.0", Hashes: []string{"h1:one", "zh:zip"}})
	for _, tt := range []struct {
		name, version string
		hashes        []string
		refused       bool
	}{
		{"same h1", "1.0.0", []string{"h1:one"}, false},
		{"same zh, another platform's h1", "1.0.0", []string{"h1:other", "zh:zip"}, false},
		{"other bytes", "1.0.0", []string{"h1:two"}, true},
		{"another version", "1.1.0", []string{"h1:two"}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := f.CheckTerraform("x/bulwark.lock", "registry.terraform.io/a/b", tt.version, tt.hashes)
			var me *HashMismatchError
			if got := errors.As(err, &me); got != tt.refused {
				t.Fatalf("%v, want refused %v", err, tt.refused)
			}
			if tt.refused && (!strings.Contains(err.Error(), "h1:one") || !strings.Contains(err.Error(), "h1:two") || !strings.Contains(err.Error(), "registry.terraform.io/a/b")) {
				t.Errorf("message %q names not the provider and both hashes", err)
			}
		})
	}
	if err := (*File)(nil).CheckTerraform("p", "registry.terraform.io/a/b", "1.0.0", []string{"h1:x"}); err != nil {
		t.Errorf("no lock: %v", err)
	}
}
