package lock

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A record written before users were kept (no "user") still parses, and
// a holder's string names its user when it has one.
func TestHolderRecordWithoutUserParses(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	if err := os.WriteFile(path, []byte(`{"op":"op_1","pid":42,"host":"h","since":"2026-12-01T10:00:00Z"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := parseHolder(f)
	if h == nil || h.Op != "op_1" || h.PID != 42 || h.User != "" {
		t.Fatalf("parseHolder of an old record: %+v", h)
	}
	if s := h.String(); strings.Contains(s, "user") {
		t.Fatalf("String of a holder without user: %q", s)
	}
	h.User = "alice"
	h.Since = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	if s := h.String(); s != "operation op_1 (pid 42 on h, since 2026-12-01T10:00:00Z, user alice)" {
		t.Fatalf("String: %q", s)
	}
}
