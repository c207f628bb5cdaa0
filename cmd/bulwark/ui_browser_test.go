package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/bulwark-iac/bulwark/backends/pgstore/pgtest"
)

// The web view in a real browser: Debian's chromium, headless, driven over
// the DevTools protocol, loads every page of a real `bulwark ui` over a file
// backend holding a stack applied by the real binaries (one apply that
// succeeded, one whose step failed and was rolled back). It checks what a
// person sees through the DOM, that no page logs a console error, that the
// pages read the same with JavaScript disabled, and saves a full-page
// screenshot of each into $BULWARK_ARTIFACTS_DIR (else a temporary folder).

// chromiumPath finds the browser: $BULWARK_TEST_CHROMIUM, else chromium on
// PATH. Without one the test skips, except under CI=true, where a missing
// browser fails so that CI cannot pass without having run it.
func chromiumPath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("BULWARK_TEST_CHROMIUM"); p != "" {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("BULWARK_TEST_CHROMIUM=%s: %v", p, err)
		}
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	msg := "no chromium: set BULWARK_TEST_CHROMIUM or install it (Debian: apt-get install -y chromium) to run the browser tests"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg + " (CI=true: a browser test may not skip there)")
	}
	t.Skip(msg)
	return ""
}

// artifactsDir is where the screenshots go: $BULWARK_ARTIFACTS_DIR (CI keeps
// it) or a temporary folder.
func artifactsDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("BULWARK_ARTIFACTS_DIR")
	if dir == "" {
		return t.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// browserFixture applies a stack "shop" twice through the real binaries:
// first db (protected) and app, which succeeds; then the same plus cache,
// whose create the mock provider fails, so that apply exits 11 and is
// rolled back. It returns the state folder and the environment.
func browserFixture(t *testing.T, bin, plugins string, vars ...string) (stateDir string, env []string) {
	t.Helper()
	dir := t.TempDir()
	stateDir = filepath.Join(dir, "state")
	world := filepath.Join(dir, "world")
	env = uiEnv(t, vars...)
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(strings.ReplaceAll(text, "WORLD", world)), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	first := write("first.yaml", `version: 1
stack: shop
providers:
  mock: {config: {world: WORLD}}
resources:
  - name: db
    type: dynamodb_table
    protection: protected
    config: {table: orders}
  - name: app
    type: compute
    config: {tags: {db: "${db.id}"}}
`)
	second := write("second.yaml", `version: 1
stack: shop
providers:
  mock: {config: {world: WORLD, fail_create: [cache]}}
resources:
  - name: db
    type: dynamodb_table
    protection: protected
    config: {table: orders}
  - name: app
    type: compute
    config: {tags: {db: "${db.id}"}}
  - name: cache
    type: generic
`)
	// A stack of its own whose graph has a group: fleet's web instances.
	fleet := write("fleet.yaml", `version: 1
stack: fleet
providers:
  mock: {config: {world: WORLD-fleet}}
resources:
  - name: vault
    type: generic
    protection: protected
  - name: web
    type: compute
    for_each: [a, b, c]
    config: {tags: {vault: "${vault.id}"}}
`)
	runBulwark(t, bin, env, "--state-dir", stateDir, "--plugin-dir", plugins, "apply", "--yes", fleet)
	runBulwark(t, bin, env, "--state-dir", stateDir, "--plugin-dir", plugins, "apply", "--yes", first)
	cmd := exec.Command(bin, "--state-dir", stateDir, "--plugin-dir", plugins, "apply", "--yes", second)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 11 {
		t.Fatalf("the apply whose cache fails: %v, want exit 11\n%s", err, out)
	}
	return stateDir, env
}

// operationIDs reads the ids of the stack's succeeded and compensated
// operations from the view's own history document.
func operationIDs(t *testing.T, srv *uiServer, stack string) (okOp, failedOp string) {
	t.Helper()
	code, body := srv.get(t, "/api/stacks/"+stack+"/history")
	var h struct {
		Operations []struct {
			ID     string `json:"id"`
			Status string `json:"status"`
		} `json:"operations"`
	}
	if code != 200 {
		t.Fatalf("GET /api/stacks/%s/history: %d\n%s", stack, code, body)
	}
	if err := json.Unmarshal([]byte(body), &h); err != nil {
		t.Fatalf("the history document: %v\n%s", err, body)
	}
	for _, o := range h.Operations {
		switch o.Status {
		case "succeeded":
			okOp = o.ID
		case "compensated":
			failedOp = o.ID
		}
	}
	if okOp == "" || failedOp == "" {
		t.Fatalf("the history lacks a succeeded and a compensated operation:\n%s", body)
	}
	return okOp, failedOp
}

// pageCheck is one page and what a person must see on it: each selector's
// visible text must match its pattern.
type pageCheck struct {
	name string // the screenshot's name
	path string
	// ready is waited for (visible) before anything is read.
	ready string
	texts map[string]*regexp.Regexp
	// count: selectors and how many nodes each must match.
	count map[string]int
}

func TestUIInABrowser(t *testing.T) { uiInABrowser(t, chromiumPath(t), "") }

// TestUIInABrowserOnPostgres is the same over a PostgreSQL backend (a
// schema of its own on $BULWARK_TEST_POSTGRES_URL's server, else one
// started for the test; without one it skips, and fails when CI=true).
func TestUIInABrowserOnPostgres(t *testing.T) {
	chromium := chromiumPath(t)
	base := pgBase(t)
	schema := pgtest.Schema()
	u, err := pgtest.WithSchema(base, schema)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pgtest.DropSchema(base, schema) })
	uiInABrowser(t, chromium, "-postgres", envState+"="+u)
}

