package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/bulwark-iac/bulwark/core/pluginhost"
	"github.com/bulwark-iac/bulwark/core/secrets"
	"github.com/bulwark-iac/bulwark/sdk"
)

// TestMain lets the scripts run `bulwark` as this test binary; the plugins
// are real executables built once by buildPlugins.
func TestMain(m *testing.M) {
	// Every bulwark these tests start (scripts, crash harness, terminal
	// tests) seals with a test key, so none creates a key file in the real
	// user config folder. A script about the key itself sets the variable
	// (empty, to use the default key file under $WORK): this TestMain runs
	// again in that bulwark process and must leave it as it is.
	if _, set := os.LookupEnv(secrets.EnvKey); !set {
		os.Setenv(secrets.EnvKey, testSecretsKey)
	}
	testscript.Main(cleanupM{m}, map[string]func(){
		"bulwark": func() { os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) },
		// A provider plugin served by this binary (strictprovider_test.go);
		// the scripts find it in $TEST_PLUGIN_DIR.
		pluginhost.Prefix + "strict": func() { sdk.Serve(strictProvider{}) },
	})
}

// cleanupM stops, once the tests ran, what they started for all of them
// (the PostgreSQL server of pgBase), and removes graphvizCache's folder.
type cleanupM struct{ m *testing.M }

func (c cleanupM) Run() int {
	defer stopPostgres()
	defer removeGraphvizCache()
	return c.m.Run()
}

// testSecretsKey is the key (base64 of 32 bytes) the tests seal with.
const testSecretsKey = "zub5eUOVMYwrpGXCD8hakPTtVxeVeeIDOj2BZLb9pqg="

var (
	pluginsOnce sync.Once
	pluginsDir  string
	pluginsErr  error
)

// buildPlugins builds every provider plugin of the repository into one
// folder shared by the scripts, or takes them from $BULWARK_TEST_BIN_DIR
// (prebuilt).
func buildPlugins(t *testing.T) string {
	pluginsOnce.Do(func() {
		dir, err := os.MkdirTemp("", "bulwark-e2e-plugins-")
		if err != nil {
			pluginsErr = err
			return
		}
		_, file, _, _ := runtime.Caller(0)
		root := filepath.Join(filepath.Dir(file), "..", "..")
		for _, name := range []string{"mock", "local"} {
			exe := pluginhost.Prefix + name
			if set, err := prebuilt("plugins/"+exe, filepath.Join(dir, exe)); set {
				if err != nil {
					pluginsErr = err
					return
				}
				continue
			}
			// -trimpath, as make builds: the packages compile once a run, shared in the build cache with make vet's and build-demo's.
			cmd := exec.Command("go", "build", "-trimpath", "-o", filepath.Join(dir, "bulwark-provider-"+name), "./plugins/"+name)
			cmd.Dir = root
			if out, err := cmd.CombinedOutput(); err != nil {
				pluginsErr = fmt.Errorf("build %s: %v\n%s", name, err, out)
				return
			}
		}
		pluginsDir = dir
	})
	if pluginsErr != nil {
		t.Fatal(pluginsErr)
	}
	return pluginsDir
}

// raceScripts run the bulwark of testscript.Main, this test binary (built
// with the race detector under make test), instead of the plain build every
// other script runs: a few whose bulwark runs concurrent work of its own
// (parallel steps, a second command racing for the lock, a plugin dying
// mid-call, a kill mid-apply), so the CLI's glue keeps race coverage end to
// end at a fraction of the cost (-race makes a script's every command 5-7x
// slower: for_each_instances took 30.7 s with it, 4.7 s without). Each
// names the backends it runs race-built on: lock_held_stale_and_plan_without_lock
// on every one, since the lock it races for is the backend's (a file's
// flock, a PostgreSQL advisory lock, an S3 lease renewed by a goroutine of
// its own); resume_from_another_folder on files alone, since what it races
// (the engine, the plugins, the CLI) is the same code whatever the backend,
// and the PostgreSQL and S3 backends' own code is raced by their packages'
// tests (backends/pgstore, backends/s3store, under make test's -race) and
// by the lock script here. (plugin_transport_failures runs on files alone.)
var raceScripts = map[string][]string{
	"lock_held_stale_and_plan_without_lock": {"file", "postgres", "s3"},
	"plugin_transport_failures":             {"file"},
	"resume_from_another_folder":            {"file"},
}

// scriptBulwark makes the script's `bulwark` the plain build of
// builtBulwark, first on its PATH, unless the script is one of raceScripts
// on backend (file, postgres or s3). (The core's own tests keep the race
// detector; so do this package's in-process tests.)
func scriptBulwark(t *testing.T, env *testscript.Env, backend string) {
	if slices.Contains(raceScripts[scriptName(env)], backend) {
		return
	}
	env.Setenv("PATH", filepath.Dir(builtBulwark(t))+string(os.PathListSeparator)+env.Getenv("PATH"))
}

// mode PERM FILE... checks each file's permission bits.
func cmdMode(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 2 {
		ts.Fatalf("usage: mode PERM FILE...")
	}
	want, err := strconv.ParseUint(args[0], 8, 32)
	ts.Check(err)
	for _, f := range args[1:] {
		fi, err := os.Stat(ts.MkAbs(f))
		ts.Check(err)
		got := uint64(fi.Mode().Perm())
		if (got == want) == neg {
			ts.Fatalf("%s has mode %#o, want %s%#o", f, got, map[bool]string{true: "not ", false: ""}[neg], want)
		}
	}
}

