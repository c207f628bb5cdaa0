package backends

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/bulwark-iac/bulwark/core/storage"
)

func TestScheme(t *testing.T) {
	for _, c := range []struct{ url, scheme string }{
		{"file:///tmp/x", "file"},
		{"/tmp/x", ""},
		{".bulwark", ""},
		{"POSTGRES://u@h/db", "postgres"},
		{"postgresql://u@h/db", "postgresql"},
		{"s3://bucket/prefix?region=eu-west-1", "s3"},
		{"./a://b", ""},
	} {
		if got := Scheme(c.url); got != c.scheme {
			t.Errorf("Scheme(%q) = %q, want %q", c.url, got, c.scheme)
		}
	}
}

func TestRedact(t *testing.T) {
	for _, c := range []struct{ url, want string }{
		{"postgres://ci:hunter2@db:5432/bulwark?sslmode=require", "postgres://ci@db:5432/bulwark?sslmode=require"},
		{"postgres://ci@db/bulwark?password=hunter2&sslmode=disable", "postgres://ci@db/bulwark?sslmode=disable"},
		{"s3://b/p?region=eu&secret_key=hunter2", "s3://b/p?region=eu"},
		{"postgres://u:hunter2@[::1", "postgres://…"},
	} {
		got := Redact(c.url)
		if got != c.want || strings.Contains(got, "hunter2") {
			t.Errorf("Redact(%q) = %q, want %q", c.url, got, c.want)
		}
	}
}

func TestOpenDispatch(t *testing.T) {
	ctx := context.Background()
	opts := storage.Options{Stack: "web"}
	dir := t.TempDir()
	for _, u := range []string{"file://" + dir, dir} {
		b, err := Open(ctx, u, opts)
		if err != nil {
			t.Fatalf("Open(%s): %v", u, err)
		}
		if !strings.HasPrefix(b.Location(), "file://") {
			t.Errorf("Open(%s): location %s", u, b.Location())
		}
		b.Close()
	}
	for _, c := range []struct{ url, want string }{
		{"s3://bucket/prefix?secret=hunter2", `unknown URL parameter "secret"`},
		{"ftp://u:hunter2@host/x", `unknown backend "ftp"`},
	} {
		_, err := Open(ctx, c.url, opts)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("Open(%s): %v, want %q", c.url, err, c.want)
		}
	}
	// A postgres URL that reaches nothing fails naming the place, not the password.
	_, err := Open(ctx, "postgres://u:hunter2@127.0.0.1:1/db?sslmode=disable&connect_timeout=2", opts)
	if err == nil || strings.Contains(err.Error(), "hunter2") || !strings.Contains(err.Error(), "postgres://u@127.0.0.1:1/db") {
		t.Errorf("unreachable postgres: %v", err)
	}
	if errors.Is(err, storage.ErrLocked) {
		t.Error("an unreachable server is no lock")
	}
}