// TestUIInABrowserOnS3 is the same over an S3 backend: the emulator
// .ci/emulators.sh started ($BULWARK_TEST_S3_ENDPOINT), else one started
// for the test, a prefix of its own.
func TestUIInABrowserOnS3(t *testing.T) {
	chromium := chromiumPath(t)
	s3TestEnv(t)
	endpoint := crashS3Server(t)
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	u := "s3://team-state/ui-" + hex.EncodeToString(b[:]) + "?region=us-east-1&endpoint=" + url.QueryEscape(endpoint)
	vars := []string{envState + "=" + u}
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION", "AWS_EC2_METADATA_DISABLED"} {
		vars = append(vars, k+"="+os.Getenv(k))
	}
	uiInABrowser(t, chromium, "-s3", vars...)
}

// uiInABrowser loads every page of a view over a backend: the file one
// under a temporary folder, or the one vars name ($BULWARK_STATE) for the
// applies and the view alike; screenshots are named with suffix.
func uiInABrowser(t *testing.T, chromium, suffix string, vars ...string) {
	bin, plugins := builtBulwark(t), buildPlugins(t)
	stateDir, env := browserFixture(t, bin, plugins, vars...)
	srv := startUI(t, bin, stateDir, env)
	okOp, failedOp := operationIDs(t, srv, "shop")
	shots := artifactsDir(t)

	re := regexp.MustCompile
	opRow := func(id string) string {
		return `//table[contains(@class,"operations")]//tr[td[1]/a[normalize-space()="` + id + `"]]`
	}
	resRow := func(name string) string {
		return `//table[contains(@class,"resources")]//tr[normalize-space(td[1])="` + name + `"]`
	}
	pages := []pageCheck{{
		name:  "stacks",
		path:  "/",
		ready: `//table//a[normalize-space()="shop"]`,
		texts: map[string]*regexp.Regexp{
			`//h1`: re(`^Stacks$`),
			`//tr[td[1]/a[normalize-space()="shop"]]/td[2]`: re(`^2$`),
			`//tr[td[1]/a[normalize-space()="shop"]]/td[5]`: re(`^update compensated `),
			`//tr[td[1]/a[normalize-space()="shop"]]/td[6]`: re(`^free$`),
		},
	}, {
		name:  "stack",
		path:  "/stacks/shop",
		ready: `//table[contains(@class,"resources")]`,
		texts: map[string]*regexp.Regexp{
			`//h1`:                   re(`^shop$`),
			`//h2`:                   re(`^Resources \(2\)$`),
			resRow("db") + `/td[4]`:  re(`^protected$`),
			resRow("db") + `/td[5]`:  re(`^created$`),
			resRow("app") + `/td[4]`: re(`^[a-z]+$`),
			resRow("app") + `/td[2]`: re(`^compute$`),
			resRow("db") + `//span[contains(@class,"l-protected")]`: re(`^protected$`),
		},
		count: map[string]int{
			resRow("cache"): 0, // its create failed and was rolled back
			resRow("app") + `//span[contains(@class,"l-protected")]`: 0,
		},
	}, {
		name:  "history",
		path:  "/stacks/shop/history",
		ready: `//table[contains(@class,"operations")]`,
		texts: map[string]*regexp.Regexp{
			`//h1`:                     re(`^shop: history$`),
			opRow(okOp) + `/td[2]`:     re(`^apply$`),
			opRow(okOp) + `/td[4]`:     re(`^succeeded$`),
			opRow(okOp) + `/td[5]`:     re(`^0$`),
			opRow(failedOp) + `/td[2]`: re(`^update$`),
			opRow(failedOp) + `/td[4]`: re(`^compensated$`),
			opRow(failedOp) + `/td[5]`: re(`^11$`),
			opRow(failedOp) + `/td[8]`: re(`cache`),
		},
		count: map[string]int{`//table[contains(@class,"operations")]/tbody/tr`: 2},
	}, {
		name:  "operation-failed",
		path:  "/stacks/shop/operations/" + failedOp,
		ready: `//ol[contains(@class,"timeline")]`,
		texts: map[string]*regexp.Regexp{
			`//h1`: re(`^update ` + regexp.QuoteMeta(failedOp) + `$`),
			`//div[@id="timeline"]/p/span[contains(@class,"status")]`: re(`^compensated$`),
			// The failed step's row: its label names cache and says failed.
			`//li[contains(@class,"row-failed")]/span[contains(@class,"label")]`:         re(`^cache .*failed undone$`), // its own failure undid it
			`//li[contains(@class,"row-failed")]//strong[contains(@class,"failed")]`:     re(`^failed$`),
			`//table[contains(@class,"steps")]//tr[contains(@class,"row-failed")]/td[3]`: re(`^failed$`),
		},
		count: map[string]int{
			// Exactly one step failed, and its bar is drawn red.
			`//li[contains(@class,"row-failed")]`: 1,
			`//li[contains(@class,"row-failed")]//*[local-name()="rect" and contains(@class,"failed-bar")]`: 1,
		},
	}, {
		name:  "operation-succeeded",
		path:  "/stacks/shop/operations/" + okOp,
		ready: `//ol[contains(@class,"timeline")]`,
		texts: map[string]*regexp.Regexp{
			`//div[@id="timeline"]/p/span[contains(@class,"status")]`:     re(`^succeeded$`),
			`//table[contains(@class,"critical")]/tbody/tr[last()]/td[1]`: re(`^app$`),
		},
		count: map[string]int{
			`//li[contains(@class,"row-failed")]`: 0,
			// one row per step (db, app) and the axis row.
			`//ol[contains(@class,"timeline")]/li`: 3,
		},
	}, {
		// The graph page draws from the state's records: the CLI keeps the
		// revision's spec sealed and the view holds no key.
		name:  "graph",
		path:  "/stacks/shop/graph",
		ready: svgNode("db", true),
		texts: map[string]*regexp.Regexp{
			`//h1`: re(`^shop: dependency graph$`),
		},
		count: map[string]int{
			svgNode("db", true):   1,
			svgNode("app", false): 1,
			svgNode("app", true):  0,
			// app refers to db.id: the arrow app → db.
			`//*[local-name()="g" and contains(@class,"edge")][*[local-name()="title" and normalize-space()="app->db"]]`: 1,
			svgNode("cache", false): 0, // rolled back
		},
	}}

	// The heading names the backend the view reads: the one vars chose.
	scheme := "file"
	if suffix != "" {
		scheme = strings.TrimPrefix(suffix, "-")
	}
	pages[0].texts[`//header/span[contains(@class,"where")]`] = re(`^` + scheme + `://`)

	// One headless browser for the whole test.
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(t.Context(),
		append(chromedp.DefaultExecAllocatorOptions[:],
			chromedp.ExecPath(chromium),
			chromedp.Headless,
			chromedp.NoSandbox,
			chromedp.DisableGPU,
			chromedp.WindowSize(1280, 900),
		)...)
	defer cancelAlloc()
	browserCtx, cancelBrowser := chromedp.NewContext(allocCtx)
	defer cancelBrowser()
	// The first Run starts the browser; it lives as long as browserCtx, so
	// no deadline on this call.
	if err := chromedp.Do(browserCtx); err != nil {
		t.Fatalf("starting %s: %v", chromium, err)
	}

	for _, js := range []bool{true, false} {
		for _, pc := range pages {
			label := pc.name
			if !js {
				label += "-nojs"
			}
			t.Run(label, func(t *testing.T) {
				loadAndCheck(t, browserCtx, srv.url, pc, js, filepath.Join(shots, "ui-"+label+suffix+".png"))
			})
		}
	}

	// The graph's groups are links: fleet's web instances, collapsed, are
	// one box; a click on it draws them (?expand=), and the expanded
	// group's link collapses them again. No script: JavaScript is off.
	t.Run("graph-expand", func(t *testing.T) {
		tabCtx, cancelTab := chromedp.NewContext(browserCtx)
		defer cancelTab()
		if err := chromedp.Do(tabCtx); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(tabCtx, 90*time.Second)
		defer cancel()
		if _, err := chromedp.Call(ctx, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true}); err != nil {
			t.Fatalf("disabling JavaScript: %v", err)
		}
		group := `//*[local-name()="svg"]//*[local-name()="g" and contains(@class,"group")][*[local-name()="title" and normalize-space()="group:web[*]"]]//*[local-name()="a"]//*[local-name()="text"][1]`
		if err := chromedp.Do(ctx, chromedp.Navigate(srv.url+"/stacks/fleet/graph?collapse=all"), chromedp.WaitVisible(group),
			chromedp.Click(group), chromedp.WaitVisible(svgNode("web[b]", false))); err != nil {
			t.Fatalf("expanding web[*] by its link: %v", err)
		}
		loc, err := chromedp.Run(ctx, chromedp.Location())
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(loc, "expand=web%5B%2A%5D") {
			t.Errorf("the group's link led to %s, want ?expand=web[*]", loc)
		}
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(shots, "ui-graph-expanded"+suffix+".png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
		for sel, want := range map[string]int{
			svgNode("web[a]", false): 1, svgNode("web[c]", false): 1, svgNode("vault", true): 1,
			// the cluster's link back, to the page without ?expand=
			`//*[local-name()="g" and contains(@class,"cluster")]//*[local-name()="a" and @*[local-name()="href"]="/stacks/fleet/graph?collapse=all"]`: 1,
		} {
			nodes, err := chromedp.Run(ctx, chromedp.Nodes(sel, chromedp.AtLeast(0)))
			if err != nil || len(nodes) != want {
				t.Errorf("%d node(s) match %s (%v), want %d", len(nodes), sel, err, want)
			}
		}
	})

	// A running operation's page, JavaScript on: new bars appear as the
	// journal is written, and the end swaps in the outcome.
	t.Run("operation-live", func(t *testing.T) {
		liveCheck(t, browserCtx, bin, plugins, env, filepath.Join(shots, "ui-operation-live"+suffix+".png"))
	})

	// A saved plan's review page (show FILE --html), opened as the file a
	// reviewer is sent: the replacement is named with what it deletes (a
	// file: the same whatever the backend, so once).
	t.Run("plan", func(t *testing.T) {
		if suffix != "" {
			t.Skip("a saved plan's page is a file: TestUIInABrowser opens it")
		}
		planDir := reviewPlan(t, bin, plugins, env)
		pc := pageCheck{
			name:  "plan",
			path:  "/plan.html",
			ready: `//h1`,
			texts: map[string]*regexp.Regexp{
				`//h1`: re(`^Plan for stack review$`),
				`//h2[starts-with(normalize-space(), "Replacements")]`:                            re(`^Replacements \(1\)$`),
				`//h2[starts-with(normalize-space(), "Replacements")]/following-sibling::*[1]/li`: re(`^app \(compute, ephemeral\): deletes the current app \(id mock-compute-app-[0-9a-f]+\): last`),
			},
			count: map[string]int{`//section[contains(@class, "a-replace")]`: 1},
		}
		loadAndCheck(t, browserCtx, "file://"+planDir, pc, true, filepath.Join(shots, "ui-plan.png"))
		// The same page served by the view (bulwark ui --plan), in its
		// layout, and the stacks list linking to it.
		psrv := startUI(t, bin, filepath.Join(planDir, "state"), env, "--plan", filepath.Join(planDir, "p.plan"))
		pc.name, pc.path = "plan-served", "/plans/1"
		loadAndCheck(t, browserCtx, psrv.url, pc, true, filepath.Join(shots, "ui-plan-served.png"))
		loadAndCheck(t, browserCtx, psrv.url, pageCheck{
			name:  "plans-listed",
			path:  "/",
			ready: `//h2[normalize-space()="Saved plans"]`,
			texts: map[string]*regexp.Regexp{
				`//table[contains(@class,"plans")]/tbody/tr[1]/td[5]`: re(`^0 to create, 0 to update, 1 to replace, 0 to delete$`),
			},
			count: map[string]int{`//table[contains(@class,"plans")]//a[@href="/plans/1"]`: 1},
		}, true, filepath.Join(shots, "ui-plans-listed.png"))
	})

	// A view with a token: the page given ?token= loads what it names (its
	// style and icon) with the token too, so the browser logs no 401.
	t.Run("token", func(t *testing.T) {
		const token = "br0wser-t0ken-5678"
		tsrv := startUI(t, bin, stateDir, append(env[:len(env):len(env)], "BULWARK_UI_TOKEN="+token))
		pc := pages[1]
		pc.path += "?token=" + token
		loadAndCheck(t, browserCtx, tsrv.url, pc, true, filepath.Join(shots, "ui-stack-token"+suffix+".png"))
	})
}

