package sdk

import (
	"bufio"

	"encoding/base64"

	"errors"
	"fmt"
	"io"

	"os"

	"strings"
)

// The mutual TLS between a host and its plugin.
//
// go-plugin's AutoMTLS makes both sides generate an ECDSA P-521 key and a
// self-signed certificate at every start, and the TLS handshake then signs
// and verifies with them: most of the CPU a command that starts one plugin
// spends, in the host and as much in the plugin (P-521 has no assembly in
// Go). This file does the same exchange with ECDSA P-256 keys, an order of
// magnitude cheaper. (Ed25519, measured too, is a little faster in a
// process that makes many handshakes but slower in one that makes a single
// one, as a plugin process does: its base point table is computed at first
// use, where P-256's is built into the binary. The figures are in bulwark's
// bench/history.md.) It goes over the very channels AutoMTLS uses, so
// either side still works with the other's go-plugin AutoMTLS:
//
//   - the host generates its key and certificate, passes the certificate
//     (public) to the plugin in PLUGIN_CLIENT_CERT, and dials with a TLS
//     config that trusts nothing but the certificate the plugin announces;
//   - the plugin (Serve) generates its own key and certificate, trusts only
//     the host's certificate from PLUGIN_CLIENT_CERT (its client must
//     present it: tls.RequireAndVerifyClientCert), and announces its
//     certificate in the 6th field of go-plugin's handshake line, on its
//     stdout, which only the host that started it reads.
//
// Each key is made fresh by the process that uses it, lives only in its
// memory and dies with it: no private key is ever written to disk or passed
// to another process. In particular the host does not make the plugin's key
// and hand it over in the environment (or an inherited descriptor), which
// would have let the host pick the faster algorithm alone: the plugin's
// environment is inherited by every process it starts (the aws SDK's
// credential_process, a shell a provider runs), and a plugin built on an
// older sdk would not even know to remove it.
//
// go-plugin's server announces a certificate only when it generated it
// itself (AutoMTLS); with a TLSProvider of its own it announces nothing.
// Serve therefore passes its own TLS config as the TLSProvider and writes
// its certificate into the handshake line on the way out: go-plugin prints
// that line to os.Stdout, which Serve points at a pipe for the one line
// (see announceCert). The host side, in go-plugin's client, loads an
// announced certificate into the TLS config's RootCAs whether or not
// AutoMTLS is on.
//
// Compatibility, both ways:
//   - a host on plain AutoMTLS (an older bulwark) sends its P-521
//     certificate in PLUGIN_CLIENT_CERT and loads the P-256 one Serve
//     announces; Go's TLS verifies either kind;
//   - a plugin on plain AutoMTLS (an older sdk) receives the host's P-256
//     certificate, makes and announces its P-521 one, which the host then
//     trusts; it costs that plugin what it always did.

// withCert returns go-plugin's handshake line (without its newline) with
// der in its 6th field, where go-plugin's client looks for the server's
// certificate: CORE|APP|NETWORK|ADDR|PROTOCOL|CERT[|MUX]. A line that is no
// handshake line, or already names a certificate, is returned unchanged.
func withCert(line string, der []byte) string {
	parts := strings.Split(line, "|")
	if len(parts) < 6 || parts[5] != "" {
		return line
	}
	parts[5] = base64.RawStdEncoding.EncodeToString(der)
	return strings.Join(parts, "|")
}

// announceCert makes the first line written to os.Stdout, go-plugin's
// handshake line, reach the real stdout with der in it (see withCert).
// os.Stdout points at a pipe until that line has gone through; go-plugin
// itself then points os.Stdout at its own stdio stream, so nothing else is
// written to the pipe. Call the returned function when plugin.Serve
// returns: it puts os.Stdout back if go-plugin did not replace it (it
// returned before its handshake) and waits for what the pipe held to be
// forwarded. Only the goroutine that calls plugin.Serve may call this and
// its result: they set os.Stdout, as go-plugin does.
func announceCert(der []byte) (func(), error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("plugin handshake: %w", err)
	}
	stdout := os.Stdout
	os.Stdout = w
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer r.Close()
		line, err := bufio.NewReader(r).ReadString('\n')
		if err == nil {
			line = withCert(strings.TrimSuffix(line, "\n"), der) + "\n"
		} else if !errors.Is(err, io.EOF) {
			return
		}
		// The handshake is on its way: go-plugin writes nothing more here.
		// (Closing the write end while go-plugin Syncs it only makes that
		// Sync fail, which it ignores.)
		w.Close()
		io.WriteString(stdout, line)
		stdout.Sync()
	}()
	return func() {
		if os.Stdout == w {
			os.Stdout = stdout
		}
		w.Close()
		<-done
	}, nil
}
