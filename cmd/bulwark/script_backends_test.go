package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/rogpeppe/go-internal/testscript"

	"github.com/bulwark-iac/bulwark/backends"
	"github.com/bulwark-iac/bulwark/backends/pgstore/pgtest"
	"github.com/bulwark-iac/bulwark/core/pluginhost"
	"github.com/bulwark-iac/bulwark/core/secrets"
	"github.com/bulwark-iac/bulwark/core/state"
	"github.com/bulwark-iac/bulwark/core/storage"
)

// The end-to-end scripts of testdata/script run on each state backend, so
// one script checks all three: TestScripts on files, TestScriptsOnPostgres and
// TestScriptsOnS3 with $BULWARK_STATE set, for each script, to a place of
// its own (a PostgreSQL schema, an S3 prefix). The last two run only the
// scripts marked "# backends: all", those whose behaviour depends on the
// backend (script_select_test.go, which fails when one lacks the mark). The providers' data folders
// stay under .bulwark on every backend (they are this machine's), so a
// script that checks them checks them everywhere.
//
// A line that inspects the file backend's own files (.bulwark/STACK's
// state.json, journal.jsonl, lock, backups) runs under [backend:file];
// where what it checks matters on every backend, the script checks it also
// through the CLI's view (state show, status --json, history --json,
// doctor --json). A script that is about the file backend alone says so
// at its top and skips elsewhere: [!backend:file] skip '…'.

// scriptBackend is one backend the scripts run on.
type scriptBackend struct {
	name string // file, postgres or s3: the condition [backend:NAME]
	// setup gives one script its place on the backend (its environment).
	setup func(env *testscript.Env) error
}

// fileScripts: the file backend under $WORK/.bulwark, bulwark's default.
var fileScripts = scriptBackend{name: "file", setup: func(*testscript.Env) error { return nil }}

// postgresScripts runs each script in a schema of its own on the server at
// base, as $POSTGRES, and as $BULWARK_STATE when state is set. The schema
// is dropped when the script ends.
func postgresScripts(base string, state bool) scriptBackend {
	return scriptBackend{name: "postgres", setup: func(env *testscript.Env) error {
		schema := pgtest.Schema()
		u, err := pgtest.WithSchema(base, schema)
		if err != nil {
			return err
		}
		env.Defer(func() { _ = pgtest.DropSchema(base, schema) })
		env.Setenv("POSTGRES", u)
		if state {
			env.Setenv(envState, u)
		}
		return nil
	}}
}

// s3Scripts runs each script on a prefix of its own of the bucket
// team-state at endpoint, as $BULWARK_STATE ($S3 and $S3_ENDPOINT too, for
// the s3-* commands).
func s3Scripts(endpoint string) scriptBackend {
	return scriptBackend{name: "s3", setup: func(env *testscript.Env) error {
		var b [6]byte
		if _, err := rand.Read(b[:]); err != nil {
			return err
		}
		u := "s3://team-state/script-" + hex.EncodeToString(b[:]) + "?region=us-east-1&endpoint=" + url.QueryEscape(endpoint)
		env.Setenv("S3_ENDPOINT", endpoint)
		env.Setenv("S3", u)
		env.Setenv(envState, u)
		return nil
	}}
}

func TestScripts(t *testing.T) { runScripts(t, "testdata/script", fileScripts) }

// TestScriptsOnPostgres runs the same scripts on PostgreSQL
// ($BULWARK_TEST_POSTGRES_URL, else a server started for this test; without
// one it skips, saying how to get one, and fails when CI=true).
func TestScriptsOnPostgres(t *testing.T) {
	runScripts(t, "testdata/script", postgresScripts(pgBase(t), true))
}

// TestScriptsOnS3 runs the same scripts on S3: the emulator
// .ci/emulators.sh started ($BULWARK_TEST_S3_ENDPOINT), else one started for
// this test (gofakes3, built from plugins/aws/internal/fakes3), so it never
// skips.
func TestScriptsOnS3(t *testing.T) {
	s3TestEnv(t)
	runScripts(t, "testdata/script", s3Scripts(crashS3Server(t)))
}

// scriptName is the name of the script env runs.
func scriptName(env *testscript.Env) string {
	name := env.T().(interface{ Name() string }).Name()
	return name[strings.LastIndexByte(name, '/')+1:]
}

