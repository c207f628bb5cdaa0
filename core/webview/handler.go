// Package webview serves bulwark's read-only web view of the stacks on a
// backend (`bulwark ui`): the stacks, a stack's resources, its history, and
// one operation as a timeline of its steps (live.go streams a running one),
// each page also as JSON under /api; a stack's dependency graph (graph.go);
// and saved plans as review pages (plan.go, also `show FILE --html`). It
// reads through a Source (package inspect's readers: no lock, no
// write, no key) and masks exactly as --json does: the reports it renders
// are the read-only commands' own, sensitive values already
// secrets.Mask, and every answer passes through the command's redactor.
package webview

import (
	"bytes"
	"context"
	"crypto/subtle"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/bulwark-iac/bulwark/core/parallel"
	"github.com/bulwark-iac/bulwark/core/secrets"
	"github.com/bulwark-iac/bulwark/core/stack"
	"github.com/bulwark-iac/bulwark/core/state"
)

//go:embed assets
var assets embed.FS

// Options configure the handler.
type Options struct {
	// Token, when set, must come with every request: the header
	// "Authorization: Bearer TOKEN" or the query ?token=TOKEN. Without
	// it, only requests naming a loopback host are answered (a web page
	// elsewhere cannot reach the view through DNS rebinding).
	Token string
	// Redactor masks the sensitive values the command knows in every
	// answer, as it does every line bulwark prints (default: a new one).
	Redactor *secrets.Redactor
	// Location says which backend the view shows (its heading).
	Location string
	// PollInterval is how often a running operation's event stream reads
	// the journal again (default DefaultPollInterval).
	PollInterval time.Duration
	// Plans are the saved plans the view serves, the first at /plans/1:
	// each opened once, when the command starts, as `show FILE --json`
	// opens it.
	Plans []SavedPlan
	// Graphviz finds the program that lays the graph page out (default
	// graphsvg.Program: bulwark-graphviz beside the running executable),
	// asked once, on the first graph page requested.
	Graphviz func() (string, error)
}

type handler struct {
	graphs *graphs
	src    Source
	opts   Options
	pages  map[string]*template.Template
	mux    *http.ServeMux
}

// New returns the view's handler over src. It answers GET and HEAD alone.
func New(src Source, opts Options) http.Handler {
	if opts.Redactor == nil {
		opts.Redactor = secrets.NewRedactor()
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = DefaultPollInterval
	}
	h := &handler{src: src, opts: opts, pages: parsePages(), mux: http.NewServeMux(), graphs: &graphs{find: opts.Graphviz}}
	h.mux.HandleFunc("GET /static/view.css", func(w http.ResponseWriter, _ *http.Request) {
		css, _ := assets.ReadFile("assets/view.css")
		w.Header().Set("Content-Type", "text/css; charset=utf-8")
		_, _ = w.Write(css)
	})
	// The pages name this icon, so a browser asks for it (with the page's
	// token) and not for /favicon.ico, which would be a 404 (or, behind a
	// token, a 401) in its console.
	h.mux.HandleFunc("GET /static/icon.svg", func(w http.ResponseWriter, _ *http.Request) {
		icon, _ := assets.ReadFile("assets/icon.svg")
		w.Header().Set("Content-Type", "image/svg+xml")
		_, _ = w.Write(icon)
	})
	// The one script: a running operation's page follows its events.
	h.mux.HandleFunc("GET /static/live.js", func(w http.ResponseWriter, _ *http.Request) {
		js, _ := assets.ReadFile("assets/live.js")
		w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
		_, _ = w.Write(js)
	})
	h.mux.HandleFunc("GET /{$}", h.page("stacks", h.stacks))
	h.mux.HandleFunc("GET /api/stacks", h.api(h.stacks))
	h.mux.HandleFunc("GET /stacks/{stack}", h.page("stack", h.stack))
	h.mux.HandleFunc("GET /api/stacks/{stack}", h.api(h.stack))
	h.mux.HandleFunc("GET /stacks/{stack}/history", h.page("history", h.history))
	h.mux.HandleFunc("GET /api/stacks/{stack}/history", h.api(h.history))
	h.mux.HandleFunc("GET /stacks/{stack}/operations/{op}", h.page("operation", h.operation))
	h.mux.HandleFunc("GET /api/stacks/{stack}/operations/{op}", h.api(h.operation))
	h.mux.HandleFunc("GET /stacks/{stack}/operations/{op}/events", h.events)
	h.mux.HandleFunc("GET /stacks/{stack}/graph", h.page("graph", h.graph))
	h.mux.HandleFunc("GET /api/stacks/{stack}/graph", h.api(h.graph))
	h.mux.HandleFunc("GET /plans/{n}", h.page("plan", h.plan))
	h.mux.HandleFunc("GET /api/plans/{n}", h.planDoc)
	return h
}