// svgNode selects the graph's drawn node for resource name, protected
// (its class says so, and it is filled red with a lock) or not.
func svgNode(name string, protected bool) string {
	cls := `not(contains(concat(" ",@class," ")," protected "))`
	if protected {
		cls = `contains(concat(" ",@class," ")," protected ")`
	}
	return `//*[local-name()="svg"]//*[local-name()="g" and contains(@class,"node") and ` + cls + `][*[local-name()="title" and normalize-space()="` + name + `"]]`
}

// loadAndCheck opens pc in a new tab (JavaScript on or off), waits until it
// is drawn, checks its texts and counts, saves a full-page screenshot at
// shot, and fails on any console message of level error.
func loadAndCheck(t *testing.T, browserCtx context.Context, base string, pc pageCheck, js bool, shot string) {
	tabCtx, cancelTab := chromedp.NewContext(browserCtx)
	defer cancelTab()
	// Open the tab (no deadline on the first Run of a context) and subscribe
	// to its console before the page loads.
	if err := chromedp.Do(tabCtx); err != nil {
		t.Fatal(err)
	}
	var (
		mu       sync.Mutex
		problems []string
	)
	msgs := chromedp.Console(tabCtx)
	listening := make(chan struct{})
	go func() {
		defer close(listening)
		for m, err := range msgs {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.IsException() {
				mu.Lock()
				problems = append(problems, m.String()+" at "+m.URL)
				mu.Unlock()
			}
		}
	}()

	ctx, cancel := context.WithTimeout(tabCtx, 90*time.Second)
	defer cancel()
	if !js {
		if _, err := chromedp.Call(ctx, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true}); err != nil {
			t.Fatalf("disabling JavaScript: %v", err)
		}
	}
	url := strings.TrimSuffix(base, "/") + pc.path
	if err := chromedp.Do(ctx, chromedp.Navigate(url), chromedp.WaitVisible(pc.ready)); err != nil {
		t.Fatalf("loading %s: %v", url, err)
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot of %s: %v", url, err)
	}
	if err := os.WriteFile(shot, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: screenshot %s", url, shot)

	for sel, want := range pc.texts {
		got, err := chromedp.Run(ctx, chromedp.Text(sel))
		if err != nil {
			t.Errorf("%s: reading %s: %v", url, sel, err)
			continue
		}
		if got = strings.Join(strings.Fields(got), " "); !want.MatchString(got) {
			t.Errorf("%s: %s reads %q, want %s", url, sel, got, want)
		}
	}
	for sel, want := range pc.count {
		// AtLeast(0): a count of none is an answer, not a wait.
		nodes, err := chromedp.Run(ctx, chromedp.Nodes(sel, chromedp.AtLeast(0)))
		if err != nil {
			t.Errorf("%s: finding %s: %v", url, sel, err)
			continue
		}
		if len(nodes) != want {
			t.Errorf("%s: %d node(s) match %s, want %d", url, len(nodes), sel, want)
		}
	}

	cancelTab()
	<-listening
	mu.Lock()
	defer mu.Unlock()
	for _, p := range problems {
		t.Errorf("%s: console: %s", url, p)
	}
}

