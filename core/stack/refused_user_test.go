package stack_test

import (
	"strings"
	"testing"

	"github.com/bulwark-iac/bulwark/core/journal"
	"github.com/bulwark-iac/bulwark/core/stack"
	"github.com/bulwark-iac/bulwark/core/storage"
)

// A refused teardown of a protected resource names who tried it, as the
// person's terminal and history show it: a user name made to smuggle a
// terminal escape and a second line into history (BULWARK_USER is set by
// whoever runs the command) is journaled cleaned, on one line, and the
// protected resource is untouched.
func TestRefusalRecordsACleanedUser(t *testing.T) {
	t.Setenv(storage.UserEnv, "mallory\x1b[2K\ralice\nop_fake apply succeeded")
	e := newEnv(t)
	sp := mkSpec(t, res{name: "vault", typ: "dynamodb_table", prot: "protected"})
	e.mustApply(t, sp)
	r, err := e.teardown(sp)
	if code := stack.ExitCode(r, err); code != stack.ExitRefused {
		t.Fatalf("teardown: exit %d (%v), want %d", code, err, stack.ExitRefused)
	}
	if e.w.ByName("vault") == nil {
		t.Fatal("the protected resource is gone")
	}
	recs := journalIn(t, stack.StackDir(e.stateDir, "s"))
	last := recs[len(recs)-1]
	if last.Status != journal.OpRefused {
		t.Fatalf("last record %+v, want the refusal", last)
	}
	if want := storage.CurrentUser(); last.User != want || want == "" {
		t.Errorf("the refusal names user %q, want %q", last.User, want)
	}
	if strings.ContainsAny(last.User, "\x1b\r\n") {
		t.Errorf("the refusal's user %q carries control characters", last.User)
	}
	if last.Spec != sp.File {
		t.Errorf("the refusal names spec %q, want %q", last.Spec, sp.File)
	}
}
