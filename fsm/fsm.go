package fsm

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	looplab "github.com/looplab/fsm"

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
type Definition struct {
	initial string
	states  map[string]bool
	// next maps event -> source state -> destination.
	next map[string]map[string]string
	// available lists the events that may fire from each state, sorted.
	available map[string][]string
	events    looplab.Events
	pool      sync.Pool
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
		next:      make(map[string]map[string]string, len(w.Rules)+1),
		available: make(map[string][]string, len(w.States)),
	}
	for _, s := range w.States {
		d.states[s.Name] = true
	}
	for _, r := range w.Rules {
		if len(r.Sources) == 0 {
			continue
		}
		d.add(r.ID, r.Sources, r.Next)
	}
	if w.Limits.OnLimit != "" {
		var src []string
		for _, s := range w.States {
			if s.Name != w.Limits.OnLimit && !s.Terminal {
				src = append(src, s.Name)
			}
		}
		d.add(LimitEvent, src, w.Limits.OnLimit)
	}
	for s := range d.available {
		slices.Sort(d.available[s])
	}
	d.pool.New = func() any { return looplab.NewFSM(d.initial, d.events, nil) }
	return d, nil
}

func (d *Definition) add(event string, sources []string, dst string) {
	if len(sources) == 0 {
		return
	}
	m := make(map[string]string, len(sources))
	for _, s := range sources {
		m[s] = dst
		d.available[s] = append(d.available[s], event)
	}
	d.next[event] = m
	d.events = append(d.events, looplab.EventDesc{Name: event, Src: slices.Clone(sources), Dst: dst})
}

// Initial returns the workflow's initial state.
func (d *Definition) Initial() string { return d.initial }

// Transitions lists every edge of the machine, sorted by source, then event.
func (d *Definition) Transitions() []Transition {
	var out []Transition
	for ev, m := range d.next {
		for from, to := range m {
			out = append(out, Transition{Event: ev, From: from, To: to})
		}
	}
	slices.SortFunc(out, func(a, b Transition) int {
		if a.From != b.From {
			if a.From < b.From {
				return -1
			}
			return 1
		}
		if a.Event < b.Event {
			return -1
		}
		if a.Event > b.Event {
			return 1
		}
		return 0
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
// current state's name; the looplab machine that validates each transition is
// borrowed from the definition's pool for the duration of Fire.
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
	_, ok := m.def.next[event][m.state]
	return ok
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
// the state unchanged. A refused transition returns a *TransitionError and
// leaves the state unchanged.
func (m *Machine) Fire(ctx context.Context, event string) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	f := m.def.pool.Get().(*looplab.FSM)
	defer m.def.pool.Put(f)
	f.SetState(m.state)
	if err := f.Event(ctx, event); err != nil {
		var noTransition looplab.NoTransitionError
		if !errors.As(err, &noTransition) || noTransition.Err != nil {
			return m.state, translate(event, m.state, err)
		}
	}
	m.state = f.Current()
	return m.state, nil
}

func translate(event, state string, err error) error {
	var (
		unknown looplab.UnknownEventError
		invalid looplab.InvalidEventError
	)
	switch {
	case errors.As(err, &unknown):
		return &TransitionError{Event: event, State: state, Err: ErrUnknownEvent}
	case errors.As(err, &invalid):
		return &TransitionError{Event: event, State: state, Err: ErrInvalidTransition}
	default:
		return &TransitionError{Event: event, State: state, Err: fmt.Errorf("%w: %w", ErrTransitionFailed, err)}
	}
}
