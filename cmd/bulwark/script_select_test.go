package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// Which scripts of testdata/script run on PostgreSQL and S3.
//
// Every script runs on the file backend (TestScripts). TestScriptsOnPostgres
// and TestScriptsOnS3 run only the scripts whose behaviour depends on where
// the state lives, each marked by a line of its own among its commands:
//
//	# backends: all
//
// The rest (spec checks, plan and apply output, providers, formatting, the
// local provider, …) go through the backend only to load and save a state,
// which the backends' conformance tests (backends/…, TestConformance) and
// the marked scripts cover on every backend; running them three times
// proved nothing more and took four minutes of CI.
//
// TestScriptBackendMarkers keeps the marker true: a script that uses what
// differs from one backend to another (backendSensitive) and lacks the
// marker fails it, naming the line, so no script loses its PostgreSQL and
// S3 runs silently; and a script that carries the marker but skips off the
// file backend fails it too.

// backendsMarker is the line that makes a script run on every backend.
const backendsMarker = "# backends: all"

// sensitiveSubcommands are the bulwark commands whose work is the
// backend's: the journal, the lock, the revisions and history, claims,
// sealed secrets, moving state. A script that runs one (anywhere in its
// arguments: flags may come first) needs the marker. `state list` and
// `state show` are only a view of the saved state, as every apply reads it;
// `state` with any other subcommand (forget, mv, migrate, …) needs it.
var sensitiveSubcommands = map[string]bool{
	"history":  true, // revisions and operations as the backend keeps them
	"resume":   true, // the journal, staged variables, the lock
	"rollback": true, // revisions (--to) and the journal
	"import":   true, // claims
	"secrets":  true, // rotate: sealed values rewritten in place
	"doctor":   true, // the journal, the lock, the state's checks
	"unlock":   true, // the lock
	"migrate":  true, // state between backends
	"ack":      true, // interventions in the journal
	"forget":   true, // claims and state records
}

// backendCommands are the script commands (runScripts' Cmds) that act on
// the backend itself.
var backendCommands = regexp.MustCompile(`^(pg-[a-z-]+|s3-[a-z-]+|hold-lock|release-lock|wait-lock|backend-dump|journal-has|state-hand-edit|state-protection)$`)

// backendWords in a command line are a backend named: a [backend:postgres]
// or [backend:s3] condition, or the variables that hold a script's place
// on a remote backend.
var backendWords = regexp.MustCompile(`\[!?backend:(postgres|s3)\]|\$\{?(BACKEND|POSTGRES|S3|S3_ENDPOINT|BULWARK_STATE)\b`)

// fileOnlyLine is a line that runs on the file backend alone.
var fileOnlyLine = regexp.MustCompile(`^\[backend:file\]`)

// fileOnlySkip is how a script says it is about the file backend alone.
var fileOnlySkip = regexp.MustCompile(`^\[!backend:file\]\s+skip\b`)

// scriptUse is what backendSensitive found in a script.
type scriptUse struct {
	marked   bool     // carries backendsMarker
	fileOnly bool     // skips off the file backend
	reasons  []string // LINE: why it depends on the backend
}

// backendSensitive reads a script's commands (its txtar comment, up to the
// first file) and says why it depends on the backend.
func backendSensitive(text string) scriptUse {
	var u scriptUse
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "-- ") && strings.HasSuffix(line, " --") {
			break // the archive's files
		}
		if line == backendsMarker {
			u.marked = true
			continue
		}
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if fileOnlySkip.MatchString(line) {
			u.fileOnly = true
			continue
		}
		if fileOnlyLine.MatchString(line) {
			continue // runs on the file backend alone
		}
		why := ""
		if m := backendWords.FindString(line); m != "" {
			why = m
		}
		words := scriptWords(line)
		if why == "" && len(words) > 0 && backendCommands.MatchString(words[0]) {
			why = words[0]
		}
		if why == "" && len(words) > 1 && (words[0] == "exec" || words[0] == "exits") {
			why = bulwarkSensitive(words[1:])
		}
		if why != "" {
			u.reasons = append(u.reasons, fmt.Sprintf("line %d: %s", n, why))
		}
	}
	return u
}

// bulwarkSensitive says which backend-dependent command the words of an
// exec or exits line run bulwark with ("" for none). bulwark may come
// after other words (exits CODE bulwark …, exec env X=Y bulwark …, exec sh
// -c '… bulwark …'), and flags may come before the command.
func bulwarkSensitive(words []string) string {
	at := -1
	for i, w := range words {
		if w == "bulwark" || strings.HasSuffix(w, "/bulwark") {
			at = i
			break
		}
	}
	if at < 0 {
		return ""
	}
	args := words[at+1:]
	for i, w := range args {
		if sensitiveSubcommands[w] {
			return "bulwark " + w
		}
		if w == "state" && i+1 < len(args) && args[i+1] != "list" && args[i+1] != "show" {
			return "bulwark state " + args[i+1]
		}
	}
	return ""
}

