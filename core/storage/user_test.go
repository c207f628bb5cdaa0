package storage

import "testing"

func TestCurrentUserPrefersBulwarkUser(t *testing.T) {
	t.Setenv(UserEnv, "  ci-bot\x1b[31m\n")
	if got := CurrentUser(); got != "ci-bot[31m" {
		t.Fatalf("CurrentUser with %s set: %q, want the name without control characters", UserEnv, got)
	}
	t.Setenv(UserEnv, "")
	t.Setenv("USER", "fallback-user")
	if got := CurrentUser(); got == "" {
		t.Fatal("CurrentUser without BULWARK_USER: empty, want the account's name or $USER")
	}
}