// reviewPlan applies a stack review whose compute app then moves zone (a
// replacement), saves that plan and writes it as plan.html with show
// --html, in a folder of its own it returns.
func reviewPlan(t *testing.T, bin, plugins string, env []string) string {
	t.Helper()
	dir := t.TempDir()
	v1 := "version: 1\nstack: review\nproviders:\n  mock: {config: {world: " + filepath.Join(dir, "world") + "}}\nresources:\n  - name: app\n    type: compute\n    config: {zone: z1}\n  - name: keep\n    type: generic\n    protection: protected\n"
	for name, text := range map[string]string{"v1.yaml": v1, "v2.yaml": strings.Replace(v1, "zone: z1", "zone: z2", 1)} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	state := filepath.Join(dir, "state")
	runBulwark(t, bin, env, "--state-dir", state, "--plugin-dir", plugins, "apply", "--yes", filepath.Join(dir, "v1.yaml"))
	runBulwark(t, bin, env, "--state-dir", state, "--plugin-dir", plugins, "plan", filepath.Join(dir, "v2.yaml"), "--out", filepath.Join(dir, "p.plan"))
	cmd := exec.Command(bin, "--state-dir", state, "--plugin-dir", plugins, "show", filepath.Join(dir, "p.plan"), "--html")
	cmd.Env = env
	page, err := cmd.Output()
	if err != nil {
		t.Fatalf("show --html: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "plan.html"), page, 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// liveCheck starts an apply (the real binary, one step at a time) whose
// every Create the mock holds until the test lets it go, opens its
// operation's page while the first is held, lets that one go and waits
// (each wait with a deadline), while the next is held, until a bar more
// than the page had appears with the page still saying running; then it
// lets the rest go and waits until the page says succeeded: the page
// followed the journal without a reload, however loaded the machine.
func liveCheck(t *testing.T, browserCtx context.Context, bin, plugins string, env []string, shot string) {
	dir := t.TempDir()
	stateDir := filepath.Join(dir, "state")
	spec := filepath.Join(dir, "slow.yaml")
	var b strings.Builder
	b.WriteString("version: 1\nstack: slow\nproviders:\n  mock: {config: {world: " + filepath.Join(dir, "world") + "}}\nresources:\n")
	var creates []string
	for _, n := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
		b.WriteString("  - name: " + n + "\n    type: generic\n")
		creates = append(creates, "Create-"+n+"-1")
	}
	if err := os.WriteFile(spec, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := startUI(t, bin, stateDir, env)
	h := holdCalls(t, creates...)
	// others is creates but those given.
	others := func(but ...string) []string {
		var out []string
		for _, c := range creates {
			if !slices.Contains(but, c) {
				out = append(out, c)
			}
		}
		return out
	}
	apply := exec.Command(bin, "--state-dir", stateDir, "--plugin-dir", plugins, "apply", "--yes", "--parallelism", "1", spec)
	apply.Env = append(append([]string{}, env...), h.env())
	var out strings.Builder
	apply.Stdout, apply.Stderr = &out, &out
	if err := apply.Start(); err != nil {
		t.Fatal(err)
	}
	applied := make(chan error, 1)
	go func() { applied <- apply.Wait() }()
	defer func() {
		for _, c := range creates {
			_ = os.Remove(filepath.Join(h.dir, c+".hold")) // whatever a failure left held
		}
		select {
		case err := <-applied:
			if err != nil {
				t.Errorf("the held apply: %v\n%s", err, out.String())
			}
		case <-time.After(3 * time.Minute):
			_ = apply.Process.Kill()
			t.Errorf("the held apply did not end in 3 minutes after its calls were let go:\n%s", out.String())
		}
	}()
	// The first step's Create is in flight, and stays so.
	first := h.anyBegun(creates...)

	// The running operation's id, from the view (polled with a deadline).
	var op string
	for deadline := time.Now().Add(2 * time.Minute); op == "" && time.Now().Before(deadline); {
		code, body := srv.get(t, "/api/stacks/slow")
		if code == 404 {
			continue // its folder is not there yet
		}
		var st struct {
			Running []string `json:"running"`
		}
		if code != 200 || json.Unmarshal([]byte(body), &st) != nil {
			t.Fatalf("GET /api/stacks/slow: %d\n%s", code, body)
		}
		if len(st.Running) == 1 {
			op = st.Running[0]
		}
	}
	if op == "" {
		t.Fatalf("the view never showed the slow apply running:\n%s", out.String())
	}

	tabCtx, cancelTab := chromedp.NewContext(browserCtx)
	defer cancelTab()
	if err := chromedp.Do(tabCtx); err != nil {
		t.Fatal(err)
	}
	var (
		mu       sync.Mutex
		problems []string
	)
	listening := make(chan struct{})
	go func() {
		defer close(listening)
		for m, err := range chromedp.Console(tabCtx) {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.IsException() {
				mu.Lock()
				problems = append(problems, m.String()+" at "+m.URL)
				mu.Unlock()
			}
		}
	}()
	ctx, cancel := context.WithTimeout(tabCtx, 3*time.Minute)
	defer cancel()
	url := srv.url + "/stacks/slow/operations/" + op
	status := `//div[@id="timeline"]/p/span[contains(@class,"status")]`
	bars := `//div[@id="timeline"]//*[local-name()="rect"]`
	// The page's script replaces the timeline with the one the stream
	// sends first, and marks it live: read the status once that is done,
	// not from the node the replacement may detach while it is read (a
	// read that raced it came back "").
	live := `//div[@id="timeline"]/p/span[contains(@class,"live-note") and contains(., "live")]`
	if err := chromedp.Do(ctx, chromedp.Navigate(url), chromedp.WaitVisible(live)); err != nil {
		t.Fatalf("loading %s and waiting for its live timeline: %v", url, err)
	}
	loaded, err := chromedp.Run(ctx, chromedp.Text(status))
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := chromedp.Run(ctx, chromedp.Nodes(bars, chromedp.AtLeast(0)))
	if err != nil {
		t.Fatal(err)
	}
	if loaded != "running" {
		t.Fatalf("%s loaded as %q while the Create %s was held, want running", url, loaded, first)
	}
	// Let the first Create go: its step ends and the next one's Create is
	// in flight, held. Wait for one bar more than the page was drawn with:
	// an XPath that matches only once it is there (chromedp polls the
	// DOM); the operation is still running, and the page says so.
	h.release(first)
	second := h.anyBegun(others(first)...)
	more := fmt.Sprintf("(%s)[%d]", bars, len(nodes)+1)
	if err := chromedp.Do(ctx, chromedp.WaitReady(more)); err != nil {
		t.Fatalf("%s: no new bar after the %d it was drawn with (%s done, %s held): %v", url, len(nodes), first, second, err)
	}
	if now, err := chromedp.Run(ctx, chromedp.Text(status)); err != nil || now != "running" {
		t.Fatalf("%s: with %s held the page says %q (%v), want running", url, second, now, err)
	}
	for _, c := range others(first) {
		h.release(c)
	}
	done := status + `[normalize-space()="succeeded"]`
	if err := chromedp.Do(ctx, chromedp.WaitReady(done), chromedp.WaitNotPresent(`//div[@id="timeline" and @data-live]`)); err != nil {
		t.Fatalf("%s: the page never said succeeded: %v", url, err)
	}
	rows, err := chromedp.Run(ctx, chromedp.Nodes(`//ol[contains(@class,"timeline")]/li[contains(@class,"row") and not(contains(@class,"ticks"))]`, chromedp.AtLeast(0)))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 8 {
		t.Errorf("%s: the finished timeline has %d step rows, want 8 (a to h)", url, len(rows))
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(shot, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: screenshot %s", url, shot)
	cancelTab()
	<-listening
	mu.Lock()
	defer mu.Unlock()
	for _, p := range problems {
		t.Errorf("%s: console: %s", url, p)
	}
}
