package pgstore_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"github.com/bulwark-iac/bulwark/core/protection"
	"os"
	"os/exec"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bulwark-iac/bulwark/backends/pgstore"
	"github.com/bulwark-iac/bulwark/backends/pgstore/pgtest"
	"github.com/bulwark-iac/bulwark/core/journal"
	"github.com/bulwark-iac/bulwark/core/secrets"
	"github.com/bulwark-iac/bulwark/core/state"
	"github.com/bulwark-iac/bulwark/core/storage"
)

func TestMain(m *testing.M) {
	// A child process of the lock tests: it takes the lock and holds it
	// until killed, or reports who holds it.
	if os.Getenv("PGSTORE_TEST_CHILD") != "" {
		os.Exit(child())
	}
	os.Exit(pgtest.Main(m))
}

func child() int {
	ctx := context.Background()
	b, err := pgstore.Open(ctx, os.Getenv("PGSTORE_TEST_URL"), storage.Options{Stack: os.Getenv("PGSTORE_TEST_STACK")})
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	// Wait for the word to go, so that every racer tries at once.
	in := bufio.NewScanner(os.Stdin)
	fmt.Println("ready")
	in.Scan()
	w, err := b.Lock(ctx, storage.Holder{Op: "op_child" + strconv.Itoa(os.Getpid())})
	var le *storage.LockedError
	switch {
	case errors.As(err, &le) && le.Holder != nil:
		fmt.Println("locked", le.Holder.PID)
		return 4
	case err != nil:
		fmt.Println("error", err)
		return 1
	}
	fmt.Println("won")
	in.Scan() // hold until told to go, or killed
	w.Release(ctx)
	return 0
}

// racer is a child process that tries for the lock.
type racer struct {
	cmd *exec.Cmd
	in  *os.File
	out *bufio.Scanner
}

func startRacer(t *testing.T, url, stack string) *racer {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "PGSTORE_TEST_CHILD=1", "PGSTORE_TEST_URL="+url, "PGSTORE_TEST_STACK="+stack)
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdin = inR
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	inR.Close()
	r := &racer{cmd: cmd, in: inW, out: bufio.NewScanner(stdout)}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		inW.Close()
	})
	if got := r.line(t); got != "ready" {
		t.Fatalf("child: %s", got)
	}
	return r
}

func (r *racer) line(t *testing.T) string {
	t.Helper()
	if !r.out.Scan() {
		t.Fatalf("child %d said nothing: %v", r.cmd.Process.Pid, r.out.Err())
	}
	return r.out.Text()
}

func (r *racer) go_() { fmt.Fprintln(r.in) }

func open(t *testing.T, url, stack string, sl state.Sealing) *pgstore.Backend {
	t.Helper()
	b, err := pgstore.Open(context.Background(), url, storage.Options{Stack: stack, Sealing: sl})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func lock(t *testing.T, b storage.Backend, op string) storage.Writer {
	t.Helper()
	w, err := b.Lock(context.Background(), storage.Holder{Op: op})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Release(context.Background()) })
	return w
}

func res(name string, attrs map[string]any) *state.Resource {
	return &state.Resource{Name: name, Type: "generic", Provider: "mock", Source: "mock", ID: "id-" + name, Protection: protection.Ephemeral, Attributes: attrs}
}

func rec(op, kind, status string) journal.Record {
	return journal.Record{Op: op, Kind: kind, Status: status}
}

// Every acknowledged Commit is there after a reconnect, in one piece: the
// resources put and deleted, the metadata, the journal in order, the serial.
func TestCommitsSurviveReconnect(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	b := open(t, url, "web", state.Sealing{})
	w := lock(t, b, "op_1")
	steps := []storage.Commit{
		{Records: []journal.Record{rec("op_1", journal.KindOp, journal.OpRunning)},
			Change: storage.Change{Meta: &storage.Meta{Lineage: "L1"}}},
		{Records: []journal.Record{rec("op_1", journal.KindStep, journal.StepOK)},
			Change: storage.Change{Put: []*state.Resource{res("a", map[string]any{"n": 1.0}), res("b", nil)}}},
		{Change: storage.Change{Put: []*state.Resource{res("a", map[string]any{"n": 2.0})}, Delete: []string{"b"}}},
		{Records: []journal.Record{rec("op_1", journal.KindOp, journal.OpSucceeded)},
			Change: storage.Change{Meta: &storage.Meta{Lineage: "L1", Current: 1, Revisions: []state.Revision{{N: 1, Op: "op_1", Status: state.RevisionApplied}}}}},
	}
	for i, c := range steps {
		serial, err := w.Commit(ctx, c)
		if err != nil {
			t.Fatalf("commit %d: %v", i, err)
		}
		if serial != int64(i+1) {
			t.Fatalf("commit %d: serial %d", i, serial)
		}
	}
	if s, err := w.Commit(ctx, storage.Commit{}); err != nil || s != 4 {
		t.Fatalf("empty commit: %d, %v", s, err)
	}
	b.Close()

	b2 := open(t, url, "web", state.Sealing{})
	st, err := b2.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Serial != 4 || st.Lineage != "L1" || st.Current != 1 || len(st.Revisions) != 1 || st.Stack != "web" {
		t.Fatalf("state: %+v", st)
	}
	if got := st.Names(); !reflect.DeepEqual(got, []string{"a"}) || st.Resources["a"].Attributes["n"] != 2.0 {
		t.Fatalf("resources: %v %v", got, st.Resources["a"])
	}
	recs, bad, err := b2.Journal(ctx)
	if err != nil || len(bad) > 0 {
		t.Fatal(err, bad)
	}
	var kinds []string
	for _, r := range recs {
		if r.ID == "" || r.Time.IsZero() || r.Lineage != "L1" {
			t.Fatalf("record not stamped: %+v", r)
		}
		kinds = append(kinds, r.Kind+":"+r.Status)
	}
	if want := []string{"op:running", "step:ok", "op:succeeded"}; !reflect.DeepEqual(kinds, want) {
		t.Fatalf("journal %v, want %v", kinds, want)
	}
}

