package webview

import (
	"encoding/json"
	"errors"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/batonhq/baton/check"
	"github.com/batonhq/baton/fsm"
	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/transport"
)

// Paging of the view.
const (
	defaultLimit = 50
	maxLimit     = 500
)

// localTime is the layout of an <input type="datetime-local">; times are
// read as UTC.
const localTime = "2006-01-02T15:04"

// listForm is the instances filter as the form shows it.
type listForm struct {
	Workflow, Version, Status, State, ID, Since, Until string
}

// parseFilter reads the instances filter from the query: a field that does
// not parse is named in the error.
func parseFilter(q url.Values) (Filter, listForm, error) {
	form := listForm{
		Workflow: q.Get("workflow"), Version: q.Get("version"), Status: q.Get("status"),
		State: q.Get("state"), ID: q.Get("id"), Since: q.Get("since"), Until: q.Get("until"),
	}
	f := Filter{Workflow: form.Workflow, Status: form.Status, State: form.State, IDPrefix: form.ID, Cursor: q.Get("cursor"), Limit: defaultLimit}
	var errs []error
	if form.Version != "" {
		n, err := strconv.Atoi(form.Version)
		if err != nil || n < 1 {
			errs = append(errs, errors.New("version must be a whole number, 1 or more"))
		}
		f.Version = n
	}
	if f.Status != "" && !slices.Contains(statuses, f.Status) {
		errs = append(errs, errors.New("status must be one of "+strings.Join(statuses, ", ")))
	}
	for _, p := range []struct {
		name, v string
		t       *time.Time
	}{{"since", form.Since, &f.Since}, {"until", form.Until, &f.Until}} {
		if p.v == "" {
			continue
		}
		t, err := parseTime(p.v)
		if err != nil {
			errs = append(errs, errors.New(p.name+" must be a time (2006-01-02T15:04 or RFC 3339)"))
		}
		*p.t = t
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxLimit {
			errs = append(errs, errors.New("limit must be a whole number from 1 to "+strconv.Itoa(maxLimit)))
		}
		f.Limit = n
	}
	if len(errs) > 0 {
		return Filter{Limit: defaultLimit}, form, errors.Join(errs...)
	}
	return f, form, nil
}

func parseTime(v string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t.UTC(), nil
	}
	return time.Parse(localTime, v)
}

type instancesPage struct {
	Form      listForm
	Message   string
	Workflows []string
	Statuses  []string
	Page      Page
	RowsQuery string
	// NextURL is the next page's address; its query is built by
	// url.Values.Encode, which escapes every value.
	NextURL template.URL
}

func (h *Handler) instances(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f, form, ferr := parseFilter(q)
	data := instancesPage{Form: form, Statuses: statuses}
	status := http.StatusOK
	if ferr != nil {
		data.Message = ferr.Error()
		status = http.StatusBadRequest
	} else {
		page, err := h.b.Instances(r.Context(), f)
		if err != nil {
			h.unavailable(w, r, err)
			return
		}
		data.Page = page
	}
	keep := url.Values{}
	for _, k := range []string{"workflow", "version", "status", "state", "id", "since", "until", "limit", "cursor"} {
		if v := q.Get(k); v != "" && ferr == nil {
			keep.Set(k, v)
		}
	}
	rows := cloneValues(keep)
	rows.Set("fragment", "rows")
	data.RowsQuery = rows.Encode()
	if data.Page.Next != "" {
		next := cloneValues(keep)
		next.Set("cursor", data.Page.Next)
		data.NextURL = template.URL(h.base + "?" + next.Encode())
	}
	if q.Get("fragment") == "" {
		if wfs, err := h.b.Workflows(r.Context()); err == nil {
			for _, wf := range wfs {
				data.Workflows = append(data.Workflows, wf.Name)
			}
		}
	}
	v := h.view(r, "Instances", data)
	v.Nav = "instances"
	h.render(w, status, "instances", v)
}

