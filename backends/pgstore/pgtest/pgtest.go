// Package pgtest gives tests a PostgreSQL server: the one
// $BULWARK_TEST_POSTGRES_URL names (CI starts one: see .ci/run), or else a
// throwaway server it starts itself from the installed PostgreSQL (initdb,
// pg_ctl), data in a temporary folder, listening on 127.0.0.1 only, run as
// the postgres user when the tests run as root (the server refuses root).
//
// Without a server and without PostgreSQL installed, the tests that need one
// skip, saying how to get one; in CI (CI=true) they fail instead, so a CI
// that lost its database cannot pass by skipping.
//
// Each test gets a schema of its own (URL appends ?schema=…), dropped when
// the test ends, so tests share one server without seeing each other.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvURL names the server tests use when it is set.
const EnvURL = "BULWARK_TEST_POSTGRES_URL"

// envSkip carries, from Main to the tests, why there is no server.
const envSkip = "BULWARK_TEST_POSTGRES_UNAVAILABLE"

// Main runs the tests of a package with a server: $BULWARK_TEST_POSTGRES_URL
// when set, else one it starts and stops around m.Run. Use it from TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
//
// The URL reaches the tests (and the processes they start) through
// $BULWARK_TEST_POSTGRES_URL.
func Main(m *testing.M) int {
	if os.Getenv(EnvURL) != "" {
		return m.Run()
	}
	srv, err := Start()
	if err != nil {
		os.Setenv(envSkip, err.Error())
		return m.Run()
	}
	defer srv.Stop()
	os.Setenv(EnvURL, srv.URL)
	return m.Run()
}

// URL returns a URL of the test server for t alone: its own schema, dropped
// when t ends. Without a server, t skips (fails when $CI is true).
func URL(t testing.TB) string {
	t.Helper()
	base := os.Getenv(EnvURL)
	if base == "" {
		why := os.Getenv(envSkip)
		if why == "" {
			why = "no PostgreSQL server for the tests (the package's TestMain does not call pgtest.Main)"
		}
		unavailable(t, why)
	}
	schema := Schema()
	u, err := WithSchema(base, schema)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := DropSchema(base, schema); err != nil {
			t.Logf("drop schema %s: %v", schema, err)
		}
	})
	return u
}

// DropSchema drops schema (and all it holds) on the server base names.
func DropSchema(base, schema string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	u, err := url.Parse(base)
	if err != nil {
		return fmt.Errorf("pgtest: the URL does not parse")
	}
	q := u.Query()
	q.Del("schema")
	u.RawQuery = q.Encode()
	conn, err := pgx.Connect(ctx, u.String())
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
	return err
}

// Exec runs sql on the server u names (a bulwark URL: its ?schema=NAME is
// bulwark's, and {{s}} in sql is that schema, quoted), for tests that damage
// what bulwark stored.
func Exec(u, sql string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pu, err := url.Parse(u)
	if err != nil {
		return fmt.Errorf("pgtest: the URL does not parse")
	}
	q := pu.Query()
	schema := q.Get("schema")
	if schema == "" {
		schema = "bulwark"
	}
	q.Del("schema")
	pu.RawQuery = q.Encode()
	conn, err := pgx.Connect(ctx, pu.String())
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, strings.ReplaceAll(sql, "{{s}}", pgx.Identifier{schema}.Sanitize()))
	return err
}

// Base returns the URL of a server for t and the tests after it in this
// process: $BULWARK_TEST_POSTGRES_URL when set, else a throwaway server
// started now and stopped when t ends. For tests that cannot use Main (a
// TestMain that is testscript's). Without a server, t skips (fails when $CI
// is true). Give each user of it a schema of its own (WithSchema).
func Base(t testing.TB) string {
	t.Helper()
	if u := os.Getenv(EnvURL); u != "" {
		return u
	}
	srv, err := Start()
	if err != nil {
		unavailable(t, err.Error())
	}
	t.Cleanup(srv.Stop)
	return srv.URL
}

func unavailable(t testing.TB, why string) {
	t.Helper()
	msg := why + ": install PostgreSQL (apt-get install -y postgresql) or set " + EnvURL + "=postgres://USER@127.0.0.1:PORT/DB?sslmode=disable"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg + " (CI=true: a CI without its database fails rather than skips)")
	}
	t.Skip(msg)
}