// An empty stack loads as serial 0 with no resources.
func TestLoadEmpty(t *testing.T) {
	b := open(t, pgtest.URL(t), "web", state.Sealing{})
	st, err := b.Load(context.Background())
	if err != nil || st.Serial != 0 || len(st.Resources) != 0 || st.Stack != "web" {
		t.Fatalf("%+v %v", st, err)
	}
	if h, err := b.Holder(context.Background()); h != nil || err != nil {
		t.Fatalf("holder %v %v", h, err)
	}
}

// Concurrent Commits (parallel steps) are all acknowledged with distinct
// serials and all of them are in the journal and the state.
func TestConcurrentCommits(t *testing.T) {
	ctx := context.Background()
	b := open(t, pgtest.URL(t), "web", state.Sealing{})
	w := lock(t, b, "op_1")
	const n = 40
	serials := make([]int64, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			name := fmt.Sprintf("r%02d", i)
			s, err := w.Commit(ctx, storage.Commit{
				Records: []journal.Record{{Op: "op_1", Kind: journal.KindStep, Status: journal.StepOK, Resource: name}},
				Change:  storage.Change{Put: []*state.Resource{res(name, nil)}},
			})
			if err != nil {
				t.Error(err)
			}
			serials[i] = s
		})
	}
	wg.Wait()
	seen := map[int64]bool{}
	for _, s := range serials {
		if s < 1 || s > n || seen[s] {
			t.Fatalf("serials %v", serials)
		}
		seen[s] = true
	}
	st, err := b.Load(ctx)
	if err != nil || st.Serial != n || len(st.Resources) != n {
		t.Fatalf("serial %d, %d resources, %v", st.Serial, len(st.Resources), err)
	}
	recs, _, _ := b.Journal(ctx)
	if len(recs) != n {
		t.Fatalf("%d records", len(recs))
	}
}