func cloneValues(v url.Values) url.Values {
	out := make(url.Values, len(v))
	for k, vs := range v {
		out[k] = slices.Clone(vs)
	}
	return out
}

type instancePage struct {
	In         Instance
	Diagram    string
	Visited    []string
	Timeline   []row
	Outbox     []record.Outgoing
	Signals    []string
	Selectable []string
	Message    string
	Notice     string
}

func (h *Handler) instance(w http.ResponseWriter, r *http.Request) {
	notice := ""
	switch r.URL.Query().Get("done") {
	case "signal":
		notice = "The signal was sent."
	case "select":
		notice = "The step was handed over."
	case "cancel":
		notice = "The instance was cancelled."
	}
	h.showInstance(w, r, http.StatusOK, "", notice)
}

// showInstance draws an instance's page, with the message of a refused
// action or the notice of a done one.
func (h *Handler) showInstance(w http.ResponseWriter, r *http.Request, status int, message, notice string) {
	ctx := r.Context()
	in, err := h.b.Instance(ctx, r.PathValue("id"))
	if err != nil {
		h.lookupFailed(w, r, err, "no instance "+strconv.Quote(r.PathValue("id")))
		return
	}
	entries, err := h.b.History(ctx, in.ID)
	if err != nil {
		h.unavailable(w, r, err)
		return
	}
	outbox, err := h.b.Outbox(ctx, in.ID)
	if err != nil && !errors.Is(err, ErrNotFound) {
		h.unavailable(w, r, err)
		return
	}
	data := instancePage{In: in, Timeline: timeline(entries), Outbox: outbox, Message: message, Notice: notice}
	if def, err := h.b.Definition(ctx, in.Hash); err == nil {
		marks := marksOf(in, entries)
		data.Diagram = markedDiagram(def, marks)
		data.Visited = marks.visited
		data.Signals, data.Selectable = actionsOf(def, in)
	}
	v := h.view(r, "Instance "+in.ID, data)
	v.Diagram = data.Diagram != ""
	h.render(w, status, "instance", v)
}

// actionsOf lists the signals a waiting instance takes and the agents a
// running one can be handed to.
func actionsOf(def *rules.Workflow, in Instance) (signals, selectable []string) {
	if in.Finished() {
		return nil, nil
	}
	st, ok := def.State(in.State)
	if !ok {
		return nil, nil
	}
	if in.Status == StatusWaiting && st.Wait != nil {
		return st.Wait.Signals, nil
	}
	if st.Waits() || st.Parallel() {
		return nil, nil
	}
	for _, a := range def.Agents {
		if a.Selectable && a.ID != st.Agent {
			selectable = append(selectable, a.ID)
		}
	}
	return nil, selectable
}

// history answers the history as a JSON file, the form wfrun replay reads.
func (h *Handler) history(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if _, err := h.b.Instance(r.Context(), id); err != nil {
		h.lookupFailed(w, r, err, "no instance "+strconv.Quote(id))
		return
	}
	entries, err := h.b.History(r.Context(), id)
	if err != nil {
		h.unavailable(w, r, err)
		return
	}
	if entries == nil {
		entries = []record.Entry{}
	}
	data, err := json.MarshalIndent(entries, "", "  ")
	if err != nil {
		h.unavailable(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Disposition", `attachment; filename="`+fileName(id)+`.history.json"`)
	_, _ = w.Write(append(data, '\n'))
}

// fileName keeps the characters of id that are safe in a file name.
func fileName(id string) string {
	b := []byte(id)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			b[i] = '_'
		}
	}
	return string(b)
}

type deadLettersPage struct {
	Reason  string
	Reasons []string
	Page    DeadLetterPage
	NextURL template.URL
}

// Reasons the bus gives up on a message for, offered by the filter.
var deadLetterReasons = []string{
	string(transport.ReasonReceiverNotFound), string(transport.ReasonTTLExpired), string(transport.ReasonQueueOverflow),
	string(transport.ReasonMaxRetries), string(transport.ReasonRejected),
}

