package fsm

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/batonhq/baton/rules"
)

// LimitEvent is the implicit event that enters the workflow's on_limit state
// from any other state when a limit is hit. Rule ids cannot start with '@',
// so it never collides with a rule.
const LimitEvent = "@on_limit"

// Transition is one edge of the machine: firing Event in From enters To.
type Transition struct {
	Event string
	From  string
	To    string
}

// Definition is the immutable machine of one workflow, shared by all of its
// instances.
//
// Its size is linear in the workflow: every rule from the same agent leaves
// the same source states, so the sources are kept once per `from` (a group)
// and each event names its group, instead of one entry per (event, source)
// pair, which for a chain of n states owned by one agent is n².
type Definition struct {
	initial string
	states  map[string]bool
	// events maps each event to its destination and its sources' group.
	events map[string]edge
	groups []*group
	// available lists the events that may fire from each state, sorted;
	// states in the same groups share one slice.
	available map[string][]string
}

// edge is one event: from any state of its group into dst.
type edge struct {
	dst   string
	group *group
}

// group is the set of source states shared by the events of one `from`.
type group struct {
	sources []string
	member  map[string]bool
	events  []string
}

// Compile builds the machine of a compiled workflow: one event per rule from
// its source states to its next state, plus LimitEvent into on_limit.
func Compile(w *rules.Workflow) (*Definition, error) {
	if w == nil {
		return nil, errors.New("fsm: nil workflow")
	}
	d := &Definition{
		initial:   w.Initial,
		states:    make(map[string]bool, len(w.States)),
		events:    make(map[string]edge, len(w.Rules)+1),
		available: make(map[string][]string, len(w.States)),
	}
	for _, s := range w.States {
		d.states[s.Name] = true
	}
	byFrom := map[string]*group{}
	for _, r := range w.Rules {
		if len(r.Sources) == 0 {
			continue
		}
		g := byFrom[r.From]
		if g == nil {
			g = d.newGroup(r.Sources)
			byFrom[r.From] = g
		}
		d.add(r.ID, g, r.Next)
	}
	if w.Limits.OnLimit != "" {
		var src []string
		for _, s := range w.States {
			if s.Name != w.Limits.OnLimit && !s.Terminal {
				src = append(src, s.Name)
			}
		}
		if len(src) > 0 {
			d.add(LimitEvent, d.newGroup(src), w.Limits.OnLimit)
		}
	}
	d.indexAvailable()
	return d, nil
}

func (d *Definition) newGroup(sources []string) *group {
	g := &group{sources: sources, member: make(map[string]bool, len(sources))}
	for _, s := range sources {
		g.member[s] = true
	}
	d.groups = append(d.groups, g)
	return g
}

func (d *Definition) add(event string, g *group, dst string) {
	d.events[event] = edge{dst: dst, group: g}
	g.events = append(g.events, event)
}

// indexAvailable fills available: the sorted union of the events of the
// groups each state belongs to, computed once per distinct set of groups.
func (d *Definition) indexAvailable() {
	of := map[string][]int{}
	for i, g := range d.groups {
		for _, s := range g.sources {
			of[s] = append(of[s], i)
		}
	}
	shared := map[string][]string{}
	for s, idx := range of {
		key := fmt.Sprint(idx)
		evs, ok := shared[key]
		if !ok {
			for _, i := range idx {
				evs = append(evs, d.groups[i].events...)
			}
			slices.Sort(evs)
			evs = slices.Compact(evs)
			shared[key] = evs
		}
		d.available[s] = evs
	}
}

// Initial returns the workflow's initial state.
func (d *Definition) Initial() string { return d.initial }

// Transitions lists every edge of the machine, sorted by source, then event.
// There is one edge per (event, source state): for a workflow whose agents
// own many states the list is much larger than the definition.
func (d *Definition) Transitions() []Transition {
	var out []Transition
	for ev, e := range d.events {
		for _, from := range e.group.sources {
			out = append(out, Transition{Event: ev, From: from, To: e.dst})
		}
	}
	slices.SortFunc(out, func(a, b Transition) int {
		return cmp.Or(cmp.Compare(a.From, b.From), cmp.Compare(a.Event, b.Event))
	})
	return out
}

// New returns a machine in the initial state.
func (d *Definition) New() *Machine { return &Machine{def: d, state: d.initial} }

// Restore returns a machine positioned on state, for an instance resumed
// from a store.
func (d *Definition) Restore(state string) (*Machine, error) {
	if !d.states[state] {
		return nil, &TransitionError{State: state, Err: ErrUnknownState}
	}
	return &Machine{def: d, state: state}, nil
}

// Machine is the state machine of one workflow instance. It holds only the
// current state's name; Fire checks and takes the transition in the
// definition's table.
type Machine struct {
	def   *Definition
	mu    sync.Mutex
	state string
}

// Current returns the current state.
func (m *Machine) Current() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.state
}

// Can reports whether event may fire from the current state.
func (m *Machine) Can(event string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.def.can(event, m.state)
}

// Available returns the events that may fire from the current state, sorted.
// The slice is shared: do not modify it.
func (m *Machine) Available() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.def.available[m.state]
}

// Fire takes the transition named event from the current state and returns
// the state entered. A transition into the current state succeeds and leaves
// the state unchanged. A refused transition (an event the workflow does not
// declare, or one that does not leave the current state) returns a
// *TransitionError and leaves the state unchanged; so does a ctx already
// done. Fire answers from the definition's table, allocating nothing.
func (m *Machine) Fire(ctx context.Context, event string) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.def.events[event]
	if !ok {
		return m.state, &TransitionError{Event: event, State: m.state, Err: ErrUnknownEvent}
	}
	if !e.group.member[m.state] {
		return m.state, &TransitionError{Event: event, State: m.state, Err: ErrInvalidTransition}
	}
	if err := ctx.Err(); err != nil {
		return m.state, &TransitionError{Event: event, State: m.state, Err: fmt.Errorf("%w: %w", ErrTransitionFailed, err)}
	}
	m.state = e.dst
	return m.state, nil
}

// can reports whether event may fire from state.
func (d *Definition) can(event, state string) bool {
	e, ok := d.events[event]
	return ok && e.group.member[state]
}
