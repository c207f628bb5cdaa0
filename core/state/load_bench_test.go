package state

import (
	"fmt"
	"github.com/bulwark-iac/bulwark/core/protection"
	"path/filepath"
	"testing"
)

// BenchmarkLoad is Load of a state of 5,000 resources of the mock
// provider's shape: every resource's level is read and checked.
func BenchmarkLoad(b *testing.B) {
	st := &State{Version: Version, Stack: "s", Resources: map[string]*Resource{}}
	for i := range 5000 {
		name := fmt.Sprintf("r%06d", i)
		st.Resources[name] = &Resource{
			Name: name, Type: "generic", Provider: "mock", Source: "mock", ID: "mock-generic-" + name + "-1369e2e0", Protection: benchLevel,
			Attributes:     map[string]any{"arn": "mock:generic:" + name, "created_at": "2026-12-01T17:50:03.415472209Z"},
			CreatedBy:      "op_01M8SBMP9NQ72QP48A9TZ1VEYP",
			IdempotencyKey: "bulwark:bench:01M8SBMP9QK6J92W4VKQK98P6Z:" + name,
		}
	}
	path := filepath.Join(b.TempDir(), FileName)
	if err := write(path, st); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Load(path); err != nil {
			b.Fatal(err)
		}
	}
}

const benchLevel = protection.Durable
