package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/xml"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bulwark-iac/bulwark/backends"
	"github.com/bulwark-iac/bulwark/core/secrets"
	"github.com/bulwark-iac/bulwark/core/state"
	"github.com/bulwark-iac/bulwark/core/storage"
)

// TestCrashAtEveryStepBoundaryOnS3 is the crash harness on the s3 state
// backend (every backend survives what the file backend survives): the
// stack's state, journal and lock in an S3 bucket (an emulator on
// loopback), only the providers' data folders on disk. The scenarios of
// crashRemoteScenarios (a first apply, a failed apply's rollback, a
// teardown, and, from a copy of a stack rep1.yaml was applied to
// (copyRemoteState), a replacement with its cleanup phase and a failed
// replacement's rollback), each killed at a fixed sample of its journal
// records, state writes and provider mutations (the first and the last of
// each, and the middle journal record: crashSample), and resumed to
// convergence.
// BULWARK_CRASH_FULL=1 kills them at every boundary (minutes). The storage conformance suite (backends/s3store) kills at
// every one of the backend's own write boundaries.
func TestCrashAtEveryStepBoundaryOnS3(t *testing.T) {
	if os.Getenv("BULWARK_TEST_S3_ENDPOINT") == "" {
		// Minutes of kills: run where the emulators run (CI's .ci/run,
		// make test-aws), as the aws provider's integration tests are.
		t.Skip("BULWARK_TEST_S3_ENDPOINT is unset: start the emulators (`.ci/emulators.sh start && eval \"$(.ci/emulators.sh env)\"`) to run the crash harness on s3")
	}
	s3TestEnv(t)
	if !s3StateWired() {
		t.Skip("this build runs its commands on the file backend only: --state s3:// is not wired into the stack commands yet")
	}
	endpoint := crashS3Server(t)
	crashAtEveryStepBoundary(t, func(t crashT) string { return s3Place(t, endpoint) }, crashRemoteScenarios)
}

