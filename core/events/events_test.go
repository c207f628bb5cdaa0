package events

import (
	"bytes"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestLinesAreWholeAndShaped(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf, func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) })
	var wg sync.WaitGroup
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.Write(Event{Op: "op_X", Resource: "network", Type: "network", Action: "create", Status: "ok", DurationMS: 3})
		}()
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 50 {
		t.Fatalf("%d lines", len(lines))
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"ts", "op", "resource", "type", "action", "status", "duration_ms"} {
		if _, ok := m[k]; !ok {
			t.Errorf("event lacks %q: %s", k, lines[0])
		}
	}
	if _, ok := m["error"]; ok {
		t.Error("error present on a successful event")
	}
}
