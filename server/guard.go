package server

import (
	"net"
	"net/http"
	"strings"
)

// A server without tokens trusts whoever reaches it, which on loopback
// means the programs of its own machine. Two kinds of requests come from
// further away all the same, carried by the operator's browser: a page of
// another site sending requests to 127.0.0.1 (a form, or a fetch in
// no-cors mode, needs no permission to be sent), and a page of a name the
// attacker's DNS points at 127.0.0.1 once the page is loaded (DNS
// rebinding), whose requests the browser counts as the page's own, reads
// included. The guards below refuse both; with tokens, every request needs
// a bearer token, which a browser never adds by itself.

// guard protects a front door: the bearer token when the server has
// tokens, else the refusal of requests a browser sends on behalf of
// another site. Every route that changes state goes through it, /v1 and
// any front door added later.
func (s *Server) guard(next http.Handler) http.Handler {
	if len(s.tokens) > 0 {
		return s.authorize(next)
	}
	return sameOrigin(next)
}

// crossOrigin judges a request's origin by what the browser says of it:
// Sec-Fetch-Site (same-origin or none pass; same-site, another port of the
// same host, does not), else Origin against Host. Requests without either
// header come from programs, not browsers, and pass; so do GET, HEAD and
// OPTIONS, which change nothing.
var crossOrigin = http.NewCrossOriginProtection()

// sameOrigin refuses requests that change state on behalf of another
// origin (403).
func sameOrigin(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if crossOrigin.Check(r) != nil {
			field := "Origin"
			if r.Header.Get("Sec-Fetch-Site") != "" {
				field = "Sec-Fetch-Site"
			}
			writeError(w, &apiError{Status: http.StatusForbidden, Code: "cross_origin", Field: field,
				Message: "a request from another site or origin (by its " + field + " header) cannot change anything on a server without tokens"})
			return
		}
		next.ServeHTTP(w, r)
	})
}

// probes are the paths a server without tokens answers whatever the Host
// header: they tell nothing but that the process lives and is ready.
var probes = map[string]bool{"/healthz": true, "/readyz": true}

// loopbackHost refuses, on a server without tokens (which listens on
// loopback only), every request whose Host header is not a loopback name:
// localhost, 127.0.0.0/8 or ::1, with or without a port. Any other name
// reaching a loopback listener was pointed there by someone, and a page
// of that name must not read or change anything.
func (s *Server) loopbackHost(next http.Handler) http.Handler {
	if len(s.tokens) > 0 {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !probes[r.URL.Path] && !loopbackName(r.Host) {
			writeError(w, &apiError{Status: http.StatusForbidden, Code: "forbidden_host", Field: "Host",
				Message: "a server without tokens answers only requests to a loopback name (localhost, 127.0.0.1, [::1]), not " + quoteHost(r.Host)})
			return
		}
		next.ServeHTTP(w, r)
	})
}

// loopbackName reports whether a Host header names the loopback interface.
// Subdomains of localhost are refused: not every resolver keeps them on
// loopback.
func loopbackName(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	} else if inner, ok := strings.CutPrefix(host, "["); ok {
		host, ok = strings.CutSuffix(inner, "]")
		if !ok {
			return false
		}
	}
	return host != "" && loopback(host)
}

func quoteHost(host string) string {
	if host == "" {
		return "an empty Host"
	}
	const most = 100
	if len(host) > most {
		host = host[:most] + "…"
	}
	return "Host " + host
}
