package mockprovider_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/bulwark-iac/bulwark/plugins/mock/mockprovider"
	"github.com/bulwark-iac/bulwark/sdk"
)

// awaitFile waits, with a deadline, until path exists.
func awaitFile(t *testing.T, path string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never appeared", path)
		}
		time.Sleep(5 * time.Millisecond) // polling interval, bounded by the deadline
	}
}

// A hold file holds exactly the call it names (kind, resource, arrival),
// says when that call has begun, and lets it go, to do its work, once
// removed; the calls it does not name go through.
func TestHoldKeepsTheNamedCallInFlightUntilReleased(t *testing.T) {
	holdDir := t.TempDir()
	p := configured(t, t.TempDir(), nil, mockprovider.WithHold(holdDir))
	ctx := context.Background()
	name := mockprovider.HoldName("Create", "b", 2)
	if name != "Create-b-2" {
		t.Fatalf("HoldName = %q", name)
	}
	hold := filepath.Join(holdDir, name+".hold")
	if err := os.WriteFile(hold, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	create := func(key string) (*sdk.CreateResponse, error) {
		return p.Create(ctx, &sdk.CreateRequest{Type: "network", Name: "b", IdempotencyKey: key})
	}
	// The first Create of b and a Create of another name are not held.
	if _, err := create("k1"); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Create(ctx, &sdk.CreateRequest{Type: "network", Name: "c", IdempotencyKey: "k2"}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(holdDir, mockprovider.HoldName("Create", "b", 1)+".begun")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a call no hold file names was marked begun: %v", err)
	}
	// The second is.
	done := make(chan error, 1)
	go func() {
		_, err := create("k1")
		done <- err
	}()
	awaitFile(t, filepath.Join(holdDir, name+".begun"))
	select {
	case err := <-done:
		t.Fatalf("the held call answered (%v) before its hold file was removed", err)
	default:
	}
	if err := os.Remove(hold); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("the released call: %v", err)
	}
}

// A held call whose context ends fails with the context's error and
// changes nothing.
func TestHeldCallHonoursItsContext(t *testing.T) {
	holdDir, data := t.TempDir(), t.TempDir()
	p := configured(t, data, nil, mockprovider.WithHold(holdDir))
	name := mockprovider.HoldName("Create", "a", 1)
	if err := os.WriteFile(filepath.Join(holdDir, name+".hold"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := p.Create(ctx, &sdk.CreateRequest{Type: "network", Name: "a", IdempotencyKey: "k"})
		done <- err
	}()
	awaitFile(t, filepath.Join(holdDir, name+".begun"))
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("want context.Canceled, got %v", err)
	}
	r, err := p.Read(context.Background(), &sdk.ReadRequest{Type: "network", Name: "a"})
	if err != nil || r.Exists {
		t.Fatalf("a cancelled held Create made something: %+v %v", r, err)
	}
}

func TestHoldFromEnv(t *testing.T) {
	if o, err := mockprovider.HoldFromEnv(func(string) string { return "" }); o != nil || err != nil {
		t.Errorf("unset: want no option and no error, got %d, %v", len(o), err)
	}
	missing := filepath.Join(t.TempDir(), "nope")
	if _, err := mockprovider.HoldFromEnv(func(string) string { return missing }); err == nil {
		t.Error("a missing folder was accepted")
	}
	dir := t.TempDir()
	if o, err := mockprovider.HoldFromEnv(func(string) string { return dir }); len(o) != 1 || err != nil {
		t.Errorf("a folder: want one option, got %d, %v", len(o), err)
	}
}
