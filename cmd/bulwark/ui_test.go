package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bulwark-iac/bulwark/backends/pgstore/pgtest"
)

// uiServer is a real `bulwark ui` process on a free loopback port.
type uiServer struct {
	url    string
	cmd    *exec.Cmd
	stderr *lockedBuffer // what the view wrote to stderr so far
}

// lockedBuffer is a buffer one goroutine (os/exec's copy of a pipe) writes
// while another reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startUI starts the real binary's view over stateDir and reads the
// address it printed (port 0: a free one), waiting with a deadline.
func startUI(t *testing.T, bin, stateDir string, env []string, args ...string) *uiServer {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"--state-dir", stateDir, "ui", "--listen", "127.0.0.1:0"}, args...)...)
	cmd.Env = env
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	lines := make(chan string, 8)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	addr := regexp.MustCompile(`at (http://127\.0\.0\.1:[0-9]+/) `)
	deadline := time.After(60 * time.Second)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("bulwark ui exited before it said where it serves:\n%s", stderr.String())
			}
			if m := addr.FindStringSubmatch(l); m != nil {
				go func() {
					for range lines { // keep the pipe drained
					}
				}()
				return &uiServer{url: m[1], cmd: cmd, stderr: stderr}
			}
		case <-deadline:
			t.Fatalf("bulwark ui said nothing of where it serves in 60s:\n%s", stderr.String())
		}
	}
}

