package ops

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/batonhq/baton/rules"
)

// LiveWindow is how recently a NATS agent must have pulled work or sent a
// report to count as live.
const LiveWindow = 30 * time.Second

// Agent is one agent of the hosted workflows, as GET /v1/agents shows it.
type Agent struct {
	ID string `json:"id"`
	// Kind is go (a Go handler of the server), nats (an external agent
	// taking its work from NATS), http, a2a, mcp or llm.
	Kind string `json:"kind"`
	// Workflows are the workflows that declare it, sorted.
	Workflows []string `json:"workflows"`
	// Queued is the work waiting for the agent; InFlight the work it has
	// taken and not yet answered (for an in-process agent: runs under way).
	Queued   int `json:"queued"`
	InFlight int `json:"in_flight"`
	// OldestQueuedSeconds is the age of the oldest work held for a NATS
	// agent (queued or taken); null when none is, or it is not known.
	OldestQueuedSeconds *float64 `json:"oldest_queued_seconds"`
	// DeadLetters counts the dead letters kept of work sent to it.
	DeadLetters int `json:"dead_letters"`
	// Seen is, for a NATS agent, the last time it pulled work or sent a
	// report (null when never, as far as this server knows); Live is
	// whether that was within LiveWindow, or a pull is waiting now.
	Seen *time.Time `json:"seen,omitempty"`
	Live *bool      `json:"live,omitempty"`
	// LastCall is, for an HTTP, A2A, MCP or LLM agent, when its last run
	// was sent, and LastStatus how that run ended: ok, the error's kind,
	// or sent while it is under way.
	LastCall   *time.Time `json:"last_call,omitempty"`
	LastStatus string     `json:"last_status,omitempty"`
}

// QueueState is what the transport tells of an external agent's queue.
type QueueState struct {
	Queued, InFlight int
	// Oldest is when the oldest work held (queued or taken) was sent; zero
	// when none is held.
	Oldest time.Time
	// Pulled is the last time a consumer took work; zero when unknown.
	Pulled time.Time
	// Pulling reports that a consumer is waiting for work now.
	Pulling bool
}

// QueueReader reads the queue of an external agent from its transport (a
// server's NATS JetStream streams).
type QueueReader interface {
	Queue(ctx context.Context, agent string) (QueueState, error)
}

// WithQueues makes Agents read the queues of external agents from q.
func WithQueues(q QueueReader) Option { return func(o *Ops) { o.queues = q } }

// activity is what the events told of each agent: the last report, and
// the last run sent and how it ended. It is fed by a watcher of the hub
// (WithEvents), under the hub's lock, so it never blocks.
type activity struct {
	mu    sync.Mutex
	seen  map[string]time.Time
	calls map[string]call
}

type call struct {
	at     time.Time
	status string
}

func newActivity() *activity {
	return &activity{seen: map[string]time.Time{}, calls: map[string]call{}}
}

func (a *activity) note(ev Event) {
	if ev.Agent == "" {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	switch ev.Type {
	case "run_started":
		a.calls[ev.Agent] = call{at: ev.Time, status: "sent"}
	case "agent_reported":
		status := "ok"
		if ev.Kind != "" {
			status = ev.Kind
		}
		c := a.calls[ev.Agent]
		c.status = status
		if c.at.IsZero() {
			c.at = ev.Time
		}
		a.calls[ev.Agent] = c
		a.seen[ev.Agent] = ev.Time
	case "agent_progress":
		a.seen[ev.Agent] = ev.Time
	}
}

func (a *activity) read(agent string) (seen time.Time, c call) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.seen[agent], a.calls[agent]
}

// watch makes the activity follow the hub's events.
func (a *activity) watch(h *Hub) {
	h.Watch(func(ev Event) bool {
		return ev.Type == "run_started" || ev.Type == "agent_reported" || ev.Type == "agent_progress"
	}, a.note)
}

