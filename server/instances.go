package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/handoff"
	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/wire"
)

// Instance is an instance as the API shows it.
type Instance struct {
	ID       string `json:"id"`
	Workflow string `json:"workflow"`
	Version  int    `json:"version"`
	Status   string `json:"status"`
	State    string `json:"state"`
	Step     int    `json:"step"`
	Outcome  string `json:"outcome"`
	// Error says why a failed instance failed; null for any other.
	Error *string `json:"error"`
	// CancelReason is the reason given with the cancel of a cancelled
	// instance.
	CancelReason string `json:"cancel_reason,omitempty"`
	// Usage is what the instance's runs used: the totals, and each
	// agent's (all zero when no run reported usage).
	Usage   Usage          `json:"usage"`
	Context map[string]any `json:"context"`
	Created time.Time      `json:"created"`
	Updated time.Time      `json:"updated"`
}

// Summary is what a start answers.
type Summary struct {
	ID       string `json:"id"`
	Workflow string `json:"workflow"`
	Version  int    `json:"version"`
	Status   string `json:"status"`
}

// Status values of the API. The engine spells a cancelled instance
// "canceled"; the API says "cancelled".
const (
	StatusRunning   = "running"
	StatusWaiting   = "waiting"
	StatusCompleted = "completed"
	StatusFailed    = "failed"
	StatusCancelled = "cancelled"
)

var statuses = []string{StatusRunning, StatusWaiting, StatusCompleted, StatusFailed, StatusCancelled}

func statusOf(s record.Status) string {
	if s == record.StatusCanceled {
		return StatusCancelled
	}
	return string(s)
}

// instance is the API's view of a snapshot: a running instance whose state
// is a wait state is "waiting".
func (s *Server) instance(snap record.Snapshot) Instance {
	in := instanceOf(snap)
	if in.Status == StatusRunning {
		if f, ok := s.cat.flow(snap.Hash); ok {
			if st, ok := f.wf.State(snap.State); ok && st.Waits() {
				in.Status = StatusWaiting
			}
		}
	}
	return in
}

func instanceOf(s record.Snapshot) Instance {
	ctx := s.Context
	if ctx == nil {
		ctx = map[string]any{}
	}
	in := Instance{
		ID: s.ID, Workflow: s.Workflow, Version: s.Version, Status: statusOf(s.Status), State: s.State,
		Step: s.Step, Outcome: s.Outcome, CancelReason: s.CancelReason, Usage: usageOf(s.Usage), Context: ctx,
		Created: s.Created.UTC(), Updated: s.Updated.UTC(),
	}
	// A store written before cancels kept no error of their own may hold
	// the cancel's text as the error: a cancel is no failure either way.
	if s.Error != "" && s.Status != record.StatusCanceled {
		e := s.Error
		in.Error = &e
	}
	return in
}

// startRequest is the body of a start.
type startRequest struct {
	Input   map[string]any `json:"input"`
	ID      *string        `json:"id"`
	Version *int           `json:"version"`
}

// decodeStart reads and checks a start's body.
func decodeStart(data []byte) (startRequest, *apiError) {
	var req startRequest
	if e := decode(data, &req); e != nil {
		return req, e
	}
	if req.ID != nil {
		if e := checkStartID(data, *req.ID); e != nil {
			return req, e
		}
	}
	if req.Version != nil && *req.Version < 1 {
		return req, badField("version", "must be 1 or more")
	}
	return req, nil
}

func (s *Server) start(w http.ResponseWriter, r *http.Request) {
	data, e := readBody(w, r)
	if e != nil {
		writeError(w, e)
		return
	}
	req, e := decodeStart(data)
	if e != nil {
		writeError(w, e)
		return
	}
	sum, created, e := s.startInstance(r.Context(), r.PathValue("workflow"), req, r.Header.Get("traceparent"))
	if e != nil {
		writeError(w, e)
		return
	}
	if !created {
		writeJSON(w, http.StatusOK, sum)
		return
	}
	w.Header().Set("Location", "/v1/instances/"+url.PathEscape(sum.ID))
	writeJSON(w, http.StatusCreated, sum)
}