// scriptWords splits a script line into words, its leading conditions
// ([cond]) and negation (! or ?) dropped.
func scriptWords(line string) []string {
	for {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "["):
			i := strings.IndexByte(line, ']')
			if i < 0 {
				return nil
			}
			line = line[i+1:]
			continue
		case strings.HasPrefix(line, "!"), strings.HasPrefix(line, "?"):
			line = line[1:]
			continue
		}
		break
	}
	words := strings.Fields(line)
	for i, w := range words {
		words[i] = strings.Trim(w, `'"`)
	}
	return words
}

// markedScripts lists the scripts of dir that carry backendsMarker.
func markedScripts(t testing.TB, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	var marked []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if backendSensitive(string(b)).marked {
			marked = append(marked, f)
		}
	}
	sort.Strings(marked)
	if len(marked) == 0 {
		t.Fatalf("no script of %s carries %q: nothing would run on this backend", dir, backendsMarker)
	}
	return marked
}

// TestScriptBackendMarkers fails when a script that depends on the backend
// would run on the file backend alone, or a marked one skips off it.
func TestScriptBackendMarkers(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "script", "*.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no script in testdata/script")
	}
	var marked, fileOnly, plain []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimSuffix(filepath.Base(f), ".txtar")
		u := backendSensitive(string(b))
		switch {
		case u.marked && u.fileOnly:
			t.Errorf("%s: carries %q but skips off the file backend ([!backend:file] skip): drop one", f, backendsMarker)
		case u.marked:
			marked = append(marked, name)
		case u.fileOnly:
			fileOnly = append(fileOnly, name)
		case len(u.reasons) > 0:
			t.Errorf("%s depends on the backend (%s) but runs on the file backend alone: add a line %q among its commands",
				f, strings.Join(u.reasons, "; "), backendsMarker)
		default:
			plain = append(plain, name)
		}
	}
	t.Logf("every backend (%d): %s", len(marked), strings.Join(marked, " "))
	t.Logf("file backend only, by the marker's absence (%d): %s", len(plain), strings.Join(plain, " "))
	t.Logf("file backend only, skipping elsewhere (%d): %s", len(fileOnly), strings.Join(fileOnly, " "))
}

// TestBackendSensitive checks the rule TestScriptBackendMarkers applies on
// lines written for it.
func TestBackendSensitive(t *testing.T) {
	for _, c := range []struct {
		line string
		want bool
	}{
		{"exec bulwark apply --yes stack.yaml", false},
		{"exec bulwark plan stack.yaml", false},
		{"exec bulwark state list stack.yaml", false},
		{"exec bulwark --json state show stack.yaml web", false},
		{"[backend:file] exists .bulwark/web/state.json", false},
		{"exec bulwark history stack.yaml", true},
		{"exits 1 bulwark import --from alpha beta.yaml vault $VAULT_ID", true},
		{"exits 11 bulwark apply --yes crash.yaml", false},
		{"exec sh -c 'bulwark doctor stack.yaml >out'", true},
		{"stdout 'run bulwark resume'", false},
		{"! exec bulwark --state-dir ../shared resume ../stack.yaml", true},
		{"exec bulwark rollback --to 1 --yes stack.yaml", true},
		{"exec bulwark state forget --yes stack.yaml web", true},
		{"exec bulwark state mv --yes stack.yaml a b", true},
		{"exec bulwark state migrate --to $POSTGRES stack.yaml", true},
		{"exec bulwark secrets rotate --yes stack.yaml", true},
		{"exec bulwark doctor --json stack.yaml", true},
		{"[!backend:file] exec bulwark status stack.yaml", false},
		{"[backend:file] exits 1 bulwark history s3.yaml", false},
		{"[backend:postgres] stdout 'schema'", true},
		{"[backend:s3] exec bulwark status stack.yaml", true},
		{"hold-lock web apply", true},
		{"wait-lock web", true},
		{"backend-dump dump.txt", true},
		{"journal-has web '\"ack\"'", true},
		{"pg-exec 'SELECT 1'", true},
		{"env STATE=$BULWARK_STATE", true},
	} {
		u := backendSensitive(c.line + "\n-- stack.yaml --\nhistory: resume\n")
		if got := len(u.reasons) > 0; got != c.want {
			t.Errorf("%q: sensitive %v (%v), want %v", c.line, got, u.reasons, c.want)
		}
	}
	if u := backendSensitive("# backends: all\nexec bulwark apply\n"); !u.marked {
		t.Error("the marker line is not seen")
	}
	if u := backendSensitive("exec bulwark apply\n-- x --\n# backends: all\n"); u.marked {
		t.Error("a marker in an archived file counts")
	}
	if u := backendSensitive("[!backend:file] skip 'files only'\n"); !u.fileOnly {
		t.Error("the file-only skip is not seen")
	}
}
