package webview

import (
	"net/http"
	"net/url"
	"strings"
)

// TokenCookie is the cookie that keeps the token the view was given.
const TokenCookie = "baton_token"

// auth lets a request through when the view asks for no token or its
// cookie holds a valid one. Otherwise a page is sent to the sign-in page;
// anything else (actions, streams, fragments, downloads) is refused.
func (h *Handler) auth(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if h.check == nil || h.signedIn(r) {
			next(w, r)
			return
		}
		if r.Method == http.MethodGet && r.Header.Get("HX-Request") == "" && r.URL.Query().Get("fragment") == "" && !strings.HasSuffix(r.URL.Path, "/events") {
			http.Redirect(w, r, h.base+"login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
			return
		}
		h.fail(w, r, http.StatusUnauthorized, "sign in first: this server asks for a token")
	}
}

func (h *Handler) signedIn(r *http.Request) bool {
	c, err := r.Cookie(TokenCookie)
	return err == nil && c.Value != "" && h.check(c.Value)
}

type loginPage struct {
	Next    string
	Message string
}

func (h *Handler) loginPage(w http.ResponseWriter, r *http.Request) {
	h.render(w, http.StatusOK, "login", h.view(r, "Sign in", loginPage{Next: h.next(r.URL.Query().Get("next"))}))
}

// login checks the token given in the form and keeps it in an HttpOnly,
// SameSite=Strict cookie scoped to the view.
func (h *Handler) login(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	if err := r.ParseForm(); err != nil {
		h.fail(w, r, http.StatusBadRequest, "the form could not be read: "+err.Error())
		return
	}
	next := h.next(r.PostFormValue("next"))
	token := strings.TrimSpace(r.PostFormValue("token"))
	if h.check == nil {
		http.Redirect(w, r, next, http.StatusSeeOther)
		return
	}
	if token == "" || !h.check(token) {
		h.render(w, http.StatusUnauthorized, "login", h.view(r, "Sign in", loginPage{Next: next, Message: "That token is not valid."}))
		return
	}
	http.SetCookie(w, &http.Cookie{
		Name: TokenCookie, Value: token, Path: h.base,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil,
	})
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// next is where to go after signing in: a path of the view, never another
// site.
func (h *Handler) next(n string) string {
	if !strings.HasPrefix(n, h.base) || strings.HasPrefix(n, "//") || strings.Contains(n, "\\") {
		return h.base
	}
	return n
}