// startInstance starts an instance of workflow name, on the server that
// owns its id in a cluster; created is false when a start with the same id
// made it before. A client's traceparent makes the instance's trace a part
// of its own.
func (s *Server) startInstance(ctx context.Context, name string, req startRequest, traceparent string) (Summary, bool, *apiError) {
	if len(s.cat.versions(name)) == 0 {
		return Summary{}, false, notFound("unknown_workflow", "workflow", fmt.Sprintf("no workflow %q on this server", name))
	}
	version := 0
	if req.Version != nil {
		version = *req.Version
	}
	f, ok := s.cat.pick(name, version)
	if !ok {
		return Summary{}, false, notFound("unknown_version", "version", fmt.Sprintf("workflow %s has no version %d on this server", name, version))
	}
	if req.ID == nil && s.clu != nil {
		// In a cluster the id decides the engine: one this server owns.
		id := s.clu.node.NewID()
		req.ID = &id
	}
	if req.ID != nil {
		if ans, forwarded := s.elsewhere(ctx, call{Op: opStart, ID: *req.ID, Workflow: name, Version: version, Input: req.Input, Traceparent: traceparent}); forwarded {
			return ans.Summary, ans.Created, ans.err()
		}
		if sum, found, e := s.existing(ctx, *req.ID, name, req.Input); e != nil || found {
			return sum, false, e
		}
	}
	if s.stopping.Load() {
		return Summary{}, false, retryLater(unavailable("the server is shutting down: start the instance again on the next server"))
	}
	ctx, cancel := context.WithTimeout(wire.ContextWithTraceparent(ctx, traceparent), s.cfg.StartWait)
	defer cancel()
	var (
		h   *engine.Instance
		err error
	)
	if req.ID != nil {
		h, err = f.eng.StartID(ctx, *req.ID, req.Input)
	} else {
		h, err = f.eng.Start(ctx, req.Input)
	}
	var (
		inputErr *engine.InputError
		idErr    *engine.IDError
	)
	switch {
	case err == nil:
	case errors.As(err, &inputErr):
		return Summary{}, false, badField(inputErr.Field, inputErr.Reason)
	case errors.As(err, &idErr):
		return Summary{}, false, badField("id", idErr.Reason)
	case errors.Is(err, engine.ErrDuplicateInstance):
		// Another start with the same id won the race: answer as a retry.
		if sum, found, e := s.existing(ctx, *req.ID, name, req.Input); found || e != nil {
			return sum, false, e
		}
		if h, herr := f.eng.Instance(*req.ID); herr == nil {
			return Summary{ID: h.ID(), Workflow: name, Version: f.wf.Version, Status: statusOf(h.Result().Status)}, false, nil
		}
		return Summary{}, false, conflict("id_taken", "instance id "+*req.ID+" is taken")
	case errors.Is(err, engine.ErrOverloaded):
		return Summary{}, false, retryLater(unavailable(err.Error()))
	default:
		return Summary{}, false, unavailable("the instance could not be started: " + err.Error())
	}
	return Summary{ID: h.ID(), Workflow: name, Version: f.wf.Version, Status: statusOf(h.Result().Status)}, true, nil
}

// existing is the instance a start with a chosen id already made: found
// when the store has it; a 409 when it belongs to another workflow, or was
// started with other input (a retry sends the same input: another input
// under the same id is a mistake the client must hear of).
func (s *Server) existing(ctx context.Context, id, workflow string, input map[string]any) (Summary, bool, *apiError) {
	snap, err := s.store.Instance(ctx, id)
	switch {
	case errors.Is(err, record.ErrUnknownInstance):
		return Summary{}, false, nil
	case err != nil:
		return Summary{}, false, unavailable("the store did not answer: " + err.Error())
	case snap.Workflow != workflow:
		return Summary{}, false, conflict("id_taken", fmt.Sprintf("instance id %s is taken by an instance of workflow %s", id, snap.Workflow))
	case !sameInput(snap.Input, input):
		e := conflict("conflict", fmt.Sprintf("instance %s was started with other input: a start with the same id must send the same input", id))
		e.Field = "input"
		return Summary{}, false, e
	}
	return Summary{ID: snap.ID, Workflow: snap.Workflow, Version: snap.Version, Status: statusOf(snap.Status)}, true, nil
}

// snapshot reads the instance id: 404 when unknown.
func (s *Server) snapshot(ctx context.Context, id string) (record.Snapshot, *apiError) {
	snap, err := s.store.Instance(ctx, id)
	switch {
	case errors.Is(err, record.ErrUnknownInstance):
		return snap, notFound("unknown_instance", "id", "no instance "+strconv.Quote(id))
	case err != nil:
		return snap, unavailable("the store did not answer: " + err.Error())
	}
	return snap, nil
}

// target is the instance id and the flow (engine) of its version.
func (s *Server) target(ctx context.Context, id string) (record.Snapshot, *flow, *apiError) {
	snap, e := s.snapshot(ctx, id)
	if e != nil {
		return snap, nil, e
	}
	f, ok := s.cat.flow(snap.Hash)
	if !ok {
		return snap, nil, unavailable("no engine runs the version of instance " + snap.ID)
	}
	return snap, f, nil
}