// Sensitive values never reach a row in clear; Load gives them back clear.
func TestSensitiveValuesSealed(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	key, err := secrets.NewKey("test")
	if err != nil {
		t.Fatal(err)
	}
	sl := state.Sealing{Sealer: key.Box(secrets.StackContext("web"))}
	b := open(t, url, "web", sl)
	w := lock(t, b, "op_1")
	r := res("db", map[string]any{"password": "hunter2-secret", "size": 1.0})
	r.Sensitive = []string{"password"}
	r.Config = map[string]any{"password": "hunter2-secret"}
	if _, err := w.Commit(ctx, storage.Commit{Change: storage.Change{Put: []*state.Resource{r}, Meta: &storage.Meta{Lineage: "L"}}}); err != nil {
		t.Fatal(err)
	}
	if err := w.PutRevision(ctx, 1, storage.RevisionBody{Spec: "token: spec-secret-text", Variables: map[string]any{"pw": "var-secret", "n": 1.0}, Sensitive: []string{"pw"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.PutBackup(ctx, "op_1", 5); err != nil {
		t.Fatal(err)
	}
	if r.Attributes["password"] != "hunter2-secret" {
		t.Fatal("Commit changed the caller's resource")
	}
	for _, table := range []string{"resources", "revisions", "backups", "journal", "stacks"} {
		if n := countContaining(t, url, table, []string{"hunter2-secret", "spec-secret-text", "var-secret"}); n != 0 {
			t.Errorf("%d rows of %s hold a secret in clear", n, table)
		}
	}
	st, err := b.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := st.Resources["db"]; got.Attributes["password"] != "hunter2-secret" || got.Config["password"] != "hunter2-secret" {
		t.Fatalf("loaded %v", got)
	}
	rb, err := b.Revision(ctx, 1)
	if err != nil || rb.Spec != "token: spec-secret-text" || rb.Variables["pw"] != "var-secret" {
		t.Fatalf("revision %+v %v", rb, err)
	}
	bk, err := b.Backup(ctx, "op_1")
	if err != nil || bk.Resources["db"].Attributes["password"] != "hunter2-secret" {
		t.Fatalf("backup %v", err)
	}
	// Without the key, the values stay sealed: never guessed, never lost.
	nokey := open(t, url, "web", state.Sealing{})
	st2, err := nokey.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := st2.Resources["db"].Attributes["password"].(string); !secrets.IsSealed(v) {
		t.Fatalf("without a key: %v", v)
	}
}

func countContaining(t *testing.T, url, table string, needles []string) int {
	t.Helper()
	ctx := context.Background()
	conn := rawConn(t, url)
	schema := schemaOf(t, url)
	n := 0
	for _, s := range needles {
		var c int
		q := fmt.Sprintf(`SELECT count(*) FROM %s.%s t WHERE position(convert_to($1, 'UTF8') in convert_to(t::text, 'UTF8')) > 0 OR position($1 in convert_from(%s, 'UTF8')) > 0`,
			pgx.Identifier{schema}.Sanitize(), table, bodyColumn(table))
		if err := conn.QueryRow(ctx, q, s).Scan(&c); err != nil {
			t.Fatal(err)
		}
		n += c
	}
	return n
}

func bodyColumn(table string) string {
	if table == "stacks" {
		return "coalesce(meta, '')"
	}
	return "body"
}

func rawConn(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	u := strings.Split(url, "schema=")[0]
	conn, err := pgx.Connect(context.Background(), strings.TrimRight(u, "?&"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func schemaOf(t *testing.T, url string) string {
	_, s, ok := strings.Cut(url, "schema=")
	if !ok {
		t.Fatal("no schema in", url)
	}
	s, _, _ = strings.Cut(s, "&")
	return s
}

// A second writer fails with a LockedError naming the first; the first's
// Release lets it in; the stale row of a dead holder is reported as Stale.
func TestLockInProcess(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	a := open(t, url, "web", state.Sealing{})
	b := open(t, url, "web", state.Sealing{})
	w := lock(t, a, "op_first")
	_, err := b.Lock(ctx, storage.Holder{Op: "op_second"})
	var le *storage.LockedError
	if !errors.As(err, &le) || !errors.Is(err, storage.ErrLocked) || le.Holder == nil || le.Holder.Op != "op_first" || le.Holder.PID != os.Getpid() {
		t.Fatalf("second Lock: %v", err)
	}
	if !strings.Contains(err.Error(), "op_first") {
		t.Fatalf("message does not name the holder: %v", err)
	}
	if h, err := b.Holder(ctx); err != nil || h == nil || h.Op != "op_first" {
		t.Fatalf("Holder: %v %v", h, err)
	}
	// Another stack in the same schema is not locked by it.
	other := open(t, url, "api", state.Sealing{})
	lock(t, other, "op_api")
	if err := w.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := w.Release(ctx); err != nil {
		t.Fatalf("second Release: %v", err)
	}
	if _, err := w.Commit(ctx, storage.Commit{Records: []journal.Record{rec("op_first", journal.KindOp, journal.OpRunning)}}); !errors.Is(err, storage.ErrLost) {
		t.Fatalf("Commit after Release: %v", err)
	}
	w2 := lock(t, b, "op_second")
	if w2.Stale() != nil {
		t.Fatalf("a released lock is not stale: %v", w2.Stale())
	}
}

// N processes race for the lock: exactly one wins, and each of the others
// is told the winner's pid.
func TestLockRaceProcesses(t *testing.T) {
	url := pgtest.URL(t)
	open(t, url, "web", state.Sealing{}) // create the schema before the race
	const n = 5
	var rs []*racer
	for range n {
		rs = append(rs, startRacer(t, url, "web"))
	}
	for _, r := range rs {
		r.go_()
	}
	var winner *racer
	var lines []string
	for _, r := range rs {
		l := r.line(t)
		lines = append(lines, l)
		if l == "won" {
			if winner != nil {
				t.Fatalf("two winners: %v", lines)
			}
			winner = r
		}
	}
	if winner == nil {
		t.Fatalf("no winner: %v", lines)
	}
	want := fmt.Sprintf("locked %d", winner.cmd.Process.Pid)
	for i, r := range rs {
		if r != winner && lines[i] != want {
			t.Fatalf("loser %d said %q, want %q (all: %v)", r.cmd.Process.Pid, lines[i], want, lines)
		}
	}
}

// A holder killed with kill -9 loses the lock as soon as the server sees its
// connection close; the next taker is told whose stale lock it took.
func TestKilledHolderLosesLock(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	b := open(t, url, "web", state.Sealing{})
	r := startRacer(t, url, "web")
	r.go_()
	if l := r.line(t); l != "won" {
		t.Fatalf("child: %s", l)
	}
	pid := r.cmd.Process.Pid
	if _, err := b.Lock(ctx, storage.Holder{Op: "op_parent"}); !errors.Is(err, storage.ErrLocked) {
		t.Fatalf("Lock while the child holds it: %v", err)
	}
	if err := r.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	r.cmd.Wait()
	start := time.Now()
	w := eventually(t, func() (storage.Writer, error) { return b.Lock(ctx, storage.Holder{Op: "op_parent"}) })
	defer w.Release(ctx)
	if s := w.Stale(); s == nil || s.PID != pid {
		t.Fatalf("Stale %v, want the killed child %d", s, pid)
	}
	t.Logf("lock free %v after kill -9", time.Since(start))
}

// A cut lock connection closes Lost, and every write after it fails with
// ErrLost having written nothing.
func TestCutConnectionLosesLock(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	b := open(t, url, "web", state.Sealing{})
	w := lock(t, b, "op_1")
	if _, err := w.Commit(ctx, storage.Commit{Records: []journal.Record{rec("op_1", journal.KindOp, journal.OpRunning)}}); err != nil {
		t.Fatal(err)
	}
	conn := rawConn(t, url)
	var n int
	err := conn.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE pid = (SELECT backend_pid FROM `+
		pgx.Identifier{schemaOf(t, url)}.Sanitize()+`.locks WHERE stack = 'web')`).Scan(&n)
	if err != nil || n != 1 {
		t.Fatalf("terminate: %d %v", n, err)
	}
	select {
	case <-w.Lost():
	case <-time.After(30 * time.Second):
		t.Fatal("Lost not closed after the lock connection was cut")
	}
	_, err = w.Commit(ctx, storage.Commit{Records: []journal.Record{rec("op_1", journal.KindStep, journal.StepOK)},
		Change: storage.Change{Put: []*state.Resource{res("a", nil)}}})
	if !errors.Is(err, storage.ErrLost) {
		t.Fatalf("Commit after the cut: %v", err)
	}
	if err := w.PutRevision(ctx, 1, storage.RevisionBody{Spec: "x"}); !errors.Is(err, storage.ErrLost) {
		t.Fatalf("PutRevision after the cut: %v", err)
	}
	st, _ := b.Load(ctx)
	recs, _, _ := b.Journal(ctx)
	if st.Serial != 0 || len(st.Resources) != 0 || len(recs) != 1 {
		t.Fatalf("written after the loss: serial %d, %d resources, %d records", st.Serial, len(st.Resources), len(recs))
	}
	// And the lock is free for another, once the server has ended the
	// cut session.
	b2 := open(t, url, "web", state.Sealing{})
	w2 := eventually(t, func() (storage.Writer, error) { return b2.Lock(ctx, storage.Holder{Op: "op_2"}) })
	w2.Release(ctx)
}

// eventually retries lock until it stops failing with ErrLocked (a killed
// session's lock goes when the server has ended it), within a deadline.
func eventually(t *testing.T, lock func() (storage.Writer, error)) storage.Writer {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		w, err := lock()
		if err == nil {
			return w
		}
		if !errors.Is(err, storage.ErrLocked) || time.Now().After(deadline) {
			t.Fatalf("Lock: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A writer whose lock was taken over (its connection lost it without its
// noticing yet) is fenced off by the epoch: its commit writes nothing.
func TestFencedAfterTakeover(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	b := open(t, url, "web", state.Sealing{})
	w := lock(t, b, "op_1")
	// Pretend another writer took over: bump the epoch behind w's back.
	conn := rawConn(t, url)
	if _, err := conn.Exec(ctx, `UPDATE `+pgx.Identifier{schemaOf(t, url)}.Sanitize()+`.stacks SET lock_epoch = lock_epoch + 1`); err != nil {
		t.Fatal(err)
	}
	_, err := w.Commit(ctx, storage.Commit{Records: []journal.Record{rec("op_1", journal.KindOp, journal.OpRunning)}})
	if !errors.Is(err, storage.ErrLost) {
		t.Fatalf("Commit: %v", err)
	}
	select {
	case <-w.Lost():
	default:
		t.Fatal("Lost not closed")
	}
	if recs, _, _ := b.Journal(ctx); len(recs) != 0 {
		t.Fatalf("%d records written", len(recs))
	}
}

// Lineage: a commit of another lineage is refused; a foreign journal record
// or backup is refused on read.
func TestLineage(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	b := open(t, url, "web", state.Sealing{})
	w := lock(t, b, "op_1")
	if _, err := w.Commit(ctx, storage.Commit{Records: []journal.Record{rec("op_1", journal.KindOp, journal.OpRunning)},
		Change: storage.Change{Meta: &storage.Meta{Lineage: "L1"}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Commit(ctx, storage.Commit{Change: storage.Change{Meta: &storage.Meta{Lineage: "L2"}}}); !errors.Is(err, storage.ErrLineage) {
		t.Fatalf("commit of another lineage: %v", err)
	}
	if _, err := w.PutBackup(ctx, "op_1", 5); err != nil {
		t.Fatal(err)
	}
	w.Release(ctx)
	conn := rawConn(t, url)
	s := pgx.Identifier{schemaOf(t, url)}.Sanitize()
	// A backup of another lineage, whole (its checksum good): what a copy
	// from another stack's history is.
	var body []byte
	if err := conn.QueryRow(ctx, `SELECT body FROM `+s+`.backups WHERE stack = 'web' AND name = 'op_1'`).Scan(&body); err != nil {
		t.Fatal(err)
	}
	rec, err := storage.Disclose(body, storage.Where{})
	if err != nil {
		t.Fatal(err)
	}
	foreign, err := storage.Enclose([]byte(strings.ReplaceAll(string(rec), "L1", "LX")))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `UPDATE `+s+`.backups SET body = $1 WHERE stack = 'web' AND name = 'op_1'`, foreign); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Backup(ctx, "op_1"); !errors.Is(err, storage.ErrLineage) {
		t.Fatalf("foreign backup: %v", err)
	}
	if _, err := conn.Exec(ctx, `INSERT INTO `+s+`.journal (stack, seq, op, kind, lineage, body) VALUES ('web', 99, 'op_x', 'op', 'LX',
		convert_to('{"id":"X","op":"op_x","kind":"op","status":"running","lineage":"LX","ts":"2026-01-01T00:00:00Z"}', 'UTF8'))`); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.Journal(ctx); !errors.Is(err, storage.ErrLineage) {
		t.Fatalf("foreign record: %v", err)
	}
	if _, err := b.Lock(ctx, storage.Holder{Op: "op_2"}); !errors.Is(err, storage.ErrLineage) {
		t.Fatalf("Lock over a foreign journal: %v", err)
	}
}

// Backups: one per name, the newest keep kept; revisions stored and
// dropped; what is not there is ErrNotFound.
func TestBackupsAndRevisions(t *testing.T) {
	ctx := context.Background()
	b := open(t, pgtest.URL(t), "web", state.Sealing{})
	w := lock(t, b, "op_1")
	for i := range 4 {
		if _, err := w.Commit(ctx, storage.Commit{Change: storage.Change{Put: []*state.Resource{res(fmt.Sprintf("r%d", i), nil)}}}); err != nil {
			t.Fatal(err)
		}
		stored, err := w.PutBackup(ctx, fmt.Sprintf("op_%d", i), 2)
		if err != nil || !stored {
			t.Fatalf("PutBackup %d: %v %v", i, stored, err)
		}
	}
	if stored, err := w.PutBackup(ctx, "op_3", 2); err != nil || stored {
		t.Fatalf("PutBackup of an existing name: %v %v", stored, err)
	}
	list, err := b.Backups(ctx)
	if err != nil || len(list) != 2 || list[0].Name != "op_2" || list[1].Name != "op_3" || list[1].Serial != 4 || list[1].Bytes == 0 {
		t.Fatalf("Backups %+v %v", list, err)
	}
	st, err := b.Backup(ctx, "op_2")
	if err != nil || len(st.Resources) != 3 || st.Serial != 3 {
		t.Fatalf("Backup %v %v", st, err)
	}
	if _, err := b.Backup(ctx, "op_0"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("pruned backup: %v", err)
	}
	if err := w.PutRevision(ctx, 1, storage.RevisionBody{Spec: "one"}); err != nil {
		t.Fatal(err)
	}
	if rb, err := b.Revision(ctx, 1); err != nil || rb.Spec != "one" {
		t.Fatalf("Revision %v %v", rb, err)
	}
	if err := w.DeleteRevision(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Revision(ctx, 1); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("deleted revision: %v", err)
	}
	stats, err := b.Stats(ctx)
	if err != nil || stats.Resources != 4 || stats.Backups != 2 || stats.SchemaVersion != pgstore.SchemaVersion || stats.StateBytes == 0 {
		t.Fatalf("Stats %+v %v", stats, err)
	}
}

// Checkpoint compacts old finished operations to one summary each, keeps
// unfinished ones whole, and keeps the order.
func TestCheckpoint(t *testing.T) {
	ctx := context.Background()
	b := open(t, pgtest.URL(t), "web", state.Sealing{})
	w := lock(t, b, "op_x")
	const keep, ops = 2, 7
	for i := range ops {
		op := fmt.Sprintf("op_%d", i)
		end := journal.OpSucceeded
		if i == 1 {
			end = journal.OpRollbackIncomplete
		}
		recs := []journal.Record{rec(op, journal.KindOp, journal.OpRunning), rec(op, journal.KindStep, journal.StepOK), rec(op, journal.KindStep, journal.StepOK)}
		recs[0].Type = "apply"
		recs = append(recs, rec(op, journal.KindOp, end))
		if _, err := w.Commit(ctx, storage.Commit{Records: recs}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Checkpoint(ctx, keep); err != nil {
		t.Fatal(err)
	}
	recs, _, err := b.Journal(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range recs {
		if r.Kind == journal.KindSummary {
			got = append(got, r.Op+"=summary")
			if r.Steps != 4 || r.Type != "apply" || r.Status != journal.OpSucceeded || r.End.IsZero() {
				t.Fatalf("summary %+v", r)
			}
		} else if r.Kind == journal.KindOp && r.Status == journal.OpRunning {
			got = append(got, r.Op)
		}
	}
	want := []string{"op_0=summary", "op_1", "op_2=summary", "op_3=summary", "op_4=summary", "op_5", "op_6"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("after checkpoint %v, want %v", got, want)
	}
	stats, _ := b.Stats(ctx)
	if stats.WholeOps != 3 || stats.SummarizedOps != 4 {
		t.Fatalf("stats %+v", stats)
	}
}

// The password never shows: not in Location, not in an error.
func TestPasswordNeverShown(t *testing.T) {
	base := pgtest.URL(t)
	withPW := strings.Replace(base, "bulwark@", "nobody:pw-Sup3rSecret@", 1)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := pgstore.Open(ctx, withPW, storage.Options{Stack: "web"})
	if err == nil {
		t.Fatal("opened as a user that does not exist")
	}
	if strings.Contains(err.Error(), "pw-Sup3rSecret") {
		t.Fatalf("error shows the password: %v", err)
	}
	b := open(t, strings.Replace(base, "bulwark@", "bulwark:pw-Sup3rSecret@", 1)+"&password=pw-Sup3rSecret", "web", state.Sealing{})
	if strings.Contains(b.Location(), "pw-Sup3rSecret") || !strings.HasPrefix(b.Location(), "postgres://bulwark@127.0.0.1") {
		t.Fatalf("Location %s", b.Location())
	}
	if _, err := pgstore.Open(ctx, "postgres://u:pw-Sup3rSecret@[::1", storage.Options{Stack: "web"}); err == nil || strings.Contains(err.Error(), "pw-Sup3rSecret") {
		t.Fatalf("bad URL: %v", err)
	}
}

// A schema a newer bulwark migrated is refused, naming the versions.
func TestNewerSchemaRefused(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	open(t, url, "web", state.Sealing{})
	conn := rawConn(t, url)
	if _, err := conn.Exec(ctx, `INSERT INTO `+pgx.Identifier{schemaOf(t, url)}.Sanitize()+`.schema_version (version) VALUES (99)`); err != nil {
		t.Fatal(err)
	}
	_, err := pgstore.Open(ctx, url, storage.Options{Stack: "web"})
	var se *pgstore.SchemaError
	if !errors.As(err, &se) || se.Found != 99 || !strings.Contains(err.Error(), "upgrade bulwark") {
		t.Fatalf("Open: %v", err)
	}
}

// Many bulwarks opening a fresh database at once create the schema once.
func TestConcurrentFirstOpen(t *testing.T) {
	url := pgtest.URL(t)
	var wg sync.WaitGroup
	for range 6 {
		wg.Go(func() {
			b, err := pgstore.Open(context.Background(), url, storage.Options{Stack: "web"})
			if err != nil {
				t.Error(err)
				return
			}
			b.Close()
		})
	}
	wg.Wait()
}

// An unknown protection level is never written, and never loaded.
func TestUnknownProtectionRefused(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	b := open(t, url, "web", state.Sealing{})
	w := lock(t, b, "op_1")
	r := res("a", nil)
	r.Protection = protection.Level(99) // on no rung of the ladder
	if _, err := w.Commit(ctx, storage.Commit{Change: storage.Change{Put: []*state.Resource{r}}}); err == nil {
		t.Fatal("committed an unknown protection level")
	}
	if _, err := w.Commit(ctx, storage.Commit{Change: storage.Change{Put: []*state.Resource{res("a", nil)}}}); err != nil {
		t.Fatal(err)
	}
	conn := rawConn(t, url)
	if _, err := conn.Exec(ctx, `UPDATE `+pgx.Identifier{schemaOf(t, url)}.Sanitize()+`.resources SET body = convert_to(replace(convert_from(body, 'UTF8'), 'ephemeral', 'gone'), 'UTF8')`); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Load(ctx); !errors.Is(err, state.ErrCorrupt) {
		t.Fatalf("Load: %v", err)
	}
}

func pgstoreOpen(ctx context.Context, url string) (storage.Backend, error) {
	return pgstore.Open(ctx, url, storage.Options{Stack: "bench"})
}

// A journal row that does not parse keeps its whole operation out of the
// compaction, as Checkpoint promises: the row, and the operation's other
// rows, are still there after it (the damaged row's operation is known by
// its op column, never by what could not be decoded).
func TestCheckpointKeepsADamagedOperation(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	b := open(t, url, "web", state.Sealing{})
	w := lock(t, b, "op_x")
	const keep, ops = 1, 5
	for i := range ops {
		op := fmt.Sprintf("op_%d", i)
		recs := []journal.Record{rec(op, journal.KindOp, journal.OpRunning), rec(op, journal.KindStep, journal.StepOK), rec(op, journal.KindOp, journal.OpSucceeded)}
		if _, err := w.Commit(ctx, storage.Commit{Records: recs}); err != nil {
			t.Fatal(err)
		}
	}
	// op_1's step record, damaged by hand.
	conn := rawConn(t, url)
	s := pgx.Identifier{schemaOf(t, url)}.Sanitize()
	tag, err := conn.Exec(ctx, `UPDATE `+s+`.journal SET body = convert_to('{"id": damaged', 'UTF8') WHERE stack = 'web' AND op = 'op_1' AND kind = 'step'`)
	if err != nil || tag.RowsAffected() != 1 {
		t.Fatalf("damage a row: %v %v", tag, err)
	}
	if err := w.Checkpoint(ctx, keep); err != nil {
		t.Fatal(err)
	}
	var rows int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM `+s+`.journal WHERE stack = 'web' AND op = 'op_1'`).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != 3 {
		t.Fatalf("op_1 has %d row(s) after the checkpoint, want its 3 (one damaged) kept whole", rows)
	}
	recs, bad, err := b.Journal(ctx)
	if err != nil || len(bad) != 1 {
		t.Fatalf("journal: %d damaged %v", len(bad), err)
	}
	summarized := map[string]bool{}
	for _, r := range recs {
		if r.Kind == journal.KindSummary {
			summarized[r.Op] = true
		}
	}
	if summarized["op_1"] || !summarized["op_0"] || !summarized["op_2"] {
		t.Fatalf("summaries %v: want op_0 and op_2 compacted, op_1 (damaged) kept whole", summarized)
	}
}

// A row the state is read from, edited by hand (a protection level
// lowered, as `UPDATE … SET body = replace(…)` in psql would), is refused
// on read with an error naming the backend, the stack and the row, and
// saying how to recover; so is the stack's metadata, a revision and a
// backup. The file backend refuses the same edit of state.json.
func TestHandEditRefused(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name, table, col, where, old, new string
		read                              func(b *pgstore.Backend) error
		names                             string
	}{
		{name: "a resource's protection lowered", table: "resources", col: "body", where: "name = 'vault'", old: `"durable"`, new: `"ephemeral"`,
			read: func(b *pgstore.Backend) error { _, err := b.Load(ctx); return err }, names: `resource "vault" (table %s.resources`},
		{name: "the metadata's revisions edited", table: "stacks", col: "meta", where: "true", old: `"op_1"`, new: `"op_9"`,
			read: func(b *pgstore.Backend) error { _, err := b.Load(ctx); return err }, names: "the stack's metadata (table %s.stacks"},
		{name: "a revision's spec edited", table: "revisions", col: "body", where: "n = 1", old: "stack: web", new: "stack: bad",
			read: func(b *pgstore.Backend) error { _, err := b.Revision(ctx, 1); return err }, names: "revision 1 (table %s.revisions"},
		{name: "a backup's protection lowered", table: "backups", col: "body", where: "name = 'op_1'", old: `"durable"`, new: `"ephemeral"`,
			read: func(b *pgstore.Backend) error { _, err := b.Backup(ctx, "op_1"); return err }, names: "backup op_1 (table %s.backups"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			url := pgtest.URL(t)
			b := open(t, url, "web", state.Sealing{})
			w := lock(t, b, "op_1")
			vault := res("vault", nil)
			vault.Protection = protection.Durable
			if _, err := w.Commit(ctx, storage.Commit{Change: storage.Change{Put: []*state.Resource{vault, res("web", nil)},
				Meta: &storage.Meta{Revisions: []state.Revision{{N: 1, Op: "op_1"}}, Current: 1}}}); err != nil {
				t.Fatal(err)
			}
			if err := w.PutRevision(ctx, 1, storage.RevisionBody{Spec: "stack: web\n"}); err != nil {
				t.Fatal(err)
			}
			if _, err := w.PutBackup(ctx, "op_1", 5); err != nil {
				t.Fatal(err)
			}
			if err := tt.read(b); err != nil {
				t.Fatalf("before the edit: %v", err)
			}
			conn := rawConn(t, url)
			schema := schemaOf(t, url)
			tag, err := conn.Exec(ctx, fmt.Sprintf(`UPDATE %s.%s SET %s = convert_to(replace(convert_from(%s, 'UTF8'), $1, $2), 'UTF8') WHERE stack = 'web' AND %s`,
				pgx.Identifier{schema}.Sanitize(), tt.table, tt.col, tt.col, tt.where), tt.old, tt.new)
			if err != nil || tag.RowsAffected() != 1 {
				t.Fatalf("edit: %v %v", tag, err)
			}
			err = tt.read(b)
			var ie *storage.IntegrityError
			if !errors.As(err, &ie) || !errors.Is(err, state.ErrCorrupt) {
				t.Fatalf("read after a hand edit: %v, want an IntegrityError", err)
			}
			msg := err.Error()
			t.Log(msg)
			for _, want := range []string{b.Location(), "stack web", fmt.Sprintf(tt.names, schema), "does not match its checksum", "restore the newest good copy from"} {
				if !strings.Contains(msg, want) {
					t.Errorf("the error %q does not say %q", msg, want)
				}
			}
			// A backup taken now does not launder the edit into a record
			// with a good checksum.
			if tt.table == "resources" || tt.table == "stacks" {
				if _, err := w.PutBackup(ctx, "op_2", 5); !errors.Is(err, storage.ErrIntegrity) {
					t.Errorf("PutBackup over an edited row: %v, want ErrIntegrity", err)
				}
			}
		})
	}
}

// A database an older bulwark wrote (schema version 1: bodies without
// checksums) is migrated by Open: every body keeps its bytes and gains its
// checksum, the stack loads as it was, and a hand edit after is refused.
func TestSchemaMigratesToChecksums(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	conn := rawConn(t, url)
	s := pgx.Identifier{schemaOf(t, url)}.Sanitize()
	meta := `{"revisions":[{"n":1,"op":"op_old","file":"web.yaml","status":"applied"}],"current":1}`
	resource := `{"name":"vault","type":"generic","provider":"mock","source":"mock","id":"id-vault","protection":"durable","attributes":{"size":2}}`
	backup := `{"version":1,"stack":"web","lineage":"L1","serial":3,"resources":{"vault":` + resource + `}}`
	for _, q := range []string{
		`CREATE SCHEMA ` + s,
		`CREATE TABLE ` + s + `.schema_version (version integer PRIMARY KEY, applied timestamptz NOT NULL DEFAULT now())`,
		strings.ReplaceAll(pgstore.MigrationTo1, "{{s}}", s),
		`INSERT INTO ` + s + `.schema_version (version) VALUES (1)`,
		`INSERT INTO ` + s + `.stacks (stack, lineage, serial, journal_seq, meta) VALUES ('web', 'L1', 3, 0, convert_to('` + meta + `', 'UTF8'))`,
		`INSERT INTO ` + s + `.resources (stack, name, body) VALUES ('web', 'vault', convert_to('` + resource + `', 'UTF8'))`,
		`INSERT INTO ` + s + `.revisions (stack, n, body) VALUES ('web', 1, convert_to('{"spec":"stack: web\n"}', 'UTF8'))`,
		`INSERT INTO ` + s + `.backups (stack, name, seq, taken, serial, lineage, body) VALUES ('web', 'op_old', 1, now(), 3, 'L1', convert_to('` + backup + `', 'UTF8'))`,
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	b := open(t, url, "web", state.Sealing{})
	if b.FoundVersion() != 1 {
		t.Fatalf("Open found schema version %d, want 1", b.FoundVersion())
	}
	st, err := b.Load(ctx)
	if err != nil || st.Serial != 3 || st.Resources["vault"] == nil || st.Resources["vault"].Protection != protection.Durable || st.Current != 1 || len(st.Revisions) != 1 {
		t.Fatalf("Load after the migration: %+v %v", st, err)
	}
	if rb, err := b.Revision(ctx, 1); err != nil || rb.Spec != "stack: web\n" {
		t.Fatalf("Revision after the migration: %+v %v", rb, err)
	}
	if bk, err := b.Backup(ctx, "op_old"); err != nil || bk.Resources["vault"] == nil || bk.Resources["vault"].Protection != protection.Durable {
		t.Fatalf("Backup after the migration: %+v %v", bk, err)
	}
	if _, err := conn.Exec(ctx, `UPDATE `+s+`.resources SET body = convert_to(replace(convert_from(body, 'UTF8'), '"durable"', '"ephemeral"'), 'UTF8')`); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Load(ctx); !errors.Is(err, storage.ErrIntegrity) {
		t.Fatalf("Load after a hand edit of a migrated row: %v, want ErrIntegrity", err)
	}
}

// TestReleaseFreesTheLockBeforeItReturns: once Release returns, nobody
// holds the lock, at once: a command run right after (status) must not see
// the stack locked by a holder with no row while the server ends the
// released connection's session. Many rounds, since without the explicit
// unlock the window is a moment long.
func TestReleaseFreesTheLockBeforeItReturns(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	a := open(t, url, "quick", state.Sealing{})
	b := open(t, url, "quick", state.Sealing{})
	for i := range 30 {
		w := lock(t, a, fmt.Sprintf("op_%d", i))
		if err := w.Release(ctx); err != nil {
			t.Fatal(err)
		}
		if h, err := b.Holder(ctx); err != nil || h != nil {
			t.Fatalf("round %d: right after Release, Holder says %+v, %v; want nobody", i, h, err)
		}
	}
}
