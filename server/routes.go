package server

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"

	"github.com/batonhq/baton/a2aserver"
	"github.com/batonhq/baton/mcpserver"
)

// route is one operation of the API. The OpenAPI document lists exactly
// these (a test keeps them equal).
type route struct {
	method, path string
	public       bool // served without a token
	handle       http.HandlerFunc
}

func (s *Server) table() []route {
	return []route{
		{method: "POST", path: "/v1/workflows/{workflow}/instances", handle: s.start},
		{method: "GET", path: "/v1/instances", handle: s.list},
		{method: "GET", path: "/v1/instances/{id}", handle: s.get},
		{method: "GET", path: "/v1/instances/{id}/history", handle: s.history},
		{method: "POST", path: "/v1/instances/{id}/signals/{name}", handle: s.signal},
		{method: "POST", path: "/v1/instances/{id}/select", handle: s.selectAgent},
		{method: "POST", path: "/v1/instances/{id}/cancel", handle: s.cancel},
		{method: "POST", path: "/v1/reports", handle: s.report},
		{method: "GET", path: "/v1/events", handle: s.events},
		{method: "GET", path: "/v1/workflows", handle: s.workflows},
		{method: "GET", path: "/v1/workflows/{name}", handle: s.workflow},
		{method: "GET", path: "/v1/workflows/{name}/graph", handle: s.graph},
		{method: "GET", path: "/v1/dead-letters", handle: s.deadLetters},
		{method: "GET", path: "/v1/agents", handle: s.agents},
		{method: "POST", path: "/v1/prune", handle: s.prune},
		{method: "GET", path: "/metrics", public: true, handle: s.metrics.handler().ServeHTTP},
		{method: "GET", path: "/healthz", public: true, handle: s.healthz},
		{method: "GET", path: "/readyz", public: true, handle: s.readyz},
		{method: "GET", path: "/openapi.json", public: true, handle: serveOpenAPI},
	}
}

// routes is the API's handler: every route of table, a JSON 405 for a
// known path with another method, a JSON 404 for any other path, all
// behind the check of the Host header (loopbackHost).
func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	allowed := map[string][]string{}
	for _, rt := range s.table() {
		h := http.Handler(rt.handle)
		if !rt.public {
			h = s.guard(h)
		}
		mux.Handle(rt.method+" "+rt.path, h)
		if rt.method == "GET" {
			allowed[rt.path] = append(allowed[rt.path], "GET", "HEAD")
		} else {
			allowed[rt.path] = append(allowed[rt.path], rt.method)
		}
	}
	for path, methods := range allowed {
		allow := strings.Join(methods, ", ")
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Allow", allow)
			writeError(w, &apiError{Status: http.StatusMethodNotAllowed, Code: "method_not_allowed", Message: r.Method + " is not allowed on " + r.URL.Path + " (allowed: " + allow + ")"})
		})
	}
	// Every workflow is an A2A agent too, under the token rules of /v1.
	mux.Handle(a2aserver.Prefix, s.guard(a2aserver.New(s.ops, a2aserver.WithTokens(len(s.tokens) > 0),
		a2aserver.WithMaxBody(MaxBody), a2aserver.WithMaxStreams(s.cfg.MaxStreams))))
	mux.Handle(ViewPath, s.view())
	mux.Handle("/mcp", s.guard(s.mcpHandler()))
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, ViewPath, http.StatusFound)
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, notFound("not_found", "", "no route "+r.URL.Path))
	})
	return s.loopbackHost(mux)
}

// mcpHandler is the MCP front door over the operations layer: the
// workflows as tools, on the streamable HTTP transport, with the body
// limit of the API. Each reload that changes the workflows changes the
// tools, and the connected clients hear of it.
func (s *Server) mcpHandler() http.Handler {
	s.mcp = mcpserver.New(mcpserver.NewLocal(s.ops), mcpserver.WithLogger(s.log), mcpserver.WithMaxBody(MaxBody), mcpserver.WithHostChecked())
	s.mcp.WorkflowsChanged()
	s.OnWorkflowsChanged(s.mcp.WorkflowsChanged)
	return s.mcp.Handler()
}

// authorize asks for a bearer token on every /v1 route when the server has
// tokens.
func (s *Server) authorize(next http.Handler) http.Handler {
	if len(s.tokens) == 0 {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		given, ok := bearerToken(r.Header.Get("Authorization"))
		if !ok {
			writeError(w, &apiError{Status: http.StatusUnauthorized, Code: "unauthorized", Message: "a bearer token is required (Authorization: Bearer <token>)"})
			return
		}
		if !s.validToken(given) {
			writeError(w, &apiError{Status: http.StatusUnauthorized, Code: "unauthorized", Message: "the bearer token is not valid"})
			return
		}
		next.ServeHTTP(w, r)
	})
}

// validToken reports whether given is one of the server's tokens. Tokens
// are compared through their SHA-256 digests in constant time, so that
// neither a token's content nor its length leaks.
func (s *Server) validToken(given string) bool {
	d := sha256.Sum256([]byte(strings.TrimSpace(given)))
	match := 0
	for k := range s.digests {
		match |= subtle.ConstantTimeCompare(d[:], s.digests[k][:])
	}
	return match == 1
}
