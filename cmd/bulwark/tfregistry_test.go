package main

import (
	"os"
	"strings"
	"sync"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/bulwark-iac/bulwark/core/tfinstall"
	"github.com/bulwark-iac/bulwark/core/tfinstall/registrytest"
)

// tfRegistries are the provider registries the scripts started, by the
// script's work folder.
type tfRegistries struct {
	mu sync.Mutex
	m  map[string]*registrytest.Server
}

// tf-registry NAMESPACE/TYPE VERSION... starts a registry speaking
// Terraform's provider registry protocol on loopback, offering those
// versions for this platform and plan9_arm (each package's executable a
// shell script printing its type, version and platform), stopped when the
// script ends. It sets $REGISTRY (localhost:PORT), $PLATFORM (OS_ARCH),
// SSL_CERT_FILE (the server's certificate, which bulwark then trusts), and
// writes the registry's signing key to registry-key.asc and a key that
// signed nothing to other-key.asc.
func (r *tfRegistries) start(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: tf-registry NAMESPACE/TYPE VERSION...")
	}
	ns, typ, ok := strings.Cut(args[0], "/")
	if !ok {
		ts.Fatalf("usage: tf-registry NAMESPACE/TYPE VERSION...")
	}
	srv, err := registrytest.New(registrytest.Provider{
		Namespace: ns, Type: typ, Versions: args[1:],
		Platforms: []tfinstall.Platform{tfinstall.CurrentPlatform(), {OS: "plan9", Arch: "arm"}},
	})
	ts.Check(err)
	ts.Defer(func() {
		srv.Close()
		r.mu.Lock()
		delete(r.m, ts.Getenv("WORK"))
		r.mu.Unlock()
	})
	r.mu.Lock()
	if r.m == nil {
		r.m = map[string]*registrytest.Server{}
	}
	r.m[ts.Getenv("WORK")] = srv
	r.mu.Unlock()
	other, err := registrytest.NewKey("signed nothing")
	ts.Check(err)
	otherPub, err := registrytest.ArmoredPublicKey(other)
	ts.Check(err)
	ts.Check(os.WriteFile(ts.MkAbs("registry-ca.pem"), srv.CertPEM, 0o644))
	ts.Check(os.WriteFile(ts.MkAbs("registry-key.asc"), []byte(srv.PublicKey), 0o644))
	ts.Check(os.WriteFile(ts.MkAbs("other-key.asc"), []byte(otherPub), 0o644))
	_, port, _ := strings.Cut(srv.Host, ":")
	ts.Setenv("REGISTRY", "localhost:"+port)
	ts.Setenv("PLATFORM", tfinstall.CurrentPlatform().String())
	ts.Setenv("SSL_CERT_FILE", ts.MkAbs("registry-ca.pem"))
}

// tf-registry-fault [FAULT...] makes the script's registry misbehave from
// now on: wrong-shasum, corrupt-archive, foreign-signature, no-signature,
// hide-keys; none: behave.
func (r *tfRegistries) fault(ts *testscript.TestScript, neg bool, args []string) {
	r.mu.Lock()
	srv := r.m[ts.Getenv("WORK")]
	r.mu.Unlock()
	if neg || srv == nil {
		ts.Fatalf("usage: tf-registry-fault [FAULT...], after tf-registry")
	}
	var f registrytest.Fault
	for _, a := range args {
		switch a {
		case "wrong-shasum":
			f.WrongShasum = true
		case "corrupt-archive":
			f.CorruptArchive = true
		case "foreign-signature":
			f.ForeignSignature = true
		case "no-signature":
			f.NoSignature = true
		case "hide-keys":
			f.HideKeys = true
		default:
			ts.Fatalf("unknown fault %q", a)
		}
	}
	srv.SetFault(f)
}

// tf-hash DIR VAR sets VAR to the h1: hash of the package folder DIR, as
// Terraform computes it.
func cmdTFHash(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: tf-hash DIR VAR")
	}
	h, err := tfinstall.HashDir(ts.MkAbs(args[0]))
	ts.Check(err)
	ts.Setenv(args[1], string(h))
}