// funcs are the helpers every page's template may call.
func funcs() template.FuncMap {
	return template.FuncMap{
		"when": func(t time.Time) string {
			if t.IsZero() {
				return ""
			}
			return t.UTC().Format("2006-01-02 15:04:05")
		},
		"dur": func(d time.Duration) string {
			if d < time.Millisecond {
				return d.Round(time.Microsecond).String()
			}
			return d.Round(time.Millisecond).String()
		},
		"value": func(v any) string {
			b, err := json.Marshal(v)
			if err != nil {
				return fmt.Sprint(v)
			}
			return string(b)
		},
		"pct": func(f float64) string { return fmt.Sprintf("%.3f%%", f) },
		"exit": func(p *int) string {
			if p == nil {
				return "–"
			}
			return fmt.Sprint(*p)
		},
	}
}

func parsePages() map[string]*template.Template {
	pages := map[string]*template.Template{}
	// "plan" is the saved plan's page (PlanPage), which RenderPlan also
	// writes as one file. partials.html holds the templates more than one
	// page calls (the saved plans' table).
	for _, name := range []string{"stacks", "stack", "history", "operation", "plan", "graph"} {
		pages[name] = template.Must(template.New("layout.html").Funcs(funcs()).ParseFS(assets, "assets/layout.html", "assets/partials.html", "assets/"+name+".html"))
	}
	return pages
}

// ServeHTTP checks the token (or, without one, the loopback host), then
// serves the page with headers that keep it to itself.
func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd.Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; img-src 'self'; script-src 'self'; connect-src 'self'; form-action 'none'; frame-ancestors 'none'")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "no-referrer") // a ?token= never leaves in a Referer
	hd.Set("Cache-Control", "no-store")
	if h.opts.Token != "" {
		if !h.authorized(r) {
			hd.Set("WWW-Authenticate", `Bearer realm="bulwark"`)
			http.Error(w, "401 unauthorized: this view needs its token (the header Authorization: Bearer TOKEN, or ?token=TOKEN); `bulwark ui` printed it when it started", http.StatusUnauthorized)
			return
		}
	} else if !loopbackHost(r.Host) {
		http.Error(w, "403 forbidden: without --token this view answers only requests to a loopback host (127.0.0.1, ::1, localhost)", http.StatusForbidden)
		return
	}
	h.mux.ServeHTTP(w, r)
}

func (h *handler) authorized(r *http.Request) bool {
	given := r.URL.Query().Get("token")
	if a := r.Header.Get("Authorization"); strings.HasPrefix(a, "Bearer ") {
		given = strings.TrimPrefix(a, "Bearer ")
	}
	return subtle.ConstantTimeCompare([]byte(given), []byte(h.opts.Token)) == 1
}

func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// loader builds one page's document from the request.
type loader func(ctx context.Context, r *http.Request) (any, error)

func (h *handler) stacks(ctx context.Context, _ *http.Request) (any, error) {
	names, err := h.src.Stacks(ctx)
	if err != nil {
		return nil, err
	}
	p := &StacksPage{FormatVersion: FormatVersion, Stacks: make([]StackRow, len(names))}
	err = parallel.ForEach(ctx, len(names), readsAtOnce, func(ctx context.Context, i int) error {
		row := StackRow{Name: names[i]}
		st, err := h.src.Status(ctx, names[i])
		if err != nil {
			row.Error = err.Error()
		} else {
			row.Resources, row.Revision, row.Interventions = len(st.Resources), st.Revision, len(st.Interventions)
			row.LastOperation, row.Locked = st.LastOp, st.LockLive
		}
		p.Stacks[i] = row
		return nil
	})
	if err != nil {
		return nil, err
	}
	p.Plans = h.planRows("")
	return p, nil
}

// readsAtOnce is how many stacks a page reads at once (the stacks page
// their statuses, a stack's page the others' resources for its
// conflicts): each read is a backend opened and read, on PostgreSQL a
// session of its own, about 30 ms of waiting that the next need not queue
// behind.
const readsAtOnce = 4

func (h *handler) stack(ctx context.Context, r *http.Request) (any, error) {
	name := r.PathValue("stack")
	st, err := h.src.Status(ctx, name)
	if err != nil {
		return nil, err
	}
	rs, err := h.src.Resources(ctx, name)
	if err != nil {
		return nil, err
	}
	p := newStackPage(st, rs)
	if err := h.conflicts(ctx, name, rs, p); err != nil {
		return nil, err
	}
	p.Plans = h.planRows(name)
	return p, nil
}