func (s *Server) get(w http.ResponseWriter, r *http.Request) {
	snap, e := s.snapshot(r.Context(), r.PathValue("id"))
	if e != nil {
		writeError(w, e)
		return
	}
	writeJSON(w, http.StatusOK, s.instance(snap))
}

// history answers the instance's history as a JSON array of entries, the
// form wfrun replay reads.
func (s *Server) history(w http.ResponseWriter, r *http.Request) {
	snap, e := s.snapshot(r.Context(), r.PathValue("id"))
	if e != nil {
		writeError(w, e)
		return
	}
	entries, err := s.store.History(r.Context(), snap.ID)
	if err != nil {
		writeError(w, unavailable("the store did not answer: "+err.Error()))
		return
	}
	if entries == nil {
		entries = []record.Entry{}
	}
	writeJSON(w, http.StatusOK, entries)
}

// signalRequest is the body of a signal.
type signalRequest struct {
	Data any `json:"data"`
}

// decodeSignal reads a signal's body: its data, an object (nil when
// absent).
func decodeSignal(data []byte) (map[string]any, *apiError) {
	var req signalRequest
	if e := decode(data, &req); e != nil {
		return nil, e
	}
	switch d := req.Data.(type) {
	case nil:
		return nil, nil
	case map[string]any:
		return d, nil
	default:
		return nil, badField("data", "must be an object")
	}
}

// signal sends a signal to an instance waiting for it: 202, or 409 when the
// instance is not waiting for that signal (nothing changes).
func (s *Server) signal(w http.ResponseWriter, r *http.Request) {
	data, e := readBody(w, r)
	var payload map[string]any
	if e == nil {
		payload, e = decodeSignal(data)
	}
	if e != nil {
		writeError(w, e)
		return
	}
	sum, e := s.sendSignal(r.Context(), r.PathValue("id"), r.PathValue("name"), payload)
	if e != nil {
		writeError(w, e)
		return
	}
	writeJSON(w, http.StatusAccepted, sum)
}

// sendSignal sends the signal name to the instance id: a 409 when the
// instance is not waiting for it (nothing changes).
func (s *Server) sendSignal(ctx context.Context, id, name string, payload map[string]any) (Summary, *apiError) {
	if ans, forwarded := s.elsewhere(ctx, call{Op: opSignal, ID: id, Name: name, Data: payload}); forwarded {
		return ans.Summary, ans.err()
	}
	snap, f, e := s.target(ctx, id)
	if e != nil {
		return Summary{}, e
	}
	err := f.eng.Signal(ctx, snap.ID, name, payload)
	var ie *engine.InputError
	switch {
	case err == nil:
		return Summary{ID: snap.ID, Workflow: snap.Workflow, Version: snap.Version, Status: StatusRunning}, nil
	case errors.As(err, &ie):
		return Summary{}, badField("data"+strings.TrimPrefix(ie.Field, "data"), ie.Reason)
	case errors.Is(err, engine.ErrUnknownInstance) && s.moving(snap):
		return Summary{}, movingError(snap.ID)
	case errors.Is(err, engine.ErrUnexpectedSignal), errors.Is(err, engine.ErrUnknownInstance):
		return Summary{}, conflict("not_waiting", fmt.Sprintf("instance %s is not waiting for signal %q (it is %s in state %s)", snap.ID, name, s.instance(snap).Status, snap.State))
	default:
		return Summary{}, unavailable(err.Error())
	}
}

// selectRequest is the body of a user selection.
type selectRequest struct {
	Agent       string `json:"agent"`
	Explanation string `json:"explanation"`
}

// decodeSelect reads a user selection's body: the agent is required.
func decodeSelect(data []byte) (selectRequest, *apiError) {
	var req selectRequest
	if e := decode(data, &req); e != nil {
		return req, e
	}
	if req.Agent == "" {
		return req, badField("agent", "is required")
	}
	return req, nil
}

func (s *Server) selectAgent(w http.ResponseWriter, r *http.Request) {
	data, e := readBody(w, r)
	var req selectRequest
	if e == nil {
		req, e = decodeSelect(data)
	}
	if e != nil {
		writeError(w, e)
		return
	}
	sum, e := s.selectInstance(r.Context(), r.PathValue("id"), req.Agent, req.Explanation)
	if e != nil {
		writeError(w, e)
		return
	}
	writeJSON(w, http.StatusAccepted, sum)
}