// Agents lists every agent of every workflow served (and of the
// sub-workflows they run), by id: its kind, the workflows that declare
// it, its queue, its dead letters, and whether anyone is there to do its
// work.
func (o *Ops) Agents(ctx context.Context) ([]Agent, error) {
	byID := map[string]*Agent{}
	for _, name := range o.cat.Names() {
		for _, f := range o.cat.Versions(name) {
			queues := map[string]bool{}
			if f.Engine != nil {
				for id, l := range f.Engine.AgentQueues() {
					queues[id] = true
					a := agentEntry(byID, id)
					a.Queued += l.Queued
					a.InFlight += l.Running
				}
			}
			for _, w := range flowWorkflows(f) {
				for _, decl := range w.Agents {
					a := agentEntry(byID, decl.ID)
					if !slices.Contains(a.Workflows, w.Name) {
						a.Workflows = append(a.Workflows, w.Name)
					}
					if a.Kind == "" || a.Kind == TransportNATS {
						a.Kind = agentKind(w, decl.ID, queues[decl.ID])
					}
				}
			}
		}
	}
	letters, err := o.store.DeadLetters(ctx)
	if err != nil {
		return nil, storeError(err)
	}
	for _, d := range letters {
		if a, ok := byID[d.To]; ok {
			a.DeadLetters++
		}
	}
	now := time.Now()
	out := make([]Agent, 0, len(byID))
	for _, id := range sortedKeys(byID) {
		a := byID[id]
		if a.Kind == "" { // a lane of no workflow served (none today)
			continue
		}
		slices.Sort(a.Workflows)
		if err := o.describe(ctx, a, now); err != nil {
			return nil, err
		}
		out = append(out, *a)
	}
	return out, nil
}

// describe adds what the transport and the events tell of a.
func (o *Ops) describe(ctx context.Context, a *Agent, now time.Time) error {
	var seen time.Time
	var last call
	if o.activity != nil {
		seen, last = o.activity.read(a.ID)
	}
	switch a.Kind {
	case TransportGo:
	case TransportNATS:
		pulling := false
		if o.queues != nil {
			q, err := o.queues.Queue(ctx, a.ID)
			if err != nil {
				return Unavailable("the queue of agent "+a.ID+" cannot be read", err)
			}
			a.Queued, a.InFlight, pulling = q.Queued, q.InFlight, q.Pulling
			if !q.Oldest.IsZero() {
				age := max(now.Sub(q.Oldest), 0).Seconds()
				a.OldestQueuedSeconds = &age
			}
			if q.Pulled.After(seen) {
				seen = q.Pulled
			}
		}
		live := pulling || (!seen.IsZero() && now.Sub(seen) <= LiveWindow)
		a.Live = &live
		if !seen.IsZero() {
			s := seen.UTC()
			a.Seen = &s
		}
	default:
		if !last.at.IsZero() {
			at := last.at.UTC()
			a.LastCall, a.LastStatus = &at, last.status
		}
	}
	return nil
}

func agentEntry(byID map[string]*Agent, id string) *Agent {
	a, ok := byID[id]
	if !ok {
		a = &Agent{ID: id, Workflows: []string{}}
		byID[id] = a
	}
	return a
}

// flowWorkflows are f's workflow and those its workflow states run.
func flowWorkflows(f Flow) []*rules.Workflow {
	if f.Engine != nil {
		return f.Engine.Workflows()
	}
	return []*rules.Workflow{f.Workflow}
}

// NoConsumer returns the agents of in's pending runs that take their work
// from NATS and have nobody taking it: no consumer pulled work, and the
// agent sent no report, within LiveWindow, and no pull waits now. It
// reads each such agent's queue once.
func (o *Ops) NoConsumer(ctx context.Context, in Instance) ([]string, error) {
	var out []string
	now := time.Now()
	for _, p := range in.Pending {
		if p.Transport != TransportNATS || slices.Contains(out, p.Agent) {
			continue
		}
		a := Agent{ID: p.Agent, Kind: TransportNATS}
		if err := o.describe(ctx, &a, now); err != nil {
			return nil, err
		}
		if !*a.Live {
			out = append(out, p.Agent)
		}
	}
	return out, nil
}
