package benchharness

import (
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseStateURL(t *testing.T) {
	tests := []struct {
		url     string
		wantErr string // "" for accepted
	}{
		{"postgres://bulwark@127.0.0.1:5432/postgres?sslmode=disable", ""},
		{"postgresql://u:secret@db/x", ""},
		{"s3://bucket/prefix?region=us-east-1", ""},
		{"file:///tmp/state", "the file backend is measured beside it"},
		{"/tmp/state", "the file backend is measured beside it"},
		{"mysql://u@h/db", `unknown scheme "mysql"`},
		{"postgres://u:secret@db/x\x7f", "-state"},
	}
	for _, tt := range tests {
		got, err := ParseStateURL(tt.url)
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("ParseStateURL(%q): %v", tt.url, err)
		case tt.wantErr == "" && got != tt.url:
			t.Errorf("ParseStateURL(%q) = %q, want it unchanged", tt.url, got)
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("ParseStateURL(%q): error %v, want one saying %q", tt.url, err, tt.wantErr)
		case err != nil && strings.Contains(err.Error(), "secret"):
			t.Errorf("ParseStateURL(%q): the error shows the password: %v", tt.url, err)
		}
	}
}

func TestStackStateURL(t *testing.T) {
	tests := []struct {
		name, url string
		check     func(*url.URL) string // "" when right
	}{
		{"postgres: a schema of the stack run's own", "postgres://bulwark@127.0.0.1:5432/postgres?sslmode=disable", func(u *url.URL) string {
			if s := u.Query().Get("schema"); !strings.HasPrefix(s, "bench_chain_1000_") {
				return "schema " + s
			}
			if u.Query().Get("sslmode") != "disable" || u.Host != "127.0.0.1:5432" || u.User.Username() != "bulwark" {
				return "the URL's other parts changed"
			}
			return ""
		}},
		{"postgres: after the URL's own schema", "postgresql://u@db/x?schema=Team-A", func(u *url.URL) string {
			if s := u.Query().Get("schema"); !strings.HasPrefix(s, "team_a_bench_chain_1000_") {
				return "schema " + s
			}
			return ""
		}},
		{"s3: a prefix of its own", "s3://bucket/base/?region=r", func(u *url.URL) string {
			if !strings.HasPrefix(u.Path, "/base/bench-chain-1000-") || u.Query().Get("region") != "r" {
				return "path " + u.Path + "?" + u.RawQuery
			}
			return ""
		}},
	}
	for _, tt := range tests {
		a, err := stackStateURL(tt.url, Chain, 1000)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		b, _ := stackStateURL(tt.url, Chain, 1000)
		if a == b {
			t.Errorf("%s: two runs of one stack got the same URL %s: they would collide", tt.name, a)
		}
		u, err := url.Parse(a)
		if err != nil {
			t.Fatalf("%s: %s: %v", tt.name, a, err)
		}
		if msg := tt.check(u); msg != "" {
			t.Errorf("%s: %s: %s", tt.name, a, msg)
		}
	}
}

func TestStateFlags(t *testing.T) {
	if got, want := stateFlags("/p", "/s", ""), []string{"--plugin-dir", "/p", "--state-dir", "/s"}; !slices.Equal(got, want) {
		t.Errorf("file backend: %q, want %q", got, want)
	}
	// A remote backend keeps --state-dir: the providers' data folders.
	u := "postgres://u@h/db?schema=x"
	if got, want := stateFlags("/p", "/s", u), []string{"--plugin-dir", "/p", "--state-dir", "/s", "--state", u}; !slices.Equal(got, want) {
		t.Errorf("postgres: %q, want %q", got, want)
	}
	if got := ToolRemote(u); got != "bulwark@postgres" {
		t.Errorf("ToolRemote = %q", got)
	}
}

func TestRemoteTable(t *testing.T) {
	u := "postgres://bulwark@127.0.0.1:5432/postgres"
	pg := ToolRemote(u)
	res := func(tool string, shape Shape, cmd string, wall time.Duration) Result {
		return Result{Tool: tool, Shape: shape, N: 1000, Command: cmd, Measurement: Measurement{Wall: wall}, Resources: 1000}
	}
	results := []Result{
		res(ToolBulwark, Flat, CmdApply, 400*time.Millisecond),
		res(ToolBulwark, Flat, CmdNoop, 200*time.Millisecond),
		res(pg, Flat, CmdApply, 1000*time.Millisecond),
		res(pg, Flat, CmdNoop, 300*time.Millisecond),
	}
	rep := &Report{Date: time.Now(), CPUs: 2, Parallelism: 10, Results: results, StateURL: u, Load: "4.2 8.6 15.5", LoadAfter: "7.4 8.6 14.8"}
	md := rep.Markdown()
	checkTables(t, md)
	for _, want := range []string{
		"## bulwark on postgres beside the file backend",
		"**postgres ÷ file**: flat apply of 1,000: 2.50×; flat no-op apply of 1,000: 1.50×.",
		"| flat | 1,000 | apply | 400 ms | 1.00 s | 2.50× |",
		"load average at the start 4.2 8.6 15.5, at the end 7.4 8.6 14.8",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the table has no %q:\n%s", want, md)
		}
	}
	// The remote rows stay out of the file backend's table.
	if strings.Contains(md, "| flat | 1,000 | apply | 0 | 1.00 s |") {
		t.Errorf("postgres's apply is in the file backend's table:\n%s", md)
	}
	// Without -state, no such section.
	rep.StateURL, rep.Results = "", results[:2]
	if md := rep.Markdown(); strings.Contains(md, "beside the file backend") {
		t.Errorf("a section for a backend not asked for:\n%s", md)
	}
}
