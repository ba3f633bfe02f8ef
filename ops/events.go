package ops

import (
	"sync"
	"time"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/registry"
)

// Event is one engine event as the front doors show it (its JSON is the
// HTTP API's event stream's). Fields an event does
// not set are left out.
type Event struct {
	ID              uint64    `json:"id"`
	Type            string    `json:"type"`
	Instance        string    `json:"instance"`
	Workflow        string    `json:"workflow"`
	Version         int       `json:"version"`
	Step            int       `json:"step"`
	State           string    `json:"state,omitempty"`
	Agent           string    `json:"agent,omitempty"`
	Time            time.Time `json:"time"`
	From            string    `json:"from,omitempty"`
	To              string    `json:"to,omitempty"`
	Rule            string    `json:"rule,omitempty"`
	Trigger         string    `json:"trigger,omitempty"`
	Condition       string    `json:"condition,omitempty"`
	Attempt         int       `json:"attempt,omitempty"`
	Kind            string    `json:"kind,omitempty"`
	DelaySeconds    float64   `json:"delay_seconds,omitempty"`
	DurationSeconds float64   `json:"duration_seconds,omitempty"`
	Limit           string    `json:"limit,omitempty"`
	Count           int       `json:"count,omitempty"`
	Max             int       `json:"max,omitempty"`
	Signal          string    `json:"signal,omitempty"`
	Outcome         string    `json:"outcome,omitempty"`
	Reason          string    `json:"reason,omitempty"`
	MessageID       string    `json:"message_id,omitempty"`
	Error           string    `json:"error,omitempty"`
	// Usage is what the run used (agent_reported), when its agent said.
	Usage *registry.Usage `json:"usage,omitempty"`
	// Progress is what a run under way said (agent_progress).
	Progress *registry.Progress `json:"progress,omitempty"`
	// First is, on a gap event, the oldest event the server can still
	// give: the events after the gap's id and before First are lost.
	First uint64 `json:"first,omitempty"`
}

// Finished reports whether the event ends its instance.
func (e Event) Finished() bool {
	return e.Type == "completed" || e.Type == "failed" || e.Type == "cancelled"
}

// EventOf is an engine event as the front doors show it.
func EventOf(ev engine.Event) Event {
	out := Event{
		Type: string(ev.Type), Instance: ev.InstanceID, Workflow: ev.Workflow, Version: ev.Version,
		Step: ev.Step, State: ev.State, Agent: ev.Agent, Time: ev.Time.UTC(), From: ev.From, To: ev.To,
		Rule: ev.Rule, Trigger: ev.Trigger, Condition: ev.Condition, Attempt: ev.Attempt, Kind: ev.Kind,
		DelaySeconds: ev.Delay.Seconds(), DurationSeconds: ev.Duration.Seconds(), Limit: ev.Limit,
		Count: ev.Count, Max: ev.Max, Signal: ev.Signal, Outcome: ev.Outcome, Reason: ev.Reason,
		MessageID: ev.MessageID,
	}
	if ev.Err != nil {
		out.Error = ev.Err.Error()
	}
	if !ev.Usage.IsZero() {
		u := ev.Usage
		out.Usage = &u
	}
	out.Progress = ev.Progress
	return out
}

// Hub keeps a ring of recent events and hands new ones to subscribers: a
// front door subscribes to follow the engines. Its zero value is not
// usable: build one with NewHub.
type Hub struct {
	mu     sync.Mutex
	ring   []Event
	start  int // index of the oldest event in ring
	size   int
	next   uint64
	subs   map[*Subscription]struct{}
	closed bool
	done   chan struct{}
}

// Subscription is a stream's channel, or a watcher's notify function
// (called under the hub's lock: it must not block). The channel carries
// pointers, shared by every stream and never changed: a buffer of whole
// events would make each idle stream hold megabytes.
type Subscription struct {
	h      *Hub
	ch     chan *Event
	notify func(Event)
	filter func(Event) bool
	// dropped is set, under the hub's lock, when the hub closed ch because
	// the stream fell a whole buffer behind.
	dropped bool
}

// SubscriberSlots is how many events a stream may fall behind the engines
// before it is dropped: at a thousand instances a second (several
// thousand events) a stream that writes in batches stays well within it,
// and an idle stream holds 32 KB of pointers.
const SubscriberSlots = 4096

// NewHub is a hub keeping the last size events (at least one).
func NewHub(size int) *Hub {
	return &Hub{ring: make([]Event, max(size, 1)), next: 1, subs: map[*Subscription]struct{}{}, done: make(chan struct{})}
}

