package awsprovider

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/bulwark-iac/bulwark/sdk"
)

// realS3 answers as a real S3 server does when it rejects a request: HEAD
// gets status with no body (HEAD answers never carry one), every other
// method gets status with an XML error body carrying code, including, as
// AWS does, the access key id the request was signed with. It records the
// requests it saw ("METHOD PATH").
type realS3 struct {
	status int
	code   string

	mu   sync.Mutex
	seen []string
}

func (f *realS3) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.seen = append(f.seen, r.Method+" "+r.URL.Path)
	f.mu.Unlock()
	if r.Method == http.MethodHead {
		if f.code == "NoSuchBucket" {
			w.WriteHeader(http.StatusNotFound)
		} else {
			w.WriteHeader(http.StatusForbidden)
		}
		return
	}
	keyID := ""
	if _, cred, ok := strings.Cut(r.Header.Get("Authorization"), "Credential="); ok {
		keyID, _, _ = strings.Cut(cred, "/")
	}
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(f.status)
	fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?>
<Error><Code>%s</Code><Message>refused by the test's S3</Message><AWSAccessKeyId>%s</AWSAccessKeyId><RequestId>4442587FB7D0A2F9</RequestId><HostId>aG9zdA==</HostId></Error>`, f.code, keyID)
}

func (f *realS3) requests() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.seen...)
}

// realDynamoDB answers every call as DynamoDB does when it rejects the
// credentials: 400 with a JSON body naming code.
func realDynamoDB(code string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := fmt.Sprintf(`{"__type":"com.amazon.coral.service#%s","message":"The security token included in the request is invalid."}`, code)
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.Header().Set("X-Amz-Crc32", strconv.FormatUint(uint64(crc32.ChecksumIEEE([]byte(body))), 10))
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, body)
	})
}

// TestCredentialsRejected: a 403 from HeadBucket is told apart by the code
// the next call's answer carries: rejected credentials are said to be so,
// naming where they came from, and never taken for a bucket that exists.
func TestCredentialsRejected(t *testing.T) {
	hermetic(t)
	const keyID, secret = "AKIDWRONGKEY0001", "wrong-secret-do-not-echo"
	t.Setenv("AWS_ACCESS_KEY_ID", keyID)
	t.Setenv("AWS_SECRET_ACCESS_KEY", secret)
	ctx := context.Background()

	cases := []struct {
		name        string
		status      int
		code        string
		credentials bool   // a *CredentialsError
		exists      bool   // Read answers Exists (when no error)
		want        string // in the error; "" for none
	}{
		{"wrong secret", http.StatusForbidden, "SignatureDoesNotMatch", true, false, "credentials rejected by S3 (SignatureDoesNotMatch): the credentials from the environment"},
		{"unknown key", http.StatusForbidden, "InvalidAccessKeyId", true, false, "credentials rejected by S3 (InvalidAccessKeyId)"},
		{"another account's bucket", http.StatusForbidden, "AccessDenied", false, false, "exists but these credentials may not list it"},
		{"no such bucket", http.StatusNotFound, "NoSuchBucket", false, false, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := &realS3{status: c.status, code: c.code}
			ts := httptest.NewServer(srv)
			t.Cleanup(ts.Close)
			p := configured(t, t.TempDir(), sdk.Attributes{"endpoint": ts.URL, "timeout_seconds": 10.0})
			cfg := sdk.Attributes{"bucket": "someone-elses-bucket"}

			rr, err := p.Read(ctx, &sdk.ReadRequest{Type: typeBucket, Name: "storage", Config: cfg})
			check := func(what string, err error) {
				t.Helper()
				var ce *CredentialsError
				switch {
				case c.want == "" && err != nil:
					t.Fatalf("%s: %v", what, err)
				case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
					t.Fatalf("%s: %v, want it to say %q", what, err, c.want)
				case c.credentials != errors.As(err, &ce):
					t.Fatalf("%s: %v (%T): a credentials error is %v, want %v", what, err, err, !c.credentials, c.credentials)
				case c.credentials && strings.Contains(err.Error(), "exists"):
					t.Fatalf("%s says the bucket exists, though only the credentials were refused: %v", what, err)
				}
				if err != nil && (strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), keyID)) {
					t.Fatalf("%s: the error carries the credentials: %v", what, err)
				}
			}
			check("Read", err)
			if err == nil && rr.Exists != c.exists {
				t.Fatalf("Read: %+v, want Exists %v", rr, c.exists)
			}

			// A Create meets the same answer and writes nothing.
			if c.code == "NoSuchBucket" {
				return
			}
			resp, err := p.Create(ctx, &sdk.CreateRequest{Type: typeBucket, Name: "storage", Config: cfg, IdempotencyKey: "op_1:storage"})
			if err == nil && resp != nil && resp.Diagnostics.HasError() {
				err = resp.Diagnostics.Err()
			}
			switch {
			case c.credentials:
				check("Create", err)
			case !sdk.IsConflict(err):
				// Valid credentials that may not look into the bucket: its
				// name is taken, by someone bulwark cannot see.
				t.Fatalf("Create over %s: %v, want a conflict", c.code, err)
			}
			for _, r := range srv.requests() {
				if strings.Contains(r, markerKey) || strings.Contains(r, seedKey) {
					t.Fatalf("the Create wrote into a bucket it could not see: %v", srv.requests())
				}
			}
		})
	}

	t.Run("shared credentials file", func(t *testing.T) {
		t.Setenv("AWS_ACCESS_KEY_ID", "")
		t.Setenv("AWS_SECRET_ACCESS_KEY", "")
		os.Unsetenv("AWS_ACCESS_KEY_ID")
		os.Unsetenv("AWS_SECRET_ACCESS_KEY")
		file := filepath.Join(t.TempDir(), "credentials")
		if err := os.WriteFile(file, []byte("[deploy]\naws_access_key_id = "+keyID+"\naws_secret_access_key = "+secret+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		t.Setenv("AWS_SHARED_CREDENTIALS_FILE", file)
		ts := httptest.NewServer(&realS3{status: http.StatusForbidden, code: "SignatureDoesNotMatch"})
		t.Cleanup(ts.Close)
		p := configured(t, t.TempDir(), sdk.Attributes{"endpoint": ts.URL, "profile": "deploy", "timeout_seconds": 10.0})
		_, err := p.Read(ctx, &sdk.ReadRequest{Type: typeBucket, Name: "storage", ID: "some-bucket"})
		want := `the credentials from the shared credentials file ` + file + ` (profile "deploy")`
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("Read: %v, want it to say %q", err, want)
		}
	})

	t.Run("dynamodb", func(t *testing.T) {
		for _, code := range []string{"UnrecognizedClientException", "InvalidSignatureException"} {
			ts := httptest.NewServer(realDynamoDB(code))
			t.Cleanup(ts.Close)
			p := configured(t, t.TempDir(), sdk.Attributes{"endpoints": map[string]any{"dynamodb": ts.URL}, "timeout_seconds": 10.0})
			_, err := p.Read(ctx, &sdk.ReadRequest{Type: typeTable, Name: "database", Config: sdk.Attributes{"table": "t-1", "hash_key": "id"}})
			var ce *CredentialsError
			if !errors.As(err, &ce) || ce.Service != "DynamoDB" || ce.Code != code {
				t.Fatalf("Read over %s: %v (%T)", code, err, err)
			}
		}
	})
}
