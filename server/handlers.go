package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/batonhq/baton/check"
	"github.com/batonhq/baton/fsm"
	"github.com/batonhq/baton/ops"
	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/wire"
)

// report takes an agent's report: 200 with the engine's answer; 400 only
// when the body is not a report.
func (s *Server) report(w http.ResponseWriter, r *http.Request) {
	data, e := readBody(w, r)
	if e != nil {
		writeError(w, e)
		return
	}
	rep, e := decodeReport(data)
	if e != nil {
		if id, ok := reportIdentity(data); ok {
			// A report of a run that says something it may not (bad usage,
			// progress beside an outcome, two outcomes) is answered as the
			// engine answers any report it refuses, and changes nothing.
			writeJSON(w, http.StatusOK, wire.Answer{Code: wire.CodeInvalid, Message: fmt.Sprintf("report for %s step %d: %s: %s", id.InstanceID, id.Step, e.Field, e.Message)})
			return
		}
		writeError(w, e)
		return
	}
	if s.clu != nil {
		// The engine running the instance may be another server's.
		ans, err := s.clu.node.Report(r.Context(), &rep)
		if err == nil && ans.Code == wire.CodeUnknownInstance {
			if in, err := s.ops.Get(r.Context(), rep.InstanceID); err == nil && !in.Finished() {
				err = errors.New(ans.Message) // it exists: its engine is moving
			}
		}
		if err != nil {
			writeError(w, retryLater(unavailable("instance "+rep.InstanceID+" is moving between servers: report again ("+err.Error()+")")))
			return
		}
		writeJSON(w, http.StatusOK, ans)
		return
	}
	ans, err := s.route(r.Context(), &rep)
	if err != nil {
		writeError(w, unavailable(err.Error()))
		return
	}
	writeJSON(w, http.StatusOK, ans)
}

// route hands a report to the engine of its instance's version; an error
// means the store did not answer. The engine of an instance this server
// runs is known without reading the store.
func (s *Server) route(ctx context.Context, rep *wire.Report) (wire.Answer, error) {
	if f, ok := s.liveFlow(rep.InstanceID); ok {
		return f.eng.HandleReport(ctx, rep), nil
	}
	snap, err := s.store.Instance(ctx, rep.InstanceID)
	if errors.Is(err, record.ErrUnknownInstance) {
		return wire.Answer{Code: wire.CodeUnknownInstance, Message: "no instance " + strconv.Quote(rep.InstanceID)}, nil
	}
	if err != nil {
		return wire.Answer{}, errors.New("the store did not answer: " + err.Error())
	}
	f, ok := s.cat.flow(snap.Hash)
	if !ok {
		return wire.Answer{Code: wire.CodeUnknownInstance, Message: "no engine runs the version of instance " + rep.InstanceID}, nil
	}
	return f.eng.HandleReport(ctx, rep), nil
}

// decodeReport reads a report's body: a 400 naming the field when it is
// not a report.
func decodeReport(data []byte) (wire.Report, *apiError) {
	rep, err := wire.DecodeReport(data)
	if err == nil {
		return rep, nil
	}
	var fe *wire.FieldError
	if errors.As(err, &fe) {
		return rep, badField(fe.Field, fe.Reason)
	}
	return rep, &apiError{Status: http.StatusBadRequest, Code: "invalid_json", Message: err.Error()}
}

// reportIdentity reads the identity of a body that is not a valid report:
// ok when it is a JSON object naming an instance, a step and an agent, so
// that it is a report, if one the engine cannot take.
func reportIdentity(data []byte) (id struct {
	InstanceID string `json:"instance_id"`
	Step       int    `json:"step"`
	Agent      string `json:"agent"`
}, ok bool) {
	var raw map[string]json.RawMessage
	if json.Unmarshal(data, &raw) != nil {
		return id, false
	}
	for key, dst := range map[string]any{"instance_id": &id.InstanceID, "step": &id.Step, "agent": &id.Agent} {
		if json.Unmarshal(raw[key], dst) != nil {
			return id, false
		}
	}
	return id, id.InstanceID != "" && id.Step >= 1 && id.Agent != ""
}

// WorkflowInfo is a hosted workflow and its versions.
type WorkflowInfo struct {
	Name        string        `json:"name"`
	Description string        `json:"description"`
	Versions    []VersionInfo `json:"versions"`
}

