package engine

import (
	"fmt"
	"sort"

	"github.com/batonhq/baton/internal/suggest"
	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/rules"
)

// AgentOf converts a workflow's agent declaration into a registry agent with
// the given handler (nil for an external agent).
func AgentOf(a *rules.Agent, h registry.Handler) registry.Agent {
	return registry.Agent{
		ID: a.ID, Type: a.Type, Capabilities: a.Capabilities, System: a.System,
		Selectable: a.Selectable, Queue: a.Queue, Concurrency: a.Concurrency,
		Expertise: a.Expertise, Accuracy: a.Accuracy, Handler: h,
	}
}

// NewRegistry builds a registry holding every agent of w, with the Go
// handlers given by agent id; agents without one are external. A handler
// for an agent the workflow does not declare is refused with a
// *registry.UnknownAgentError (and a did-you-mean): a misspelled key would
// otherwise leave the agent external and its work waiting for nobody.
func NewRegistry(w *rules.Workflow, handlers map[string]registry.Handler) (*registry.Registry, error) {
	if w == nil {
		return nil, fmt.Errorf("engine: nil workflow")
	}
	ids := make([]string, len(w.Agents))
	for k, a := range w.Agents {
		ids[k] = a.ID
	}
	var unknown []string
	for id := range handlers {
		if _, ok := w.Agent(id); !ok {
			unknown = append(unknown, id)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return nil, fmt.Errorf("engine: a handler is given for an agent workflow %s does not declare: %w", w.Name, &registry.UnknownAgentError{
			ID: unknown[0], Suggestion: suggest.Nearest(unknown[0], ids),
		})
	}
	reg := registry.New()
	for _, a := range w.Agents {
		if err := reg.Add(AgentOf(a, handlers[a.ID])); err != nil {
			return nil, err
		}
	}
	return reg, nil
}