// runScripts runs the scripts of dir on be.
func runScripts(t *testing.T, dir string, be scriptBackend) {
	plugins := buildPlugins(t)
	builtBulwark(t)
	wasmCache := graphvizCache(t)
	_, file, _, _ := runtime.Caller(0)
	examples := filepath.Join(filepath.Dir(file), "..", "..", "examples")
	var fakes3, tfMirror string
	if dir == "testdata/s3" {
		fakes3 = buildFakeS3(t)
	}
	if dir == "testdata/terraform" {
		tfMirror = buildTerraformMirror(t)
	}
	s3Server := func(ts *testscript.TestScript, neg bool, args []string) {
		exe := fakes3
		if exe == "" && os.Getenv("BULWARK_TEST_S3_ENDPOINT") == "" {
			// Built on first use outside testdata/s3.
			var err error
			exe, err = fakeS3()
			ts.Check(err)
		}
		cmdS3Server(ts, neg, args, exe)
	}
	held := &heldLocks{m: map[heldKey]func(){}}
	registries := &tfRegistries{}
	// testdata/script's on PostgreSQL and S3: only those marked "# backends:
	// all" (script_select_test.go says which and why). The folders of
	// scripts written for one backend (testdata/s3, testdata/postgres) run
	// whole.
	scriptDir, files := dir, []string(nil)
	if be.name != fileScripts.name && dir == "testdata/script" {
		scriptDir, files = "", markedScripts(t, dir)
	}
	testscript.Run(t, testscript.Params{
		Dir:                 scriptDir,
		Files:               files,
		RequireUniqueNames:  true,
		RequireExplicitExec: true,
		// go test -run TestScripts/NAME -update rewrites the golden files
		// a failing cmp compares with, in the script's archive.
		UpdateScripts: *updateGolden,
		Setup: func(env *testscript.Env) error {
			scriptBulwark(t, env, be.name)
			env.Setenv("BULWARK_PLUGIN_DIR", plugins)
			env.Setenv("EXAMPLES", examples)
			// The folder testscript put this binary's commands in, among them
			// bulwark-provider-strict (and bulwark, which is no plugin).
			strict, err := exec.LookPath(pluginhost.Prefix + "strict")
			if err != nil {
				return err
			}
			env.Setenv("TEST_PLUGIN_DIR", filepath.Dir(strict))
			// This binary, when a script runs it (the bulwark of raceScripts,
			// the strict provider), is race-built under make test, and such
			// a binary sleeps a second on exit (GORACE's atexit_sleep_ms)
			// unless told otherwise: a second of nothing per command. A race
			// is reported when it happens, and the binary exits 66 once it
			// has reported one, sleep or not (sdk/providertest does the
			// same). A GORACE of the test's own environment is passed on
			// as it is.
			if v, ok := os.LookupEnv("GORACE"); ok {
				env.Setenv("GORACE", v)
			} else {
				env.Setenv("GORACE", "atexit_sleep_ms=0")
			}
			// graphviz's module compiled once (script_wasmcache_test.go).
			env.Setenv("XDG_CACHE_HOME", wasmCache)
			env.Setenv(secrets.EnvKey, testSecretsKey)
			// Were a script to unset the key, the default key file would go
			// here, never into the user's own config folder.
			env.Setenv("XDG_CONFIG_HOME", filepath.Join(env.WorkDir, ".config"))
			// The SDK's standard chain, for s3:// (the emulators check no
			// signature), and no instance metadata lookup beyond loopback.
			env.Setenv("AWS_ACCESS_KEY_ID", "test")
			env.Setenv("AWS_SECRET_ACCESS_KEY", "test")
			env.Setenv("AWS_REGION", "us-east-1")
			env.Setenv("AWS_EC2_METADATA_DISABLED", "true")
			env.Setenv("BACKEND", be.name)
			env.Setenv("TF_MIRROR", tfMirror)
			return be.setup(env)
		},
		Condition: func(cond string) (bool, error) {
			if name, ok := strings.CutPrefix(cond, "backend:"); ok {
				switch name {
				case "file", "postgres", "s3":
					return name == be.name, nil
				}
				return false, fmt.Errorf("unknown backend %q in [%s] (want file, postgres or s3)", name, cond)
			}
			if cond == "postgres" {
				return pgAvailable()
			}
			if cond == "s3-state" {
				return s3StateWired(), nil
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"mode":               cmdMode,
			"events-order":       cmdEventsOrder,
			"no-plugin-left":     cmdNoPluginLeft,
			"json-has":           cmdJSONHas,
			"exits":              cmdExits,
			"wait-lock":          cmdWaitLock,
			"hold-lock":          held.hold,
			"release-lock":       held.release,
			"state-protection":   cmdStateProtection,
			"state-hand-edit":    cmdStateHandEdit,
			"json-env":           cmdJSONEnv,
			"absent":             cmdAbsent,
			"json-mask":          cmdJSONMask,
			"wait-match":         cmdWaitMatch,
			"pg-hold-lock":       cmdPgHoldLock,
			"pg-wait-lock":       cmdPgWaitLock,
			"pg-cut-lock":        cmdPgCutLock,
			"pg-exec":            cmdPgExec,
			"pg-schema":          cmdPgSchema,
			"s3-server":          s3Server,
			"s3-lock-elsewhere":  cmdS3LockElsewhere,
			"s3-wait-lease":      cmdS3WaitLease,
			"s3-pause":           cmdS3Pause,
			"s3-continue":        cmdS3Continue,
			"s3-hold-lock":       held.s3Hold,
			"s3-release-lock":    held.s3Release,
			"backend-dump":       cmdBackendDump,
			"sealed-in":          cmdSealedIn,
			"journal-has":        cmdJournalHas,
			"match-env":          cmdMatchEnv,
			"tf-registry":        registries.start,
			"tf-registry-fault":  registries.fault,
			"tf-hash":            cmdTFHash,
			"mock-world-set-key": cmdMockWorldSetKey,
		},
	})
}

// scriptState is the URL of the backend the script's bulwark uses:
// $BULWARK_STATE, else the file backend under $WORK/.bulwark.
func scriptState(ts *testscript.TestScript) string {
	if u := ts.Getenv(envState); u != "" {
		return u
	}
	return "file://" + filepath.ToSlash(ts.MkAbs(".bulwark"))
}

// openScriptStack opens STACK on the script's backend, with the tests' key.
func openScriptStack(ts *testscript.TestScript, stack string) storage.Backend {
	key, err := secrets.ParseKey(testSecretsKey, "the tests' key")
	ts.Check(err)
	b, err := backends.Open(context.Background(), scriptState(ts), storage.Options{Stack: stack, Sealing: state.Sealing{Sealer: key.Box(secrets.StackContext(stack))}})
	ts.Check(err)
	return b
}

// wait-lock STACK polls, with a deadline, until a live process holds
// STACK's lock on the script's backend.
func cmdWaitLock(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: wait-lock STACK")
	}
	b := openScriptStack(ts, args[0])
	defer b.Close()
	ctx := context.Background()
	deadline := time.Now().Add(20 * time.Second)
	for {
		h, err := b.Holder(ctx)
		if err == nil && h != nil && h.PID != 0 {
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("nobody took the lock of %s within 20s (%v)", args[0], err)
		}
		time.Sleep(10 * time.Millisecond) // polling interval, bounded by the deadline
	}
}