func (s *uiServer) get(t *testing.T, path string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url+strings.TrimPrefix(path, "/"), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// everyPage is every page and API answer of stackName's view, its
// operations' timelines included (read from its history).
func (s *uiServer) everyPage(t *testing.T, stackName string) map[string]string {
	t.Helper()
	return s.pages(t, stackName, true)
}

// pages is everyPage, with each operation's event stream only when
// streams is set (a running operation's stream ends only when it does).
func (s *uiServer) pages(t *testing.T, stackName string, streams bool) map[string]string {
	t.Helper()
	pages := map[string]string{}
	fetch := func(p string) string {
		code, body := s.get(t, p)
		if code != http.StatusOK {
			t.Fatalf("GET %s: %d\n%s", p, code, body)
		}
		pages[p] = body
		return body
	}
	fetch("/")
	fetch("/api/stacks")
	for _, p := range []string{"/stacks/" + stackName, "/stacks/" + stackName + "/history", "/stacks/" + stackName + "/graph"} {
		fetch(p)
		fetch("/api" + p)
	}
	var hist struct {
		Operations []struct {
			ID string `json:"id"`
		} `json:"operations"`
	}
	if err := json.Unmarshal([]byte(pages["/api/stacks/"+stackName+"/history"]), &hist); err != nil {
		t.Fatal(err)
	}
	if len(hist.Operations) == 0 {
		t.Fatalf("the history shows no operation:\n%s", pages["/api/stacks/"+stackName+"/history"])
	}
	for _, o := range hist.Operations {
		fetch("/stacks/" + stackName + "/operations/" + o.ID)
		fetch("/api/stacks/" + stackName + "/operations/" + o.ID)
		// Its event stream (the records, the timeline, the end; a running
		// operation's stream ends when it does).
		if streams {
			fetch("/stacks/" + stackName + "/operations/" + o.ID + "/events")
		}
	}
	return pages
}

// uiEnv is the environment of the bulwark processes of a test: a home of
// its own (the secrets key's folder), the scripts' cache folder (graphviz
// compiled once, script_wasmcache_test.go) and the variables given.
func uiEnv(t *testing.T, vars ...string) []string {
	home := t.TempDir()
	env := []string{"HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, ".config"), "XDG_CACHE_HOME=" + graphvizCache(t), "PATH=" + os.Getenv("PATH"), "TMPDIR=" + os.TempDir()}
	return append(env, vars...)
}

func runBulwark(t *testing.T, bin string, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("bulwark %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// No secret leaves: a stack applied with a sensitive variable, a config
// value and attribute derived from it and a sensitive output, twice with two
// passwords, is served by the real binary; every page and API answer is
// searched for every secret value, and the state folder is byte for byte
// what it was before the view served.
func TestUIServesTheStackAndLeaksNoSecret(t *testing.T) {
	bin, plugins := builtBulwark(t), buildPlugins(t)
	dir := t.TempDir()
	stateDir := filepath.Join(dir, "state")
	spec := filepath.Join(dir, "stack.yaml")
	text := strings.ReplaceAll(`version: 1
stack: secretive
variables:
  env: {type: string, default: dev}
  db_password: {type: string, sensitive: true}
providers:
  mock: {config: {world: WORLD}}
resources:
  - name: db
    type: dynamodb_table
    protection: protected
    config: {table: "app-${var.env}", secret: "${var.db_password}"}
  - name: app
    type: compute
    config:
      secret: "pw=${var.db_password}"
      tags: {dsn: "postgres://app:${var.db_password}@${db.id}", env: "${var.env}"}
outputs:
  app_id: {value: "${app.id}"}
  dsn: {value: "postgres://app:${var.db_password}@${app.id}", sensitive: true}
  derived: {value: "${app.tags}"}
`, "WORLD", filepath.Join(dir, "world"))
	if err := os.WriteFile(spec, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	secretsGiven := []string{"hunter2-pw-6f1a", "correct-horse-pw-9b3c"}
	home := uiEnv(t)
	for _, pw := range secretsGiven {
		env := append(home[:len(home):len(home)], "BULWARK_VAR_db_password="+pw)
		runBulwark(t, bin, env, "--state-dir", stateDir, "--plugin-dir", plugins, "apply", "--yes", spec)
	}
	// A saved plan made with a third password, which the view's process
	// is never given: only the plan's own masking can keep it out.
	planned := "saved-plan-pw-4d7e"
	secretsGiven = append(secretsGiven, planned)
	planFile := filepath.Join(dir, "next.plan")
	runBulwark(t, bin, append(home[:len(home):len(home)], "BULWARK_VAR_db_password="+planned),
		"--state-dir", stateDir, "--plugin-dir", plugins, "plan", "--out", planFile, spec)
	before := snapshotDir(t, stateDir)

	srv := startUI(t, bin, stateDir, home, "--plan", planFile)
	pages := srv.everyPage(t, "secretive")
	for _, p := range []string{"/plans/1", "/api/plans/1"} {
		code, body := srv.get(t, p)
		if code != http.StatusOK {
			t.Fatalf("GET %s: %d\n%s", p, code, body)
		}
		pages[p] = body
	}
	for path, body := range pages {
		for _, s := range secretsGiven {
			if strings.Contains(body, s) {
				t.Errorf("GET %s shows the secret %q:\n%s", path, s, body)
			}
		}
	}
	// What a person looks for is there, the variable masked, not dropped.
	for path, want := range map[string][]string{
		"/stacks/secretive":             {"<td>db</td>", "<td>app</td>", `l-protected">protected`, `<a href="/plans/1"><code>` + planFile + `</code></a>`},
		"/stacks/secretive/history":     {`db_password=&#34;(sensitive)&#34;`, `env=&#34;dev&#34;`, `s-succeeded">succeeded`},
		"/api/stacks/secretive/history": {`"db_password": "(sensitive)"`, `"exit": 0`},
		"/api/stacks/secretive":         {`"protection": "protected"`, `"ownership": "created"`},
		"/api/stacks":                   {`"name": "secretive"`, `"resources": 2`},
		"/api/stacks/secretive/graph":   {`"from": "state"`, `<title>db</title>`},
		"/":                             {`<h2>Saved plans</h2>`, `<a href="/plans/1"><code>` + planFile + `</code></a>`},
		"/plans/1":                      {`Plan for stack secretive`, `<span class="action">update</span> <code>db</code>`, `db_password <span class="note">sensitive</span>`},
		"/api/plans/1":                  {`"stack": "secretive"`, `"secret": "(sensitive)"`, `"name": "db_password"`},
	} {
		for _, w := range want {
			if !strings.Contains(pages[path], w) {
				t.Errorf("GET %s does not show %s:\n%s", path, w, pages[path])
			}
		}
	}
	if after := snapshotDir(t, stateDir); after != before {
		t.Errorf("serving the view changed the state folder")
	}
}

// The view never takes the lock: while an apply holds it, one of its
// provider calls kept in flight by the mock (so the apply is provably
// running however loaded the machine), the view shows its operation
// running and serves every page, and the operation's event stream stays
// open; once the call is let go the stream ends with the apply's success
// and the apply ends with exit 0.
func TestUIWhileAnApplyHoldsTheLock(t *testing.T) {
	bin, plugins := builtBulwark(t), buildPlugins(t)
	dir := t.TempDir()
	stateDir := filepath.Join(dir, "state")
	spec := filepath.Join(dir, "stack.yaml")
	var b strings.Builder
	b.WriteString("version: 1\nstack: busy\nproviders:\n  mock: {config: {world: " + filepath.Join(dir, "world") + "}}\nresources:\n")
	for _, n := range []string{"a", "b", "c", "d", "e", "f"} {
		b.WriteString("  - name: " + n + "\n    type: generic\n")
	}
	if err := os.WriteFile(spec, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	env := uiEnv(t)
	srv := startUI(t, bin, stateDir, env)

	const held = "Create-f-1"
	h := holdCalls(t, held)
	apply := exec.Command(bin, "--state-dir", stateDir, "--plugin-dir", plugins, "apply", "--yes", "--parallelism", "1", spec)
	apply.Env = append(append([]string{}, env...), h.env())
	var applyOut strings.Builder
	apply.Stdout, apply.Stderr = &applyOut, &applyOut
	if err := apply.Start(); err != nil {
		t.Fatal(err)
	}
	applied := make(chan error, 1)
	go func() { applied <- apply.Wait() }()
	t.Cleanup(func() {
		select {
		case <-applied:
		default:
			_ = apply.Process.Kill()
			<-applied
		}
	})
	// f's Create is in flight, and stays so until released: the apply
	// runs, holding the lock, for as long as the test looks.
	h.begun(held)

	// Poll, with a deadline, until the view shows the apply running (it
	// reads the stack's folder, which may lag the call by a poll).
	var op string
	for deadline := time.Now().Add(time.Minute); op == ""; {
		select {
		case err := <-applied:
			t.Fatalf("the apply ended (%v) while its Create of f was held:\n%s", err, applyOut.String())
		default:
		}
		if running, live := busyNow(t, srv); len(running) == 1 && live {
			op = running[0]
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the view never showed the apply running, its Create of f held")
		}
		time.Sleep(10 * time.Millisecond) // polling interval, bounded by the deadline
	}
	if code, body := srv.get(t, "/stacks/busy"); code != http.StatusOK || !strings.Contains(body, "Running now:") {
		t.Errorf("the stack page while the apply runs: %d\n%s", code, body)
	}
	// Every page, the running operation's included, while it runs.
	srv.pages(t, "busy", false)

	// The running operation's event stream: it opens with the records and
	// the timeline and stays open while the call is held.
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.url+"stacks/busy/operations/"+op+"/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET the running operation's events: %d", resp.StatusCode)
	}
	stream := bufio.NewReader(resp.Body)
	var seen strings.Builder
	// next reads the stream up to the end of its next event; the stream
	// may not close before the test has read its end.
	next := func() string {
		t.Helper()
		var ev strings.Builder
		for {
			line, err := stream.ReadString('\n')
			ev.WriteString(line)
			seen.WriteString(line)
			if err != nil {
				t.Fatalf("reading the event stream: %v\n%s", err, seen.String())
			}
			if line == "\n" {
				return ev.String()
			}
		}
	}
	for ev := next(); !strings.HasPrefix(ev, "event: timeline\n"); ev = next() {
		if strings.HasPrefix(ev, "event: end\n") {
			t.Fatalf("the stream of the running operation ended before its timeline:\n%s", seen.String())
		}
	}
	// What came with the timeline (the server writes its first events at
	// once) holds no end either. An end sent while the call is held, even
	// one that came later, is caught below: it cannot say succeeded.
	rest, _ := stream.Peek(stream.Buffered())
	if strings.Contains(seen.String()+string(rest), "event: end\n") {
		t.Fatalf("the stream of the running operation ended while its Create of f was held:\n%s%s", seen.String(), rest)
	}

	// Let the call go: the stream ends with the apply's success, and the
	// apply ends with exit 0 and shows in the view as no longer running.
	h.release(held)
	ev := next()
	for !strings.HasPrefix(ev, "event: end\n") {
		ev = next()
	}
	if !strings.Contains(ev, `"status":"succeeded"`) || !strings.Contains(ev, `"exit":0`) {
		t.Errorf("the stream ended with %q, want succeeded, exit 0", ev)
	}
	select {
	case err := <-applied:
		applied <- err
		if err != nil {
			t.Fatalf("the apply failed while the view served: %v\n%s", err, applyOut.String())
		}
	case <-time.After(3 * time.Minute):
		t.Fatalf("the apply did not end in 3 minutes after its call was released:\n%s", applyOut.String())
	}
	if running, _ := busyNow(t, srv); len(running) != 0 {
		t.Errorf("the view shows %v running after the apply ended", running)
	}
}

// busyNow is what the view says of stack busy: the operations running and
// whether a live process holds its lock.
func busyNow(t *testing.T, srv *uiServer) (running []string, live bool) {
	t.Helper()
	code, body := srv.get(t, "/api/stacks/busy")
	if code != http.StatusOK {
		t.Fatalf("GET /api/stacks/busy: %d\n%s", code, body)
	}
	var st struct {
		Running []string `json:"running"`
		Lock    *struct {
			Live bool `json:"live"`
		} `json:"lock"`
	}
	if err := json.Unmarshal([]byte(body), &st); err != nil {
		t.Fatalf("GET /api/stacks/busy: %v\n%s", err, body)
	}
	return st.Running, st.Lock != nil && st.Lock.Live
}

// A view beyond loopback makes a token, says so, and refuses a request
// without it.
func TestUIBeyondLoopbackNeedsItsToken(t *testing.T) {
	bin := builtBulwark(t)
	cmd := exec.Command(bin, "--state-dir", t.TempDir(), "ui", "--listen", "0.0.0.0:0")
	cmd.Env = uiEnv(t)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	}()
	sc := bufio.NewScanner(out)
	var port, token string
	portRe, tokenRe := regexp.MustCompile(`at http://[^ ]*:([0-9]+)/ `), regexp.MustCompile(`needs this token \(made for this run\): ([0-9a-f]{32})$`)
	for (port == "" || token == "") && sc.Scan() {
		if m := portRe.FindStringSubmatch(sc.Text()); m != nil {
			port = m[1]
		}
		if m := tokenRe.FindStringSubmatch(sc.Text()); m != nil {
			token = m[1]
		}
	}
	if port == "" || token == "" {
		t.Fatalf("bulwark ui on 0.0.0.0 did not say its port and token (port %q token %q)", port, token)
	}
	go func() {
		for sc.Scan() {
		}
	}()
	srv := &uiServer{url: "http://127.0.0.1:" + port + "/"}
	if code, _ := srv.get(t, "/api/stacks"); code != http.StatusUnauthorized {
		t.Errorf("without the token: %d, want 401", code)
	}
	if code, body := srv.get(t, "/api/stacks?token="+token); code != http.StatusOK {
		t.Errorf("with the token: %d, want 200\n%s", code, body)
	}
}

// snapshotDir is every file under dir, its name, mode and bytes.
func snapshotDir(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		b.WriteString(rel + " " + info.Mode().String())
		if info.Mode().IsRegular() {
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			b.Write(data)
		}
		b.WriteString("\n")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// A token from $BULWARK_UI_TOKEN (off the process list) is required as one
// from --token is, even on loopback.
func TestUITokenFromTheEnvironment(t *testing.T) {
	srv := startUI(t, builtBulwark(t), t.TempDir(), uiEnv(t, "BULWARK_UI_TOKEN=env-t0ken-1234"))
	if code, _ := srv.get(t, "/api/stacks"); code != http.StatusUnauthorized {
		t.Errorf("without the token: %d, want 401", code)
	}
	if code, body := srv.get(t, "/api/stacks?token=env-t0ken-1234"); code != http.StatusOK {
		t.Errorf("with the token: %d, want 200\n%s", code, body)
	}
}

// On PostgreSQL, which hands a sealed revision spec back as it is stored
// when no key opens it, the graph page is drawn from the state's records
// as on the file backend: db protected, the arrow app → db, no 500.
func TestUIGraphOnPostgres(t *testing.T) {
	base := pgBase(t)
	schema := pgtest.Schema()
	u, err := pgtest.WithSchema(base, schema)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pgtest.DropSchema(base, schema) })
	bin, plugins := builtBulwark(t), buildPlugins(t)
	dir := t.TempDir()
	spec := filepath.Join(dir, "stack.yaml")
	text := "version: 1\nstack: pgraph\nproviders:\n  mock: {config: {world: " + filepath.Join(dir, "world") + "}}\nresources:\n  - name: db\n    type: generic\n    protection: protected\n  - name: app\n    type: compute\n    config: {tags: {db: \"${db.id}\"}}\n"
	if err := os.WriteFile(spec, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	env := uiEnv(t)
	runBulwark(t, bin, env, "--state", u, "--plugin-dir", plugins, "apply", "--yes", spec)
	srv := startUI(t, bin, filepath.Join(dir, "unused"), env, "--state", u)
	code, body := srv.get(t, "/api/stacks/pgraph/graph")
	if code != http.StatusOK {
		t.Fatalf("GET /api/stacks/pgraph/graph: %d\n%s", code, body)
	}
	for _, want := range []string{`"from": "state"`, `protected\">\n<title>db</title>`, `<title>app&#45;&gt;db</title>`} {
		if !strings.Contains(body, want) {
			t.Errorf("the graph lacks %s:\n%s", want, body)
		}
	}
}

// A --plan that cannot be opened as show opens it is refused before the
// view serves anything: the error names the flag and the file.
func TestUIRefusesASavedPlanItCannotOpen(t *testing.T) {
	bin := builtBulwark(t)
	dir := t.TempDir()
	notAPlan := filepath.Join(dir, "not.plan")
	if err := os.WriteFile(notAPlan, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{notAPlan, filepath.Join(dir, "missing.plan")} {
		cmd := exec.Command(bin, "--state-dir", filepath.Join(dir, "state"), "ui", "--listen", "127.0.0.1:0", "--plan", p)
		cmd.Env = uiEnv(t)
		out, err := cmd.CombinedOutput()
		if err == nil {
			t.Fatalf("bulwark ui --plan %s: exit 0, want a refusal\n%s", p, out)
		}
		if !strings.Contains(string(out), "--plan: ") || !strings.Contains(string(out), p) || strings.Contains(string(out), "serving") {
			t.Errorf("bulwark ui --plan %s: want an error naming --plan and the file, before serving:\n%s", p, out)
		}
	}
}

// bulwark ui --plan FILE serves a saved plan exactly as show does:
// /api/plans/1 is byte for byte what `show FILE --json` prints, and the
// main part of /plans/1 what `show FILE --html` writes (the page around it
// is the view's layout, not the self-contained file's). The plan replaces,
// updates (a sensitive value), creates and deletes, so every part of the
// document is read back by the page.
func TestUISavedPlanIsWhatShowPrints(t *testing.T) {
	bin, plugins := builtBulwark(t), buildPlugins(t)
	dir := t.TempDir()
	stateDir := filepath.Join(dir, "state")
	spec := filepath.Join(dir, "stack.yaml")
	write := func(resources string) {
		t.Helper()
		text := `version: 1
stack: showplan
variables:
  dbpass: {type: string, sensitive: true}
providers:
  mock: {config: {world: ` + filepath.Join(dir, "world") + `}}
resources:
` + resources
		if err := os.WriteFile(spec, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	const secret, planned = "applied-pw-2c81", "planned-pw-7e0d"
	home := uiEnv(t)
	with := func(pw string) []string { return append(home[:len(home):len(home)], "BULWARK_VAR_dbpass="+pw) }
	// db is the same in both: the new password makes its update.
	const db = `  - name: db
    type: dynamodb_table
    protection: durable
    config: {table: t1, hash_key: id, zone: z1, secret: "${var.dbpass}"}
`
	write(db + `  - name: app
    type: compute
    depends_on: [db]
    config: {zone: z1}
  - name: old
    type: generic
`)
	runBulwark(t, bin, with(secret), "--state-dir", stateDir, "--plugin-dir", plugins, "apply", "--yes", spec)
	write(db + `  - name: app
    type: compute
    depends_on: [db]
    config: {zone: z2}
  - name: web
    type: generic
    depends_on: [app]
`)
	planFile := filepath.Join(dir, "next.plan")
	runBulwark(t, bin, with(planned), "--state-dir", stateDir, "--plugin-dir", plugins, "plan", "--out", planFile, spec)
	show := func(format string) string {
		t.Helper()
		cmd := exec.Command(bin, "--state-dir", stateDir, "show", planFile, format)
		cmd.Env = home
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("bulwark show %s: %v", format, err)
		}
		return string(out)
	}
	wantJSON, wantHTML := show("--json"), show("--html")
	for _, w := range []string{`"action": "replace"`, `"action": "update"`, `"action": "create"`, `"action": "delete"`, `"name": "dbpass"`} {
		if !strings.Contains(wantJSON, w) {
			t.Fatalf("show --json lacks %s, the plan is not the one this test means:\n%s", w, wantJSON)
		}
	}

	srv := startUI(t, bin, stateDir, home, "--plan", planFile)
	code, gotJSON := srv.get(t, "/api/plans/1")
	if code != http.StatusOK || gotJSON != wantJSON {
		t.Errorf("GET /api/plans/1: %d, not what show --json printed:\n%s\nshow --json:\n%s", code, gotJSON, wantJSON)
	}
	code, page := srv.get(t, "/plans/1")
	mainPart := func(html string) string {
		t.Helper()
		i, j := strings.Index(html, "<main>"), strings.LastIndex(html, "</main>")
		if i < 0 || j < i {
			t.Fatalf("no <main> in:\n%s", html)
		}
		return html[i:j]
	}
	if code != http.StatusOK || mainPart(page) != mainPart(wantHTML) {
		t.Errorf("GET /plans/1: %d, its main part is not show --html's:\n%s\nshow --html:\n%s", code, mainPart(page), mainPart(wantHTML))
	}
	for _, body := range []string{gotJSON, page, wantHTML} {
		for _, s := range []string{secret, planned} {
			if strings.Contains(body, s) {
				t.Errorf("the plan's answers hold the secret %q in clear", s)
			}
		}
	}
}

// A bulwark installed without bulwark-graphviz beside it (go install of
// bulwark alone) serves the view and warns, when it starts, that the graph
// pages need the program and how to install it.
func TestUIWarnsWithoutTheLayoutProgram(t *testing.T) {
	alone := filepath.Join(t.TempDir(), "bulwark")
	if err := copyExecutable(builtBulwark(t), alone); err != nil {
		t.Fatal(err)
	}
	srv := startUI(t, alone, t.TempDir(), uiEnv(t))
	// The warning comes before the view serves; its bytes may still be on
	// their way through the pipe when the address is read.
	deadline := time.Now().Add(60 * time.Second)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !strings.Contains(srv.stderr.String(), "warning:") {
		if time.Now().After(deadline) {
			t.Fatalf("bulwark ui without bulwark-graphviz said nothing of it in 60s:\n%s", srv.stderr.String())
		}
		<-tick.C
	}
	got := srv.stderr.String()
	want := filepath.Join(filepath.Dir(alone), "bulwark-graphviz")
	if !strings.Contains(got, want) || !strings.Contains(got, "go install github.com/bulwark-iac/bulwark/cmd/bulwark/cmd/bulwark-graphviz@") {
		t.Fatalf("the warning does not name %s and how to install it:\n%s", want, got)
	}
	if code, _ := srv.get(t, "/api/stacks"); code != http.StatusOK {
		t.Errorf("the view without bulwark-graphviz: GET /api/stacks %d, want 200", code)
	}
}
