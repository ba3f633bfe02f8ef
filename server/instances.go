package server

import (
	"context"
	"net/http"
	"net/url"

	"github.com/batonhq/baton/ops"
)

// Instance is an instance as the API shows it.
type Instance = ops.Instance

// Summary is what a start answers.
type Summary = ops.Summary

// Usage is an instance's usage as the API shows it: the totals
// (input_tokens, output_tokens, tokens, cost) and each agent's.
type Usage = ops.Usage

// Status values of the API. The engine spells a cancelled instance
// "canceled"; the API says "cancelled".
const (
	StatusRunning   = ops.StatusRunning
	StatusWaiting   = ops.StatusWaiting
	StatusCompleted = ops.StatusCompleted
	StatusFailed    = ops.StatusFailed
	StatusCancelled = ops.StatusCancelled
)

// opsCatalog is the server's catalog as the operations layer reads it.
type opsCatalog struct{ c *catalog }

func flowOf(f *flow) ops.Flow { return ops.Flow{Workflow: f.wf, Engine: f.eng, Current: f.current} }

func (c opsCatalog) Flow(hash string) (ops.Flow, bool) {
	f, ok := c.c.flow(hash)
	if !ok {
		return ops.Flow{}, false
	}
	return flowOf(f), true
}

func (c opsCatalog) Versions(name string) []ops.Flow {
	fs := c.c.versions(name)
	out := make([]ops.Flow, len(fs))
	for k, f := range fs {
		out[k] = flowOf(f)
	}
	return out
}

func (c opsCatalog) Names() []string { return c.c.names() }

// opsRouter sends the operations on an instance another server of the
// cluster owns to that server.
type opsRouter struct{ s *Server }

func (r opsRouter) NewID() string {
	if r.s.clu == nil {
		return ""
	}
	return r.s.clu.node.NewID()
}

func (r opsRouter) Moves() bool { return r.s.clu != nil }

func (r opsRouter) Route(ctx context.Context, op ops.Op) (ops.Result, bool) {
	c := call{Op: string(op.Kind), ID: op.ID, Name: op.Name, Data: op.Data, Agent: op.Agent, Explanation: op.Explanation, Reason: op.Reason}
	if op.Kind == ops.OpStart {
		c.Workflow, c.Version, c.Input, c.Traceparent = op.Start.Workflow, op.Start.Version, op.Start.Input, op.Start.Traceparent
	}
	ans, forwarded := r.s.elsewhere(ctx, c)
	if !forwarded {
		return ops.Result{}, false
	}
	res := ops.Result{Summary: ans.Summary, Created: ans.Created}
	if e := ans.err(); e != nil {
		res.Err = opsError(e)
	}
	return res, true
}

// Ops is the server's operations layer: the one the HTTP API and the web
// view call, for any other front door mounted beside them.
func (s *Server) Ops() *ops.Ops { return s.ops }

// newOps is the operations layer of the server.
func (s *Server) newOps() *ops.Ops {
	opts := append([]ops.Option{ops.WithRouter(opsRouter{s}), ops.WithStartWait(s.cfg.StartWait),
		ops.WithDraining(s.stopping.Load), ops.WithEvents(s.hub.Hub)}, s.opsQueues()...)
	if s.back.finished != nil {
		opts = append(opts, ops.WithFinished(s.back.finished))
	}
	return ops.New(s.store, opsCatalog{s.cat}, opts...)
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
	in := ops.StartRequest{Workflow: name, Input: req.Input, Traceparent: traceparent}
	if req.ID != nil {
		in.ID = *req.ID
	}
	if req.Version != nil {
		in.Version = *req.Version
	}
	sum, created, err := s.ops.Start(ctx, in)
	return sum, created, apiErrorOf(err)
}

func (s *Server) get(w http.ResponseWriter, r *http.Request) {
	in, err := s.ops.Get(r.Context(), r.PathValue("id"))
	if err != nil {
		writeError(w, apiErrorOf(err))
		return
	}
	writeJSON(w, http.StatusOK, in)
}

// history answers the instance's history as a JSON array of entries, the
// form wfrun replay reads.
func (s *Server) history(w http.ResponseWriter, r *http.Request) {
	entries, err := s.ops.History(r.Context(), r.PathValue("id"))
	if err != nil {
		writeError(w, apiErrorOf(err))
		return
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
	sum, err := s.ops.Signal(ctx, id, name, payload)
	return sum, apiErrorOf(err)
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
	sum, err := s.ops.Select(ctx, id, agent, explanation)
	return sum, apiErrorOf(err)
}

// cancelRequest is the body of a cancel: the reason, in words (optional).
type cancelRequest struct {
	Reason string `json:"reason"`
}

func (s *Server) cancel(w http.ResponseWriter, r *http.Request) {
	data, e := readBody(w, r)
	var req cancelRequest
	if e == nil {
		e = decode(data, &req)
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
	sum, err := s.ops.Cancel(ctx, id, reason)
	return sum, apiErrorOf(err)
}
