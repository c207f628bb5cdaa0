package awskms

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"

	"github.com/bulwark-iac/bulwark/core/secrets"
)

// motoKMS starts moto_server on a free loopback port (skipping when it is
// not installed) and points the SDK's standard chain at it; it returns the
// endpoint.
func motoKMS(t *testing.T) string {
	t.Helper()
	exe, err := exec.LookPath("moto_server")
	if err != nil {
		t.Skip("moto_server is not on PATH (pip install 'moto[server]'): the KMS provider is tested against it")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command(exe, "-H", "127.0.0.1", "-p", fmt.Sprint(port))
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	endpoint := fmt.Sprintf("http://127.0.0.1:%d", port)
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(endpoint + "/moto-api/")
		if err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("moto_server did not answer on %s within 60s: %v", endpoint, err)
		}
		time.Sleep(100 * time.Millisecond) // polling with a deadline
	}
	t.Setenv("AWS_ENDPOINT_URL_KMS", endpoint)
	t.Setenv("AWS_ENDPOINT_URL", "")
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_SESSION_TOKEN", "")
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_CONFIG_FILE", os.DevNull)
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", os.DevNull)
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	return endpoint
}

func createKey(t *testing.T, ctx context.Context, endpoint string) string {
	t.Helper()
	api := kms.New(kms.Options{Region: "us-east-1", BaseEndpoint: aws.String(endpoint),
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "test", SecretAccessKey: "test"}, nil
		})})
	out, err := api.CreateKey(ctx, &kms.CreateKeyInput{Description: aws.String("bulwark test")})
	if err != nil {
		t.Fatal(err)
	}
	return *out.KeyMetadata.Arn
}

func TestKMSProviderAgainstMoto(t *testing.T) {
	endpoint := motoKMS(t)
	ctx := context.Background()
	arn := createKey(t, ctx, endpoint)
	other := createKey(t, ctx, endpoint)

	provider := secrets.KMSScheme + arn
	src := &secrets.Source{KMS: Open}
	cfg, key, err := src.NewConfig(ctx, provider, "")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Provider != provider || cfg.WrappedKey == "" || cfg.KeyID != key.ID() {
		t.Fatalf("config %+v", cfg)
	}
	if strings.Contains(cfg.WrappedKey, key.Encode()) {
		t.Fatal("the state would hold the data key in clear")
	}
	sealed, err := key.Box("stack s").SealValue("t0ken")
	if err != nil {
		t.Fatal(err)
	}
	// Another machine with access to the KMS key opens it.
	got, err := (&secrets.Source{KMS: Open}).Resolve(ctx, cfg, false)
	if err != nil {
		t.Fatal(err)
	}
	if v, err := got.Box("stack s").OpenValue(sealed); err != nil || v != "t0ken" {
		t.Fatalf("open: %v %v", v, err)
	}
	// A provider naming another KMS key cannot unwrap it: refused, naming
	// the provider.
	wrong := cfg.Clone()
	wrong.Provider = secrets.KMSScheme + other
	_, err = (&secrets.Source{KMS: Open}).Resolve(ctx, wrong, false)
	var wk *secrets.WrongKeyError
	if !errors.As(err, &wk) || wk.Provider != wrong.Provider {
		t.Fatalf("another KMS key: %v", err)
	}
	// The region may be given in the provider.
	if _, err := Open(ctx, secrets.KMSScheme+arn+"?region=us-east-1"); err != nil {
		t.Fatal(err)
	}
}

func TestParse(t *testing.T) {
	id, region, err := Parse("awskms://alias/team?region=eu-west-1")
	if err != nil || id != "alias/team" || region != "eu-west-1" {
		t.Fatalf("%q %q %v", id, region, err)
	}
	for _, bad := range []string{"awskms://", "awskms://k?endpoint=x", "gcpkms://k"} {
		if _, _, err := Parse(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