// Schema returns a fresh schema name.
func Schema() string { return "t_" + randomHex(6) }

// WithSchema returns base with ?schema=schema set.
func WithSchema(base, schema string) (string, error) {
	u, err := url.Parse(base)
	if err != nil {
		return "", fmt.Errorf("pgtest: %s does not parse", EnvURL)
	}
	q := u.Query()
	q.Set("schema", schema)
	u.RawQuery = q.Encode()
	return u.String(), nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// Server is a throwaway PostgreSQL server.
type Server struct {
	URL  string
	dir  string
	bin  string
	user string // the user it runs as ("" for the current one)
}

// BinDir finds the installed PostgreSQL's server binaries:
// $BULWARK_TEST_POSTGRES_BIN, the newest /usr/lib/postgresql/*/bin, or
// initdb on PATH.
func BinDir() (string, error) {
	if d := os.Getenv("BULWARK_TEST_POSTGRES_BIN"); d != "" {
		return d, nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p), nil
	}
	return "", errors.New("PostgreSQL is not installed (no initdb in /usr/lib/postgresql/*/bin or on PATH)")
}

func version(dir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(dir)))
	return n
}

// Start starts a server: a new cluster in a temporary folder, trust
// authentication for user bulwark, listening on 127.0.0.1 and a socket in
// that folder only. As root, the folder is given to the postgres user and
// the server runs as it.
func Start() (*Server, error) {
	bin, err := BinDir()
	if err != nil {
		return nil, err
	}
	s := &Server{bin: bin}
	if os.Geteuid() == 0 {
		s.user = "postgres"
	}
	s.dir, err = os.MkdirTemp("", "bulwark-pg-")
	if err != nil {
		return nil, err
	}
	if s.user != "" {
		u, err := user.Lookup(s.user)
		if err != nil {
			os.RemoveAll(s.dir)
			return nil, fmt.Errorf("running as root, the server needs the %s user to run as: %w", s.user, err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(s.dir, uid, gid); err != nil {
			os.RemoveAll(s.dir)
			return nil, err
		}
	}
	port, err := freePort()
	if err != nil {
		os.RemoveAll(s.dir)
		return nil, err
	}
	data := filepath.Join(s.dir, "data")
	if out, err := s.run("initdb", "-D", data, "-A", "trust", "-U", "bulwark", "-E", "UTF8", "--no-locale", "--no-sync"); err != nil {
		os.RemoveAll(s.dir)
		return nil, fmt.Errorf("initdb: %w\n%s", err, out)
	}
	// fsync off: the tests crash clients, never the server.
	opts := fmt.Sprintf("-c listen_addresses=127.0.0.1 -p %d -k %s -c fsync=off -c max_connections=200", port, s.dir)
	if out, err := s.run("pg_ctl", "-D", data, "-l", filepath.Join(s.dir, "log"), "-o", opts, "-w", "-t", "60", "start"); err != nil {
		log, _ := os.ReadFile(filepath.Join(s.dir, "log"))
		os.RemoveAll(s.dir)
		return nil, fmt.Errorf("pg_ctl start: %w\n%s\n%s", err, out, log)
	}
	s.URL = fmt.Sprintf("postgres://bulwark@127.0.0.1:%d/postgres?sslmode=disable", port)
	return s, nil
}

func (s *Server) run(name string, args ...string) ([]byte, error) {
	path := filepath.Join(s.bin, name)
	var cmd *exec.Cmd
	if s.user != "" {
		cmd = exec.Command("runuser", append([]string{"-u", s.user, "--", path}, args...)...)
	} else {
		cmd = exec.Command(path, args...)
	}
	cmd.Dir = s.dir
	out, err := cmd.CombinedOutput()
	return out, err
}

// Stop stops the server at once and removes its folder.
func (s *Server) Stop() {
	s.run("pg_ctl", "-D", filepath.Join(s.dir, "data"), "-m", "immediate", "-w", "stop")
	os.RemoveAll(s.dir)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	_, port, _ := strings.Cut(l.Addr().String(), ":")
	return strconv.Atoi(port)
}