func (h *Handler) deadLetters(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := DeadLetterFilter{Reason: q.Get("reason"), Cursor: q.Get("cursor"), Limit: defaultLimit}
	page, err := h.b.DeadLetters(r.Context(), f)
	var refused *RefusedError
	if errors.As(err, &refused) {
		h.fail(w, r, http.StatusBadRequest, refused.Reason)
		return
	}
	if err != nil {
		h.unavailable(w, r, err)
		return
	}
	reasons := slices.Clone(deadLetterReasons)
	if f.Reason != "" && !slices.Contains(reasons, f.Reason) {
		reasons = append(reasons, f.Reason)
	}
	data := deadLettersPage{Reason: f.Reason, Reasons: reasons, Page: page}
	if page.Next != "" {
		next := url.Values{"cursor": {page.Next}}
		if f.Reason != "" {
			next.Set("reason", f.Reason)
		}
		data.NextURL = template.URL(h.base + "dead-letters?" + next.Encode())
	}
	v := h.view(r, "Dead letters", data)
	v.Nav = "dead-letters"
	h.render(w, http.StatusOK, "deadletters", v)
}

func (h *Handler) workflows(w http.ResponseWriter, r *http.Request) {
	wfs, err := h.b.Workflows(r.Context())
	if err != nil {
		h.unavailable(w, r, err)
		return
	}
	v := h.view(r, "Workflows", wfs)
	v.Nav = "workflows"
	h.render(w, http.StatusOK, "workflows", v)
}

type workflowPage struct {
	Workflow Workflow
	Version  Version
	Diagram  string
	// Check is what wfrun check proves of the version: its findings (all,
	// children's included, by position) and its summary line.
	Check    *check.Report
	Findings []check.Finding
}

func (h *Handler) workflow(w http.ResponseWriter, r *http.Request) {
	wfs, err := h.b.Workflows(r.Context())
	if err != nil {
		h.unavailable(w, r, err)
		return
	}
	name := r.PathValue("name")
	i := slices.IndexFunc(wfs, func(wf Workflow) bool { return wf.Name == name })
	if i < 0 || len(wfs[i].Versions) == 0 {
		h.fail(w, r, http.StatusNotFound, "no workflow "+strconv.Quote(name))
		return
	}
	wf := wfs[i]
	ver := wf.Versions[0]
	if v := r.URL.Query().Get("version"); v != "" {
		n, err := strconv.Atoi(v)
		k := slices.IndexFunc(wf.Versions, func(x Version) bool { return x.Def.Version == n })
		if err != nil || k < 0 {
			h.fail(w, r, http.StatusNotFound, "workflow "+name+" has no version "+strconv.Quote(v))
			return
		}
		ver = wf.Versions[k]
	}
	report := check.Check(ver.Def)
	vw := h.view(r, "Workflow "+wf.Name, workflowPage{Workflow: wf, Version: ver, Diagram: fsm.Mermaid(ver.Def), Check: report, Findings: report.All()})
	vw.Nav = "workflows"
	vw.Diagram = true
	h.render(w, http.StatusOK, "workflow", vw)
}

// lookupFailed answers 404 for an unknown instance, 503 otherwise.
func (h *Handler) lookupFailed(w http.ResponseWriter, r *http.Request, err error, notFound string) {
	if errors.Is(err, ErrNotFound) {
		h.fail(w, r, http.StatusNotFound, notFound)
		return
	}
	h.unavailable(w, r, err)
}

func (h *Handler) unavailable(w http.ResponseWriter, r *http.Request, err error) {
	h.log.Warn("webview: the backend did not answer", zap.String("path", r.URL.Path), zap.Error(err))
	h.fail(w, r, http.StatusServiceUnavailable, "the server did not answer: "+err.Error())
}
