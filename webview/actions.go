package webview

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
)

// maxForm bounds an action's form, as the API bounds its bodies.
const maxForm = 1 << 20

// act reads an action's form and runs it: on success the browser goes back
// to the instance's page (303); a refusal is shown there with its status.
func (h *Handler) act(w http.ResponseWriter, r *http.Request, done string, run func(id string, form url.Values) error) {
	if h.csrf.Check(r) != nil {
		h.fail(w, r, http.StatusForbidden, "this action must come from the view's own pages")
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	if err := r.ParseForm(); err != nil {
		h.fail(w, r, http.StatusBadRequest, "the form could not be read: "+err.Error())
		return
	}
	id := r.PathValue("id")
	err := run(id, r.PostForm)
	var refused *RefusedError
	switch {
	case err == nil:
		http.Redirect(w, r, h.base+"instances/"+url.PathEscape(id)+"?done="+done, http.StatusSeeOther)
	case errors.As(err, &refused):
		status := refused.Status
		if status == 0 {
			status = http.StatusConflict
		}
		h.showInstance(w, r, status, refused.Reason, "")
	case errors.Is(err, ErrNotFound):
		h.fail(w, r, http.StatusNotFound, "no instance "+id)
	default:
		h.unavailable(w, r, err)
	}
}

func (h *Handler) signal(w http.ResponseWriter, r *http.Request) {
	h.act(w, r, "signal", func(id string, form url.Values) error {
		name := strings.TrimSpace(form.Get("name"))
		if name == "" {
			return &RefusedError{Status: http.StatusBadRequest, Reason: "name: choose a signal"}
		}
		data, err := formObject(form.Get("data"))
		if err != nil {
			return err
		}
		return h.b.Signal(r.Context(), id, name, data)
	})
}

func (h *Handler) selectAgent(w http.ResponseWriter, r *http.Request) {
	h.act(w, r, "select", func(id string, form url.Values) error {
		agent := strings.TrimSpace(form.Get("agent"))
		if agent == "" {
			return &RefusedError{Status: http.StatusBadRequest, Reason: "agent: choose an agent"}
		}
		return h.b.Select(r.Context(), id, agent, form.Get("explanation"))
	})
}

func (h *Handler) cancel(w http.ResponseWriter, r *http.Request) {
	h.act(w, r, "cancel", func(id string, form url.Values) error {
		return h.b.Cancel(r.Context(), id, strings.TrimSpace(form.Get("reason")))
	})
}

// formObject reads the data field of a signal: empty, or a JSON object.
func formObject(s string) (map[string]any, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return nil, &RefusedError{Status: http.StatusBadRequest, Reason: "data: not valid JSON: " + err.Error()}
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, &RefusedError{Status: http.StatusBadRequest, Reason: "data: must be a JSON object"}
	}
	return obj, nil
}
