package tfplugin

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestProtoMatchesTerraform checks every field, enum value and RPC our
// .proto files declare against Terraform's published ones (as the test
// provider's terraform-plugin-go vendors them): same number, type and
// name, so the subset is wire compatible field for field, the ones no test
// exercises included.
func TestProtoMatchesTerraform(t *testing.T) {
	cmd := exec.Command(goBin(), "list", "-m", "-json", "github.com/hashicorp/terraform-plugin-go")
	cmd.Dir = filepath.Join("testdata", "tfprovider")
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var mod struct{ Dir string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
		t.Fatalf("go list: %s: %v", out, err)
	}
	for _, v := range []string{"5", "6"} {
		t.Run("tfplugin"+v, func(t *testing.T) {
			ours := protoDecls(t, filepath.Join("internal", "tfplugin"+v, "tfplugin"+v+".proto"))
			theirs := protoDecls(t, filepath.Join(mod.Dir, "tfprotov"+v, "internal", "tfplugin"+v, "tfplugin"+v+".proto"))
			if len(ours) < 50 {
				t.Fatalf("only %d declarations parsed from ours", len(ours))
			}
			for key, decl := range ours {
				if theirs[key] != decl {
					t.Errorf("%s: ours %q, Terraform's %q", key, decl, theirs[key])
				}
			}
		})
	}
}

var (
	protoOpen  = regexp.MustCompile(`^(message|enum|service|oneof)\s+(\w+)\s*\{`)
	protoField = regexp.MustCompile(`^(?:repeated\s+|optional\s+)?([\w.<>, ]+?)\s+(\w+)\s*=\s*(\d+)`)
	protoEnum  = regexp.MustCompile(`^(\w+)\s*=\s*(\d+)\s*;`)
	protoRPC   = regexp.MustCompile(`^rpc\s+(\w+)\s*\(\s*(stream\s+)?([\w.]+)\s*\)\s*returns\s*\(\s*(stream\s+)?([\w.]+)\s*\)`)
	protoPkg   = regexp.MustCompile(`^package\s+(\w+)\s*;`)
)

// protoDecls reads a .proto file's declarations, keyed by their scope and
// number ("Schema.Attribute#2", "rpc Provider.GetSchema"), with what each
// declares ("bytes type"). Enough of the grammar for Terraform's files.
func protoDecls(t *testing.T, file string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	var scope []string
	var kinds []string
	for _, line := range strings.Split(string(b), "\n") {
		if i := strings.Index(line, "//"); i >= 0 {
			line = line[:i]
		}
		line = strings.TrimSpace(line)
		switch {
		case line == "":
		case protoPkg.MatchString(line):
			out["package"] = protoPkg.FindStringSubmatch(line)[1]
		case protoOpen.MatchString(line):
			m := protoOpen.FindStringSubmatch(line)
			if m[1] == "oneof" { // its fields belong to the message
				scope, kinds = append(scope, ""), append(kinds, "oneof")
				continue
			}
			scope, kinds = append(scope, m[2]), append(kinds, m[1])
		case strings.HasPrefix(line, "}"):
			scope, kinds = scope[:len(scope)-1], kinds[:len(kinds)-1]
		case len(kinds) > 0 && kinds[len(kinds)-1] == "service" && protoRPC.MatchString(line):
			m := protoRPC.FindStringSubmatch(line)
			out["rpc "+name(scope)+"."+m[1]] = m[2] + m[3] + " -> " + m[4] + m[5]
		case len(kinds) > 0 && kinds[len(kinds)-1] == "enum" && protoEnum.MatchString(line):
			m := protoEnum.FindStringSubmatch(line)
			out[name(scope)+"#"+m[2]] = m[1]
		case protoField.MatchString(line) && !strings.HasPrefix(line, "reserved"):
			m := protoField.FindStringSubmatch(line)
			out[name(scope)+"#"+m[3]] = strings.Join(strings.Fields(m[1]), "") + " " + m[2]
		}
	}
	return out
}

// name is a scope's dotted name, oneofs left out.
func name(scope []string) string {
	var parts []string
	for _, s := range scope {
		if s != "" {
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, ".")
}