// VersionInfo is one version of a workflow: current when its file is in
// the workflows directory, otherwise kept for the instances started on it.
type VersionInfo struct {
	Version int    `json:"version"`
	Hash    string `json:"hash"`
	File    string `json:"file"`
	Current bool   `json:"current"`
}

func (s *Server) workflows(w http.ResponseWriter, r *http.Request) {
	out := []WorkflowInfo{}
	for _, wf := range s.ops.Workflows() {
		out = append(out, WorkflowInfo{Name: wf.Name, Description: wf.Description, Versions: versionInfos(wf.Versions)})
	}
	writeJSON(w, http.StatusOK, map[string]any{"workflows": out})
}

func versionInfos(fs []ops.Flow) []VersionInfo {
	out := make([]VersionInfo, len(fs))
	for k, f := range fs {
		out[k] = VersionInfo{Version: f.Workflow.Version, Hash: f.Workflow.Hash, File: f.Workflow.File, Current: f.Current}
	}
	return out
}

// WorkflowDetail is one version of a workflow, with what wfrun check
// proves of it.
type WorkflowDetail struct {
	Name        string        `json:"name"`
	Description string        `json:"description"`
	Version     int           `json:"version"`
	Hash        string        `json:"hash"`
	File        string        `json:"file"`
	Current     bool          `json:"current"`
	Versions    []VersionInfo `json:"versions"`
	Check       *check.Report `json:"check"`
	// Source is the version's YAML, as loaded.
	Source string `json:"source"`
}

// workflow answers one version of a workflow (the current one unless
// ?version= names another) with its check report.
func (s *Server) workflow(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	f, e := s.pickFlow(name, r.URL.Query())
	if e != nil {
		writeError(w, e)
		return
	}
	out := WorkflowDetail{
		Name: f.wf.Name, Description: f.wf.Description, Version: f.wf.Version, Hash: f.wf.Hash,
		File: f.wf.File, Current: f.current, Check: f.report(), Source: string(f.wf.Source),
	}
	for _, v := range s.cat.versions(name) {
		out.Versions = append(out.Versions, VersionInfo{Version: v.wf.Version, Hash: v.wf.Hash, File: v.wf.File, Current: v.current})
	}
	writeJSON(w, http.StatusOK, out)
}

// pickFlow is the version of workflow name that ?version= asks for, the
// current one when it names none.
func (s *Server) pickFlow(name string, q url.Values) (*flow, *apiError) {
	version := 0
	if v := q.Get("version"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return nil, badField("version", "must be a whole number, 1 or more")
		}
		version = n
	}
	picked, err := s.ops.Pick(name, version)
	if err != nil {
		e := apiErrorOf(err)
		if e.Code == ops.CodeUnknownWorkflow {
			e.Field = "name" // the path's
		}
		return nil, e
	}
	f, ok := s.cat.flow(picked.Workflow.Hash)
	if !ok {
		return nil, unavailable("workflow " + name + " was reloaded: ask again")
	}
	return f, nil
}

// graph answers a workflow version's state diagram.
func (s *Server) graph(w http.ResponseWriter, r *http.Request) {
	name, q := r.PathValue("name"), r.URL.Query()
	format := q.Get("format")
	if format == "" {
		format = "mermaid"
	}
	if format != "mermaid" && format != "dot" {
		writeError(w, badField("format", "must be mermaid or dot"))
		return
	}
	f, e := s.pickFlow(name, q)
	if e != nil {
		writeError(w, e)
		return
	}
	diagram := fsm.Mermaid(f.wf)
	if format == "dot" {
		diagram = fsm.DOT(f.wf)
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"workflow": f.wf.Name, "version": f.wf.Version, "hash": f.wf.Hash, "format": format, "graph": diagram,
	})
}

// deadLetters answers the stored dead letters, newest first, paged by
// their sequence number.
func (s *Server) deadLetters(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit, e := limitOf(q)
	if e != nil {
		writeError(w, e)
		return
	}
	page, err := s.ops.DeadLetters(r.Context(), ops.DeadLetterQuery{Instance: q.Get("instance"), Cursor: q.Get("cursor"), Limit: limit})
	if err != nil {
		writeError(w, apiErrorOf(err))
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"dead_letters": page.DeadLetters, "next": nextOf(page.Next)})
}

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// readyz answers 200 once NATS and the store answer, 503 while they do not or
// while the server shuts down.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	if s.stopping.Load() {
		writeError(w, unavailable("the server is shutting down"))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if err := s.back.ready(ctx); err != nil {
		writeError(w, unavailable(err.Error()))
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}