// conflicts marks each of the stack's resources that another stack on the
// backend also records (the claims registry: stack.claimedElsewhere's
// rule, same provider source, type and id). A resource whose id is sealed
// or masked is not compared. Another stack whose state cannot be read is
// named in ClaimProblems, not an error: the page still shows this one.
func (h *handler) conflicts(ctx context.Context, name string, rs []*state.Resource, p *StackPage) error {
	names, err := h.src.Stacks(ctx)
	if err != nil {
		return err
	}
	comparable := func(r *state.Resource) bool {
		return r.ID != "" && r.ID != secrets.Mask && !secrets.IsSealed(r.ID)
	}
	byID := map[string][]int{}
	for i, r := range rs {
		if comparable(r) {
			byID[r.ID] = append(byID[r.ID], i)
		}
	}
	if len(byID) == 0 {
		return nil
	}
	var others []string
	for _, n := range names {
		if n != name {
			others = append(others, n)
		}
	}
	read := make([][]*state.Resource, len(others))
	problems := make([]error, len(others))
	err = parallel.ForEach(ctx, len(others), readsAtOnce, func(ctx context.Context, i int) error {
		read[i], problems[i] = h.src.Resources(ctx, others[i])
		return nil
	})
	if err != nil {
		return err
	}
	for i, other := range others {
		ors, err := read[i], problems[i]
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			p.ClaimProblems = append(p.ClaimProblems, fmt.Sprintf("stack %s: %v", other, err))
			continue
		}
		for _, o := range ors {
			if !comparable(o) || o.DeposedFrom != "" {
				continue
			}
			for _, i := range byID[o.ID] {
				r := rs[i]
				if r.DeposedFrom == "" && r.Type == o.Type && stack.SameSource(r.Source, o.Source) {
					p.Resources[i].Conflicts = append(p.Resources[i].Conflicts, Claim{Stack: other, Address: o.Name})
				}
			}
		}
	}
	for _, r := range p.Resources {
		if len(r.Conflicts) > 0 {
			p.Conflicts++
		}
	}
	return nil
}

func (h *handler) history(ctx context.Context, r *http.Request) (any, error) {
	rep, err := h.src.History(ctx, r.PathValue("stack"))
	if err != nil {
		return nil, err
	}
	return newHistoryPage(rep), nil
}

// errNoOperation is a 404: the journal holds no record of the operation.
var errNoOperation = errors.New("no such operation in the stack's journal")

func (h *handler) operation(ctx context.Context, r *http.Request) (any, error) {
	p, _, err := h.timeline(ctx, r.PathValue("stack"), r.PathValue("op"))
	if err != nil {
		return nil, err
	}
	return p, nil
}

// view is what every page's template is given.
type view struct {
	Location string
	// Q is what every link carries: ?token=… when the request gave it so
	// (a browser sends no header of its own accord).
	Q    template.URL
	Page any
}

func (h *handler) page(name string, load loader) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		doc, err := load(withStackList(r.Context()), r)
		if err != nil {
			h.fail(w, err)
			return
		}
		v := view{Location: h.opts.Location, Q: h.query(r), Page: doc}
		var b bytes.Buffer
		if err := h.pages[name].Execute(&b, v); err != nil {
			h.fail(w, fmt.Errorf("render %s: %w", name, err))
			return
		}
		h.write(w, "text/html; charset=utf-8", b.Bytes())
	}
}

// query is what every link of a page carries: ?token=… when the request
// gave it so.
func (h *handler) query(r *http.Request) template.URL {
	if t := r.URL.Query().Get("token"); t != "" && h.opts.Token != "" {
		return template.URL("?token=" + url.QueryEscape(t))
	}
	return ""
}

func (h *handler) api(load loader) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		doc, err := load(withStackList(r.Context()), r)
		if err != nil {
			h.fail(w, err)
			return
		}
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false) // as --json: <, > and & stay as they are
		enc.SetIndent("", "  ")
		if err := enc.Encode(doc); err != nil {
			h.fail(w, err)
			return
		}
		h.write(w, "application/json", b.Bytes())
	}
}

// write sends body through the redactor, as every line bulwark prints.
func (h *handler) write(w http.ResponseWriter, contentType string, body []byte) {
	w.Header().Set("Content-Type", contentType)
	_, _ = w.Write([]byte(h.opts.Redactor.Redact(string(body))))
}

func (h *handler) fail(w http.ResponseWriter, err error) {
	code := http.StatusInternalServerError
	if errors.Is(err, ErrNoStack) || errors.Is(err, errNoOperation) || errors.Is(err, errNoPlan) {
		code = http.StatusNotFound
	}
	if errors.Is(err, errBadQuery) {
		code = http.StatusBadRequest
	}
	http.Error(w, h.opts.Redactor.Redact(err.Error()), code)
}