// crashS3Server returns the S3 endpoint the test's commands use: the
// emulator .ci/emulators.sh started, else one started for this test (until
// it ends), with the bucket team-state in it.
func crashS3Server(t *testing.T) string {
	t.Helper()
	endpoint := os.Getenv("BULWARK_TEST_S3_ENDPOINT")
	if endpoint == "" {
		addr := filepath.Join(t.TempDir(), "s3.addr")
		cmd := exec.Command(buildFakeS3(t), "-listen", "127.0.0.1:0", "-addr-file", addr)
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		deadline := time.Now().Add(20 * time.Second)
		for {
			b, err := os.ReadFile(addr)
			if err == nil && len(bytes.TrimSpace(b)) > 0 {
				endpoint = strings.TrimSpace(string(b))
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the S3 emulator did not start within 20 s")
			}
			time.Sleep(10 * time.Millisecond) // polling interval, bounded by the deadline
		}
	}
	resp, err := s3Do(http.MethodPut, endpoint+"/team-state", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusConflict {
		t.Fatalf("create the bucket: %s", resp.Status)
	}
	return endpoint
}

// s3Do sends an unsigned request: the emulators check no signature.
func s3Do(method, u string, body []byte) (*http.Response, error) {
	req, err := http.NewRequest(method, u, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	return http.DefaultClient.Do(req)
}

// s3Place is a fresh prefix of the bucket at endpoint, as a --state URL.
func s3Place(t crashT, endpoint string) string {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return "s3://team-state/crash-" + hex.EncodeToString(b[:]) + "?region=us-east-1&endpoint=" + url.QueryEscape(endpoint)
}

// s3Parts splits e.stateURL into the endpoint and the stack's key prefix.
func (e *crashEnv) s3Parts() (endpoint, prefix string) {
	u, err := url.Parse(e.stateURL)
	if err != nil {
		e.t.Fatal(err)
	}
	return u.Query().Get("endpoint"), u.Host + u.Path + "/" + e.stack + "/"
}

// copyRemoteState gives to a fresh place on e's backend holding a copy of
// e's stack, as copyTree does for a state folder: on s3 every object but
// the lock; on postgres every row of the stack but the lock's (see
// copyPostgresStack).
func (e *crashEnv) copyRemoteState(to *crashEnv) {
	e.t.Helper()
	if e.stateURL == "" {
		return
	}
	to.place, to.stateURL = e.place, e.place(to.t)
	if !strings.HasPrefix(e.stateURL, "s3://") {
		e.copyPostgresStack(to)
		return
	}
	_, prefix := e.s3Parts()
	endpoint, toPrefix := to.s3Parts()
	bucket, _, _ := strings.Cut(prefix, "/")
	resp, err := s3Do(http.MethodGet, endpoint+"/"+bucket+"?list-type=2&prefix="+url.QueryEscape(strings.TrimPrefix(prefix, bucket+"/")), nil)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	var list struct {
		Contents []struct {
			Key string `xml:"Key"`
		} `xml:"Contents"`
		Truncated bool `xml:"IsTruncated"`
	}
	if err := xml.NewDecoder(resp.Body).Decode(&list); err != nil {
		e.t.Fatalf("list %s: %v", prefix, err)
	}
	if list.Truncated {
		e.t.Fatalf("list %s: more than one page", prefix)
	}
	for _, o := range list.Contents {
		name := strings.TrimPrefix(o.Key, strings.TrimPrefix(prefix, bucket+"/"))
		if name == "lock.json" {
			continue
		}
		get, err := s3Do(http.MethodGet, endpoint+"/"+bucket+"/"+o.Key, nil)
		if err != nil {
			e.t.Fatal(err)
		}
		body, err := io.ReadAll(get.Body)
		get.Body.Close()
		if err != nil || get.StatusCode != http.StatusOK {
			e.t.Fatalf("copy %s: %s %v", o.Key, get.Status, err)
		}
		put, err := s3Do(http.MethodPut, endpoint+"/"+toPrefix+name, body)
		if err != nil {
			e.t.Fatal(err)
		}
		put.Body.Close()
		if put.StatusCode != http.StatusOK {
			e.t.Fatalf("copy %s: %s", o.Key, put.Status)
		}
	}
}

// remote opens e's stack at e.stateURL, with the tests' key.
func (e *crashEnv) remote() storage.Backend {
	e.t.Helper()
	key, err := secrets.ParseKey(testSecretsKey, "the tests' key")
	if err != nil {
		e.t.Fatal(err)
	}
	b, err := backends.Open(context.Background(), e.stateURL, storage.Options{Stack: e.stack, Sealing: state.Sealing{Sealer: key.Box(secrets.StackContext(e.stack))}})
	if err != nil {
		e.t.Fatal(err)
	}
	return b
}

// readRemoteState is readState on the backend at e.stateURL.
func (e *crashEnv) readRemoteState() crashState {
	e.t.Helper()
	b := e.remote()
	defer b.Close()
	ctx := context.Background()
	st, err := b.Load(ctx)
	if err != nil {
		e.t.Fatalf("load the state at %s: %v", e.stateURL, err)
	}
	cs := crashState{Resources: map[string]crashStateRes{}, Current: st.Current, Staged: st.Staged}
	for n, r := range st.Resources {
		cs.Resources[n] = crashStateRes{Name: r.Name, Type: r.Type, Provider: r.Provider, ID: r.ID, Protection: r.Protection.String()}
	}
	for _, rev := range st.Revisions {
		spec := rev.Spec
		if spec == "" {
			if body, err := b.Revision(ctx, rev.N); err == nil {
				spec = body.Spec
			}
		}
		cs.Revisions = append(cs.Revisions, struct {
			N      int    `json:"n"`
			Op     string `json:"op"`
			Status string `json:"status"`
			Spec   string `json:"spec"`
		}{N: rev.N, Op: rev.Op, Status: rev.Status, Spec: spec})
	}
	return cs
}

// remoteJournal is journalRecords on the backend at e.stateURL.
func (e *crashEnv) remoteJournal() []journalRec {
	e.t.Helper()
	b := e.remote()
	defer b.Close()
	recs, _, err := b.Journal(context.Background())
	if err != nil {
		e.t.Fatalf("read the journal at %s: %v", e.stateURL, err)
	}
	out := make([]journalRec, 0, len(recs))
	for _, r := range recs {
		out = append(out, journalRec{Op: r.Op, Kind: r.Kind, Type: r.Type, Status: r.Status, Step: r.Step, Action: r.Action, Phase: r.Phase, Resource: r.Resource})
	}
	return out
}