// heldLocks are the locks hold-lock (and s3-hold-lock) took, by script
// and stack, for release-lock to give back.
type heldLocks struct {
	mu sync.Mutex
	m  map[heldKey]func()
}

type heldKey struct {
	ts    *testscript.TestScript
	stack string
}

// put records what releases ts's lock of stack, and releases it when the
// script ends unless release-lock did.
func (l *heldLocks) put(ts *testscript.TestScript, stack string, release func()) {
	l.mu.Lock()
	l.m[heldKey{ts, stack}] = release
	l.mu.Unlock()
	ts.Defer(func() { l.take(ts, stack)() })
}

// take removes and returns what releases ts's lock of stack (a no-op when
// none is held).
func (l *heldLocks) take(ts *testscript.TestScript, stack string) func() {
	l.mu.Lock()
	defer l.mu.Unlock()
	f := l.m[heldKey{ts, stack}]
	delete(l.m, heldKey{ts, stack})
	if f == nil {
		return func() {}
	}
	return f
}

// hold-lock STACK OP takes STACK's lock on the script's backend as
// operation OP (this test process holds it, on host testhost) until
// release-lock STACK or the script's end.
func (l *heldLocks) hold(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: hold-lock STACK OP")
	}
	ctx := context.Background()
	if !backends.Remote(scriptState(ts)) {
		ts.Check(os.MkdirAll(ts.MkAbs(".bulwark"), 0o700))
	}
	b := openScriptStack(ts, args[0])
	w, err := b.Lock(ctx, storage.Holder{Op: args[1], PID: os.Getpid(), Host: "testhost", User: ts.Getenv(storage.UserEnv), Since: time.Now()})
	ts.Check(err)
	l.put(ts, args[0], func() {
		w.Release(ctx)
		b.Close()
	})
}

// release-lock STACK gives back the lock hold-lock took.
func (l *heldLocks) release(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: release-lock STACK")
	}
	l.take(ts, args[0])()
}

// backend-dump FILE writes into FILE every byte the script's backend
// stores, as stored (sealed values sealed, nothing decoded), each object,
// row or file after a line naming it: on files, everything under .bulwark
// but the providers' data folders (the simulated cloud lives there); on
// PostgreSQL, every row of every table of the script's schema; on S3, every
// object under the script's prefix. What `absent` checks, so that "no
// secret in clear in anything bulwark writes" is checked on every backend.
func cmdBackendDump(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: backend-dump FILE")
	}
	var out bytes.Buffer
	u := scriptState(ts)
	switch backends.Scheme(u) {
	case "postgres", "postgresql":
		dumpPostgres(ts, u, &out)
	case "s3":
		dumpS3(ts, u, &out)
	default:
		root := ts.MkAbs(".bulwark")
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, p)
			if d.IsDir() && d.Name() == "providers" && strings.Count(rel, string(filepath.Separator)) == 1 {
				return filepath.SkipDir
			}
			if !d.Type().IsRegular() {
				return nil
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			fmt.Fprintf(&out, "== %s\n%s\n", rel, b)
			return nil
		})
		ts.Check(err)
	}
	ts.Check(os.WriteFile(ts.MkAbs(args[0]), out.Bytes(), 0o600))
}

