package webview

import (
	"context"
	"net/http"

	"github.com/batonhq/baton/ops"
)

// Pending is one thing an unfinished instance waits on.
type Pending = ops.Pending

// Agent is one agent of the workflows served, with its queue and whether
// anyone is taking its work.
type Agent = ops.Agent

// AgentLister is implemented by a Backend that can list the agents of its
// workflows (OpsBackend does): the view then has an Agents page.
type AgentLister interface {
	Agents(ctx context.Context) ([]Agent, error)
}

// Agents implements AgentLister.
func (b OpsBackend) Agents(ctx context.Context) ([]Agent, error) {
	list, err := b.Ops.Agents(ctx)
	return list, viewError(err)
}

// agentsPage is the Agents page's data.
type agentsPage struct {
	Agents []Agent
}

// agents draws the Agents page.
func (h *Handler) agents(w http.ResponseWriter, r *http.Request) {
	lister, ok := h.b.(AgentLister)
	if !ok {
		h.fail(w, r, http.StatusNotFound, "this view lists no agents")
		return
	}
	list, err := lister.Agents(r.Context())
	if err != nil {
		h.unavailable(w, r, err)
		return
	}
	v := h.view(r, "Agents", agentsPage{Agents: list})
	v.Nav = "agents"
	h.render(w, http.StatusOK, "agents", v)
}