// selectInstance hands the current step of instance id to agent.
func (s *Server) selectInstance(ctx context.Context, id, agent, explanation string) (Summary, *apiError) {
	if ans, forwarded := s.elsewhere(ctx, call{Op: opSelect, ID: id, Agent: agent, Explanation: explanation}); forwarded {
		return ans.Summary, ans.err()
	}
	snap, f, e := s.target(ctx, id)
	if e != nil {
		return Summary{}, e
	}
	if _, declared := f.wf.Agent(agent); !declared {
		return Summary{}, badField("agent", fmt.Sprintf("names no agent of workflow %s: %q", f.wf.Name, agent))
	}
	h, err := f.eng.Instance(snap.ID)
	if err == nil {
		err = h.Select(ctx, agent, explanation)
	}
	var refusal *handoff.RefusalError
	switch {
	case err == nil:
		return Summary{ID: snap.ID, Workflow: snap.Workflow, Version: snap.Version, Status: statusOf(h.Result().Status)}, nil
	case errors.As(err, &refusal):
		return Summary{}, conflict("refused", err.Error())
	case errors.Is(err, engine.ErrUnknownInstance) && s.moving(snap):
		return Summary{}, movingError(snap.ID)
	case errors.Is(err, engine.ErrNoActiveRun), errors.Is(err, engine.ErrUnknownInstance):
		return Summary{}, conflict("no_active_run", fmt.Sprintf("instance %s has no run under way to hand to %s", snap.ID, agent))
	default:
		return Summary{}, unavailable(err.Error())
	}
}

// cancelRequest is the body of a cancel: the reason, in words (optional).
type cancelRequest struct {
	Reason string `json:"reason"`
}

// maxCancelReason bounds the words a cancel keeps on the record.
const maxCancelReason = 1024

func (s *Server) cancel(w http.ResponseWriter, r *http.Request) {
	data, e := readBody(w, r)
	var req cancelRequest
	if e == nil {
		e = decode(data, &req)
	}
	if e == nil && len(req.Reason) > maxCancelReason {
		e = badField("reason", fmt.Sprintf("must be at most %d bytes", maxCancelReason))
	}
	if e != nil {
		writeError(w, e)
		return
	}
	sum, e := s.cancelInstance(r.Context(), r.PathValue("id"), req.Reason)
	if e != nil {
		writeError(w, e)
		return
	}
	writeJSON(w, http.StatusAccepted, sum)
}

// cancelInstance cancels instance id: a 409 when it has finished.
func (s *Server) cancelInstance(ctx context.Context, id, reason string) (Summary, *apiError) {
	if ans, forwarded := s.elsewhere(ctx, call{Op: opCancel, ID: id, Reason: reason}); forwarded {
		return ans.Summary, ans.err()
	}
	snap, e := s.snapshot(ctx, id)
	if e != nil {
		return Summary{}, e
	}
	finished := conflict("finished", fmt.Sprintf("instance %s has already finished (%s)", snap.ID, statusOf(snap.Status)))
	if snap.Status.Finished() {
		return Summary{}, finished
	}
	f, ok := s.cat.flow(snap.Hash)
	if !ok {
		return Summary{}, unavailable("no engine runs the version of instance " + snap.ID)
	}
	h, err := f.eng.Instance(snap.ID)
	if err == nil {
		err = h.CancelWith(ctx, reason)
	}
	switch {
	case err == nil:
		return Summary{ID: snap.ID, Workflow: snap.Workflow, Version: snap.Version, Status: StatusCancelled}, nil
	case errors.Is(err, engine.ErrUnknownInstance) && s.moving(snap):
		return Summary{}, movingError(snap.ID)
	case errors.Is(err, engine.ErrInstanceFinished), errors.Is(err, engine.ErrUnknownInstance):
		return Summary{}, finished
	default:
		return Summary{}, unavailable(err.Error())
	}
}

// sameInput reports whether two start inputs are the same JSON: numbers
// compare by value whatever their Go type, and no input is an empty one.
func sameInput(a, b map[string]any) bool {
	return reflect.DeepEqual(asJSON(a), asJSON(b))
}

func asJSON(m map[string]any) any {
	if len(m) == 0 {
		return map[string]any{}
	}
	data, err := json.Marshal(m)
	if err != nil {
		return m
	}
	var v any
	if json.Unmarshal(data, &v) != nil {
		return m
	}
	return v
}

// Usage is an instance's usage as the API shows it: the totals
// (input_tokens, output_tokens, tokens, cost) and each agent's.
type Usage struct {
	registry.Totals
	Agents map[string]registry.Totals `json:"agents"`
}

func usageOf(l registry.Ledger) Usage {
	u := Usage{Totals: l.Totals, Agents: make(map[string]registry.Totals, len(l.Agents))}
	for _, a := range l.Agents {
		u.Agents[a.Agent] = a.Totals
	}
	return u
}