func dumpPostgres(ts *testscript.TestScript, raw string, out *bytes.Buffer) {
	u, err := url.Parse(raw)
	ts.Check(err)
	q := u.Query()
	schema := q.Get("schema")
	q.Del("schema")
	u.RawQuery = q.Encode()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, u.String())
	ts.Check(err)
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT table_name FROM information_schema.tables WHERE table_schema = $1 ORDER BY table_name`, schema)
	ts.Check(err)
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	ts.Check(err)
	if len(tables) == 0 {
		ts.Fatalf("backend-dump: schema %s holds no table", schema)
	}
	for _, tbl := range tables {
		rows, err := conn.Query(ctx, `SELECT * FROM `+pgx.Identifier{schema, tbl}.Sanitize())
		ts.Check(err)
		for rows.Next() {
			vals, err := rows.Values()
			ts.Check(err)
			fmt.Fprintf(out, "== %s\n", tbl)
			for _, v := range vals {
				if b, ok := v.([]byte); ok {
					out.Write(b)
				} else {
					fmt.Fprint(out, v)
				}
				out.WriteByte('\n')
			}
		}
		ts.Check(rows.Err())
	}
}

func dumpS3(ts *testscript.TestScript, raw string, out *bytes.Buffer) {
	u, err := url.Parse(raw)
	ts.Check(err)
	endpoint := u.Query().Get("endpoint")
	prefix := strings.Trim(u.Path, "/") + "/"
	resp, err := s3Do(http.MethodGet, endpoint+"/"+u.Host+"?list-type=2&prefix="+url.QueryEscape(prefix), nil)
	ts.Check(err)
	defer resp.Body.Close()
	var list struct {
		Contents []struct {
			Key string `xml:"Key"`
		} `xml:"Contents"`
		Truncated bool `xml:"IsTruncated"`
	}
	ts.Check(xml.NewDecoder(resp.Body).Decode(&list))
	if list.Truncated {
		ts.Fatalf("backend-dump: more than one page of objects under %s", prefix)
	}
	if len(list.Contents) == 0 {
		ts.Fatalf("backend-dump: no object under %s", prefix)
	}
	for _, o := range list.Contents {
		get, err := s3Do(http.MethodGet, endpoint+"/"+u.Host+"/"+o.Key, nil)
		ts.Check(err)
		b, err := io.ReadAll(get.Body)
		get.Body.Close()
		ts.Check(err)
		if get.StatusCode != http.StatusOK {
			ts.Fatalf("backend-dump: get %s: %s", o.Key, get.Status)
		}
		fmt.Fprintf(out, "== %s\n%s\n", o.Key, b)
	}
}

// journal-has STACK REGEXP checks that a record of STACK's journal, read
// through the script's backend (each record as JSON, the form of a line of
// the file backend's journal.jsonl), matches REGEXP: for what the journal
// records and no command shows (an ack, the start of an import).
func cmdJournalHas(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: journal-has STACK REGEXP")
	}
	re, err := regexp.Compile(args[1])
	ts.Check(err)
	b := openScriptStack(ts, args[0])
	defer b.Close()
	recs, _, err := b.Journal(context.Background())
	ts.Check(err)
	found := false
	for _, r := range recs {
		line, err := json.Marshal(r)
		ts.Check(err)
		if re.Match(line) {
			found = true
			break
		}
	}
	if found == neg {
		ts.Fatalf("journal of %s: %d record(s), %s match %s", args[0], len(recs), map[bool]string{true: "one does", false: "none does"}[found], args[1])
	}
}

// match-env FILE REGEXP VAR sets VAR to the first group of REGEXP's first
// match in FILE (a value a command printed, as json-env takes one from
// JSON).
func cmdMatchEnv(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: match-env FILE REGEXP VAR")
	}
	re, err := regexp.Compile(args[1])
	ts.Check(err)
	b, err := os.ReadFile(ts.MkAbs(args[0]))
	ts.Check(err)
	m := re.FindSubmatch(b)
	if len(m) < 2 {
		ts.Fatalf("%s: no match for %s (with a group)", args[0], args[1])
	}
	ts.Setenv(args[2], string(m[1]))
}
