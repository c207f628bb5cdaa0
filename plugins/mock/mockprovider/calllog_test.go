package mockprovider

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/bulwark-iac/bulwark/sdk"
)

func TestCallLogNotesEachCall(t *testing.T) {
	var buf bytes.Buffer
	p := New(WithCallLog(&buf))
	ctx := context.Background()
	if _, err := p.GetSchema(ctx, &sdk.GetSchemaRequest{}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.ValidateResource(ctx, &sdk.ValidateResourceRequest{Type: "generic", Name: "web"}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("want 2 lines, got %q", buf.String())
	}
	for i, want := range []string{"\tGetSchema\t1\t", "\tValidateResource\t1\tweb"} {
		if !strings.HasSuffix(lines[i], want) && !strings.Contains(lines[i], want) {
			t.Errorf("line %d = %q, want it to hold %q", i, lines[i], want)
		}
	}
	if n, _ := CallLogFromEnv(func(string) string { return "" }); n != nil {
		t.Errorf("no %s: want no option, got %d", EnvCalls, len(n))
	}
}