// events-order FILE ACTION R1 R2 ... checks that in the events file the ok
// events with ACTION for R1, R2, ... appear in that order; an Ri written
// OTHER:NAME stands for NAME's ok OTHER event instead (verify compute
// delete:storage: compute verified before storage's Delete ended).
// eventAction is the ACTION: prefix of an events-order entry.
var eventAction = regexp.MustCompile(`^[a-z]+:`)

func cmdEventsOrder(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 3 {
		ts.Fatalf("usage: events-order FILE ACTION [ACTION:]RESOURCE...")
	}
	f, err := os.Open(ts.MkAbs(args[0]))
	ts.Check(err)
	defer f.Close()
	pos := map[string]int{} // "ACTION:RESOURCE" → line of its ok event
	sc := bufio.NewScanner(f)
	for i := 0; sc.Scan(); i++ {
		var ev struct{ Resource, Action, Status string }
		if json.Unmarshal(sc.Bytes(), &ev) != nil {
			continue
		}
		if ev.Status == "ok" {
			pos[ev.Action+":"+ev.Resource] = i + 1
		}
	}
	// A name with an action of its own (delete:storage) is that event;
	// a bare name is its ACTION event.
	keys := make([]string, len(args)-2)
	for i, r := range args[2:] {
		keys[i] = r
		if !eventAction.MatchString(r) {
			keys[i] = args[1] + ":" + r
		}
	}
	ok := true
	for i, k := range keys {
		if pos[k] == 0 {
			ts.Fatalf("no ok event %s", k)
		}
		if i > 0 && pos[keys[i-1]] > pos[k] {
			ok = false
		}
	}
	if ok == neg {
		got := map[string]int{}
		for _, k := range keys {
			got[k] = pos[k]
		}
		ts.Fatalf("events order: %v (want %v, neg=%v)", got, keys, neg)
	}
}

// no-plugin-left fails if a plugin process started from this script's work
// folder is still running.
func cmdNoPluginLeft(ts *testscript.TestScript, neg bool, args []string) {
	work := ts.Getenv("WORK")
	procs, _ := filepath.Glob("/proc/[0-9]*")
	var left []string
	for _, p := range procs {
		cmdline, err := os.ReadFile(filepath.Join(p, "cmdline"))
		if err != nil || !bytes.Contains(cmdline, []byte("bulwark-provider-")) {
			continue
		}
		env, err := os.ReadFile(filepath.Join(p, "environ"))
		if err != nil {
			continue
		}
		for _, kv := range bytes.Split(env, []byte{0}) {
			if string(kv) == "WORK="+work {
				left = append(left, filepath.Base(p)+" "+strings.ReplaceAll(string(cmdline), "\x00", " "))
			}
		}
	}
	if (len(left) == 0) == neg {
		ts.Fatalf("plugin processes left behind: %v", left)
	}
}

// json-env FILE PATH VAR sets the environment variable VAR to a value of a
// JSON document (PATH as for json-has).
func cmdJSONEnv(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: json-env FILE PATH VAR")
	}
	ts.Setenv(args[2], fmt.Sprint(jsonAt(ts, args[0], args[1])))
}

// json-has FILE PATH VALUE checks a value in a JSON document; PATH is dot
// separated, numbers index arrays, and "len" as the last element means length.
func cmdJSONHas(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 3 {
		ts.Fatalf("usage: json-has FILE PATH VALUE")
	}
	got := fmt.Sprint(jsonAt(ts, args[0], args[1]))
	if (got == args[2]) == neg {
		ts.Fatalf("%s = %q, want %s%q", args[1], got, map[bool]string{true: "not ", false: ""}[neg], args[2])
	}
}

// jsonAt returns the value at a dotted path of a JSON file.
func jsonAt(ts *testscript.TestScript, file, path string) any {
	b, err := os.ReadFile(ts.MkAbs(file))
	ts.Check(err)
	var v any
	ts.Check(json.Unmarshal(b, &v))
	for _, k := range strings.Split(path, ".") {
		switch x := v.(type) {
		case map[string]any:
			v = x[k]
		case []any:
			if k == "len" {
				v = float64(len(x))
				continue
			}
			i, err := strconv.Atoi(k)
			ts.Check(err)
			if i >= len(x) {
				ts.Fatalf("%s: index %d out of %d", path, i, len(x))
			}
			v = x[i]
		default:
			ts.Fatalf("%s: cannot index %T with %q", path, v, k)
		}
	}
	return v
}

// exits CODE COMMAND ARGS... runs a command (as exec does, keeping its
// stdout and stderr for what follows) and checks its exit code.
func cmdExits(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: exits CODE COMMAND ARGS...")
	}
	want, err := strconv.Atoi(args[0])
	ts.Check(err)
	got := 0
	if err := ts.Exec(args[1], args[2:]...); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			ts.Fatalf("%s: %v", args[1], err)
		}
		got = ee.ExitCode()
	}
	if got != want {
		ts.Fatalf("%s exited %d, want %d", args[1], got, want)
	}
}
