package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// The CLI is thin: the work of pinning providers (finding, downloading,
// hashing and verifying packages, writing bulwark.lock) is core's
// (core/providerlock), and so is starting plugins for their schemas
// (inspect.Schemas); the commands parse flags, call core and print. This
// pins it: no command file reaches for the pieces that work is made of.
func TestProvidersCommandsAreThin(t *testing.T) {
	forbidden := map[string]bool{
		"tfinstall.Finder": true, "tfinstall.Installer": true, "tfinstall.Pin": true,
		"tfinstall.Verify": true, "tfinstall.Prepare": true, "tfinstall.ParseSource": true,
		"tfinstall.ParseConstraints": true, "tfinstall.ParseRequirement": true,
		"providerlock.Write": true, "providerlock.CheckPin": true,
		"pluginhost.FileSHA256": true, "pluginhost.New": true,
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		parsed, err := parser.ParseFile(token.NewFileSet(), f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		seen++
		ast.Inspect(parsed, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if id, ok := sel.X.(*ast.Ident); ok && forbidden[id.Name+"."+sel.Sel.Name] {
				t.Errorf("%s uses %s.%s: that work belongs in core (core/providerlock, core/inspect)", f, id.Name, sel.Sel.Name)
			}
			return true
		})
	}
	if seen < 10 {
		t.Fatalf("only %d command files read", seen)
	}
}
