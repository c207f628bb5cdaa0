package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"
)

// updateGolden: go test -run 'TestScripts/json_' -update rewrites the
// golden files of the scripts that run (review the diff: it is the
// contract docs/json.md documents).
var updateGolden = flag.Bool("update", false, "rewrite the golden files the scripts compare with")

// Masks for json-mask: what differs between two runs of the same script.
var (
	maskULID     = regexp.MustCompile(`[0-9A-HJKMNP-TV-Z]{26}`)
	maskTime     = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)`)
	maskDuration = regexp.MustCompile(`"duration_ms": ?\d+`)
	maskMockID   = regexp.MustCompile(`(mock-[a-z0-9_]+-[^"\s:]*?-)[0-9a-f]{8}\b`)
	maskPID      = regexp.MustCompile(`"pid": ?\d+`)
	maskHost     = regexp.MustCompile(`"host": ?"[^"]*"`)
)

// json-mask FILE checks that FILE is one JSON document, or JSON lines (one
// object a line), and rewrites it so a golden file can pin it: $WORK for
// the script's folder, ULIDs numbered by first appearance (ULID1, ULID2, …,
// so what is the same stays the same), TIME for timestamps, 0 for
// durations, pids and the lock's host, XXXXXXXX for the random part of a
// mock id.
//
// json-mask -sort FILE also puts an event stream's resource events in the
// order of their resource's name, each resource's own events kept in the
// order they came, between the lines that name no resource (an
// operation's start and end stay where they are). Independent steps, and
// a dependent that starts once its dependency is created while the
// dependency's Verify reads, finish in either order even at
// --parallelism 1; the order that matters is asserted with events-order.
func cmdJSONMask(ts *testscript.TestScript, neg bool, args []string) {
	sortEvents := len(args) == 2 && args[0] == "-sort"
	if sortEvents {
		args = args[1:]
	}
	if neg || len(args) != 1 {
		ts.Fatalf("usage: json-mask [-sort] FILE")
	}
	path := ts.MkAbs(args[0])
	b, err := os.ReadFile(path)
	ts.Check(err)
	if sortEvents {
		b = sortByResource(ts, b)
	}
	if !json.Valid(b) {
		for i, line := range bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n")) {
			var obj map[string]any
			if err := json.Unmarshal(line, &obj); err != nil {
				ts.Fatalf("%s: neither one JSON document nor JSON lines: line %d: %v\n%s", args[0], i+1, err, line)
			}
		}
	}
	s := string(b)
	for _, v := range []string{"WORK", "BULWARK_PLUGIN_DIR", "TEST_PLUGIN_DIR"} {
		if dir := ts.Getenv(v); dir != "" {
			s = strings.ReplaceAll(s, dir, "$"+v)
		}
	}
	seen := map[string]string{}
	s = maskULID.ReplaceAllStringFunc(s, func(u string) string {
		if _, ok := seen[u]; !ok {
			seen[u] = fmt.Sprintf("ULID%d", len(seen)+1)
		}
		return seen[u]
	})
	s = maskTime.ReplaceAllString(s, "TIME")
	s = maskDuration.ReplaceAllStringFunc(s, func(d string) string {
		return d[:strings.IndexByte(d, ':')+1] + strings.Repeat(" ", strings.Count(d, " ")) + "0"
	})
	s = maskMockID.ReplaceAllString(s, "${1}XXXXXXXX")
	s = maskPID.ReplaceAllStringFunc(s, func(d string) string {
		return d[:strings.IndexByte(d, ':')+1] + strings.Repeat(" ", strings.Count(d, " ")) + "0"
	})
	s = maskHost.ReplaceAllStringFunc(s, func(d string) string {
		return d[:strings.IndexByte(d, ':')+1] + strings.Repeat(" ", strings.Count(d, " ")) + `"HOST"`
	})
	ts.Check(os.WriteFile(path, []byte(s), 0o600))
}

// sortByResource stably sorts each run of JSON lines that name a resource
// by that name; a line without one ends the run and keeps its place.
func sortByResource(ts *testscript.TestScript, b []byte) []byte {
	lines := bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n"))
	names := make([]string, len(lines))
	for i, line := range lines {
		var ev struct {
			Resource *string `json:"resource"`
		}
		if err := json.Unmarshal(line, &ev); err != nil {
			ts.Fatalf("json-mask -sort: line %d is not a JSON object: %v\n%s", i+1, err, line)
		}
		if ev.Resource != nil {
			names[i] = "r:" + *ev.Resource
		}
	}
	for start := 0; start < len(lines); {
		end := start
		for end < len(lines) && names[end] != "" {
			end++
		}
		run, keys := lines[start:end], names[start:end]
		idx := make([]int, len(run))
		for i := range idx {
			idx[i] = i
		}
		sort.SliceStable(idx, func(x, y int) bool { return keys[idx[x]] < keys[idx[y]] })
		sorted := make([][]byte, len(run))
		for i, j := range idx {
			sorted[i] = run[j]
		}
		copy(run, sorted)
		start = end + 1
	}
	return append(bytes.Join(lines, []byte("\n")), '\n')
}
