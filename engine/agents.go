package engine

import (
	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/rules"
)

// AgentOf converts a workflow's agent declaration into a registry agent with
// the given handler (nil for an external agent).
func AgentOf(a *rules.Agent, h registry.Handler) registry.Agent {
	return registry.Agent{
		ID: a.ID, Type: a.Type, Capabilities: a.Capabilities, System: a.System,
		Selectable: a.Selectable, Queue: a.Queue, Expertise: a.Expertise, Accuracy: a.Accuracy,
		Handler: h,
	}
}

// NewRegistry builds a registry holding every agent of w, with the Go
// handlers given by agent id; agents without one are external.
func NewRegistry(w *rules.Workflow, handlers map[string]registry.Handler) (*registry.Registry, error) {
	reg := registry.New()
	for _, a := range w.Agents {
		if err := reg.Add(AgentOf(a, handlers[a.ID])); err != nil {
			return nil, err
		}
	}
	return reg, nil
}
