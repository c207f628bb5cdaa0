// Command fakes3 serves an in-memory S3 emulator (gofakes3 on its s3mem
// backend) for the aws provider's integration tests. It listens on loopback
// only, never creates a bucket on first use (so a missing bucket is NoSuchBucket,
// as on AWS), and writes the URL it serves to -addr-file once it is listening,
// so a script can start it on a free port without racing for one.
//
//	fakes3 -listen 127.0.0.1:0 -addr-file /tmp/s3.addr
//
// It stops on SIGINT or SIGTERM. Everything it holds is lost then.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "loopback address to listen on (port 0: any free port)")
	addrFile := flag.String("addr-file", "", "file to write the served URL (http://HOST:PORT) to once listening")
	flag.Parse()
	log.SetFlags(log.LstdFlags | log.Lmicroseconds)
	log.SetPrefix("fakes3: ")
	if err := run(*listen, *addrFile); err != nil {
		log.Fatal(err)
	}
}

func run(listen, addrFile string) error {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return fmt.Errorf("-listen %q: %w", listen, err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("-listen %q: only a loopback IP address is allowed", listen)
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	url := "http://" + ln.Addr().String()
	if addrFile != "" {
		if err := writeAtomic(addrFile, url+"\n"); err != nil {
			ln.Close()
			return err
		}
	}
	faker := gofakes3.New(s3mem.New(), gofakes3.WithAutoBucket(false))
	srv := &http.Server{Handler: faker.Server(), ReadHeaderTimeout: 10 * time.Second}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	log.Printf("serving %s", url)
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	log.Printf("stopped")
	return nil
}

// writeAtomic writes data to name through a temporary file and a rename, so
// a reader polling for the file never sees it half written.
func writeAtomic(name, data string) error {
	tmp, err := os.CreateTemp(filepath.Dir(name), ".addr-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.WriteString(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), name)
}