// Publish numbers ev and hands it to the subscribers whose filter takes it.
// It never waits for a stream: a subscriber too slow to keep up is dropped
// (its stream sends a gap event and ends, and the client resumes with
// Last-Event-ID).
func (h *Hub) Publish(ev Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return
	}
	ev.ID = h.next
	h.next++
	if h.size < len(h.ring) {
		h.ring[(h.start+h.size)%len(h.ring)] = ev
		h.size++
	} else {
		h.ring[h.start] = ev
		h.start = (h.start + 1) % len(h.ring)
	}
	var shared *Event // one copy for every stream, made when one wants it
	for s := range h.subs {
		if !s.filter(ev) {
			continue
		}
		if s.notify != nil {
			s.notify(ev)
			continue
		}
		if shared == nil {
			shared = new(Event)
			*shared = ev
		}
		select {
		case s.ch <- shared:
		default:
			s.dropped = true
			close(s.ch)
			delete(h.subs, s)
		}
	}
}

// Subscribe returns the kept events after id that filter takes (none when
// replay is false), preceded by a gap event when events after id are no
// longer kept (or id is not one this hub gave: the process restarted), and
// a subscription for the ones to come; ok is false once the hub is closed.
// Close the subscription when done with it.
func (h *Hub) Subscribe(after uint64, replay bool, filter func(Event) bool) (backlog []Event, sub *Subscription, ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, nil, false
	}
	if first := h.oldest(); replay && (after+1 < first || after >= h.next) {
		backlog = append(backlog, Event{ID: first - 1, Type: "gap", First: first, Reason: "expired", Time: time.Now().UTC()})
	}
	if replay {
		for k := range h.size {
			ev := h.ring[(h.start+k)%len(h.ring)]
			if ev.ID > after && filter(ev) {
				backlog = append(backlog, ev)
			}
		}
	}
	s := &Subscription{h: h, ch: make(chan *Event, SubscriberSlots), filter: filter}
	h.subs[s] = struct{}{}
	return backlog, s, true
}

// Watch calls notify with every event filter takes, until the returned
// stop; done is closed when the hub closes. notify is called under the
// hub's lock: it must not block.
func (h *Hub) Watch(filter func(Event) bool, notify func(Event)) (stop func(), done <-chan struct{}, ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, nil, false
	}
	s := &Subscription{h: h, notify: notify, filter: filter}
	h.subs[s] = struct{}{}
	return s.Close, h.done, true
}

// oldest is the id of the oldest kept event, or of the next one when none
// is kept. Call it under the lock.
func (h *Hub) oldest() uint64 { return h.next - uint64(h.size) }

// C is the subscription's channel of events. It is closed when the
// subscription is closed, when the hub closes, and when the subscriber fell
// a whole buffer behind (see Dropped).
func (s *Subscription) C() <-chan *Event { return s.ch }

// Dropped reports whether the subscription was dropped for falling
// behind, and the oldest event the hub still keeps.
func (s *Subscription) Dropped() (bool, uint64) {
	h := s.h
	h.mu.Lock()
	defer h.mu.Unlock()
	return s.dropped, h.oldest()
}

// Close ends the subscription. Safe to call twice.
func (s *Subscription) Close() {
	h := s.h
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.subs[s]; ok {
		delete(h.subs, s)
		if s.ch != nil {
			close(s.ch)
		}
	}
}

// Done is closed when the hub closes.
func (h *Hub) Done() <-chan struct{} { return h.done }

// Close ends every subscription. Safe to call twice.
func (h *Hub) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return
	}
	h.closed = true
	for s := range h.subs {
		if s.ch != nil {
			close(s.ch)
		}
		delete(h.subs, s)
	}
	close(h.done)
}

// WithEvents makes h the hub the operations layer's subscribers follow:
// the process publishes its engines' events there (see EventOf).
func WithEvents(h *Hub) Option { return func(o *Ops) { o.events = h } }

// Subscribe follows the events filter takes, after the event id after
// (with replay, the kept ones first, as Hub.Subscribe): an ErrUnavailable
// when the layer has no hub or it is closed (the process is shutting
// down).
func (o *Ops) Subscribe(after uint64, replay bool, filter func(Event) bool) ([]Event, *Subscription, error) {
	if o.events == nil {
		return nil, nil, Unavailable("no events are kept here", nil)
	}
	backlog, sub, ok := o.events.Subscribe(after, replay, filter)
	if !ok {
		return nil, nil, Unavailable("the server is shutting down", nil)
	}
	return backlog, sub, nil
}

// Watch calls notify with every event filter takes (under the hub's lock:
// notify must not block) until stop; done is closed when the hub closes.
// An ErrUnavailable as Subscribe.
func (o *Ops) Watch(filter func(Event) bool, notify func(Event)) (stop func(), done <-chan struct{}, err error) {
	if o.events == nil {
		return nil, nil, Unavailable("no events are kept here", nil)
	}
	stop, done, ok := o.events.Watch(filter, notify)
	if !ok {
		return nil, nil, Unavailable("the server is shutting down", nil)
	}
	return stop, done, nil
}
