package webview

import (
	"bytes"
	"embed"
	"html/template"
	"io/fs"
	"net/http"
	"strings"
	"time"

	"go.uber.org/zap"
)

//go:generate sh ./vendor.sh
//go:generate go test -count=1 -run TestBrowser/Screenshots . -screenshots ../docs/img

//go:embed static
var staticFS embed.FS

//go:embed templates/*.html
var templateFS embed.FS

// Handler serves the web view. Build it with New.
type Handler struct {
	b       Backend
	base    string
	check   func(token string) bool
	log     *zap.Logger
	pages   map[string]*template.Template
	mux     *http.ServeMux
	static  http.Handler
	refresh time.Duration
	// writeTimeout bounds each write of a live-update stream.
	writeTimeout time.Duration
	// csrf refuses actions a browser says come from another site: without
	// tokens there is no SameSite cookie to protect them.
	csrf *http.CrossOriginProtection
}

// Option configures a Handler.
type Option func(*Handler)

// WithBase serves the view under base, a path that starts and ends with
// "/" (default "/"): mount the handler on base, unchanged.
func WithBase(base string) Option {
	return func(h *Handler) {
		if !strings.HasPrefix(base, "/") {
			base = "/" + base
		}
		if !strings.HasSuffix(base, "/") {
			base += "/"
		}
		h.base = base
	}
}

// WithTokenCheck makes every page ask for a token once and keep it in an
// HttpOnly, SameSite=Strict cookie; check says whether a token is valid.
// Without it the view asks for none.
func WithTokenCheck(check func(token string) bool) Option {
	return func(h *Handler) { h.check = check }
}

// WithLogger sets the logger (default zap.NewNop()).
func WithLogger(l *zap.Logger) Option {
	return func(h *Handler) {
		if l != nil {
			h.log = l
		}
	}
}

// WithRefresh sets the shortest time between two live updates of one page
// (default 250ms): a burst of events refreshes a page once.
func WithRefresh(d time.Duration) Option {
	return func(h *Handler) {
		if d > 0 {
			h.refresh = d
		}
	}
}

// WithWriteTimeout bounds each write of a live-update stream (default
// 60s): a browser that stops reading loses its stream then. The stream as
// a whole has no bound, so give the server's own WriteTimeout here, not a
// limit on the stream.
func WithWriteTimeout(d time.Duration) Option {
	return func(h *Handler) {
		if d > 0 {
			h.writeTimeout = d
		}
	}
}

// New builds the web view on b.
func New(b Backend, opts ...Option) *Handler {
	h := &Handler{b: b, base: "/", log: zap.NewNop(), refresh: 250 * time.Millisecond, writeTimeout: time.Minute, csrf: http.NewCrossOriginProtection()}
	for _, o := range opts {
		o(h)
	}
	h.pages = parsePages()
	static, _ := fs.Sub(staticFS, "static")
	h.static = http.StripPrefix(h.base+"static/", http.FileServer(http.FS(static)))
	h.mux = http.NewServeMux()
	p := h.base
	h.mux.HandleFunc("GET "+p+"{$}", h.auth(h.instances))
	h.mux.HandleFunc("GET "+p+"instances/{id}", h.auth(h.instance))
	h.mux.HandleFunc("GET "+p+"instances/{id}/history.json", h.auth(h.history))
	h.mux.HandleFunc("POST "+p+"instances/{id}/signal", h.auth(h.signal))
	h.mux.HandleFunc("POST "+p+"instances/{id}/select", h.auth(h.selectAgent))
	h.mux.HandleFunc("POST "+p+"instances/{id}/cancel", h.auth(h.cancel))
	h.mux.HandleFunc("GET "+p+"dead-letters", h.auth(h.deadLetters))
	h.mux.HandleFunc("GET "+p+"agents", h.auth(h.agents))
	h.mux.HandleFunc("GET "+p+"workflows", h.auth(h.workflows))
	h.mux.HandleFunc("GET "+p+"workflows/{name}", h.auth(h.workflow))
	h.mux.HandleFunc("GET "+p+"events", h.auth(h.events))
	h.mux.HandleFunc("GET "+p+"login", h.loginPage)
	h.mux.HandleFunc("POST "+p+"login", h.login)
	h.mux.HandleFunc("GET "+p+"static/", h.serveStatic)
	h.mux.HandleFunc(p, func(w http.ResponseWriter, r *http.Request) {
		h.fail(w, r, http.StatusNotFound, "no page "+r.URL.Path)
	})
	return h
}

// ServeHTTP serves the view. Every answer forbids framing and inline
// script; POSTs from another origin are refused.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; frame-ancestors 'none'; form-action 'self'")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "same-origin")
	h.mux.ServeHTTP(w, r)
}

func (h *Handler) serveStatic(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "public, max-age=3600")
	h.static.ServeHTTP(w, r)
}

// render writes a page, or its fragment when the request asks for one.
func (h *Handler) render(w http.ResponseWriter, status int, page string, data any) {
	t := h.pages[page]
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "page", data); err != nil {
		h.log.Error("webview: render", zap.String("page", page), zap.Error(err))
		http.Error(w, "the page could not be drawn", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// fail answers an error page.
func (h *Handler) fail(w http.ResponseWriter, r *http.Request, status int, msg string) {
	h.render(w, status, "error", h.view(r, "Error", struct {
		Status  int
		Message string
	}{status, msg}))
}

// view is what every page template gets.
type view struct {
	Base    string
	Title   string
	Nav     string
	Partial string // the fragment asked for ("" for the whole page)
	Diagram bool   // the page draws a diagram: it loads Mermaid
	Agents  bool   // the backend lists agents: the nav links the Agents page
	Data    any
}

func (h *Handler) view(r *http.Request, title string, data any) view {
	_, agents := h.b.(AgentLister)
	return view{Base: h.base, Title: title, Partial: r.URL.Query().Get("fragment"), Agents: agents, Data: data}
}
