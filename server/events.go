package server

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/internal/sse"
	"github.com/batonhq/baton/registry"
)

// Event is one engine event as the API streams it. Fields an event does
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

// eventOf turns an engine event into the API's.
func eventOf(ev engine.Event) Event {
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

// hub keeps a ring of recent events and hands new ones to subscribers.
type hub struct {
	mu     sync.Mutex
	ring   []Event
	start  int // index of the oldest event in ring
	size   int
	next   uint64
	subs   map[*subscriber]struct{}
	closed bool
	done   chan struct{}
}

// subscriber is a stream's channel, or a watcher's notify function (called
// under the hub's lock: it must not block). The channel carries pointers,
// shared by every stream and never changed: a buffer of whole events would
// make each idle stream hold megabytes.
type subscriber struct {
	ch     chan *Event
	notify func(Event)
	filter func(Event) bool
	// dropped is set, under the hub's lock, when the hub closed ch because
	// the stream fell a whole buffer behind.
	dropped bool
}

// subscriberSlots is how many events a stream may fall behind the engines
// before it is dropped: at a thousand instances a second (several
// thousand events) a stream that writes in batches stays well within it,
// and an idle stream holds 32 KB of pointers.
const subscriberSlots = 4096

func newHub(size int) *hub {
	return &hub{ring: make([]Event, size), next: 1, subs: map[*subscriber]struct{}{}, done: make(chan struct{})}
}

// publish numbers ev and hands it to the subscribers whose filter takes it.
// It never waits for a stream: a subscriber too slow to keep up is dropped
// (its stream sends a gap event and ends, and the client resumes with
// Last-Event-ID).
func (h *hub) publish(ev Event) {
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

// subscribe returns the kept events after id that filter takes (none when
// replay is false), preceded by a gap event when events after id are no
// longer kept (or id is not one this hub gave: the server restarted), and
// a subscriber for the ones to come.
func (h *hub) subscribe(after uint64, replay bool, filter func(Event) bool) ([]Event, *subscriber, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, nil, false
	}
	var backlog []Event
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
	s := &subscriber{ch: make(chan *Event, subscriberSlots), filter: filter}
	h.subs[s] = struct{}{}
	return backlog, s, true
}

// watch calls notify with every event filter takes, until the returned
// stop; done is closed when the hub closes.
func (h *hub) watch(filter func(Event) bool, notify func(Event)) (stop func(), done <-chan struct{}, ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, nil, false
	}
	s := &subscriber{notify: notify, filter: filter}
	h.subs[s] = struct{}{}
	return func() { h.unsubscribe(s) }, h.done, true
}

// oldest is the id of the oldest kept event, or of the next one when none
// is kept. Call it under the lock.
func (h *hub) oldest() uint64 { return h.next - uint64(h.size) }

// droppedAt reports whether s was dropped for falling behind, and the oldest
// event the hub still keeps.
func (h *hub) droppedAt(s *subscriber) (bool, uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return s.dropped, h.oldest()
}

func (h *hub) unsubscribe(s *subscriber) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.subs[s]; ok {
		delete(h.subs, s)
		if s.ch != nil {
			close(s.ch)
		}
	}
}

// close ends every stream.
func (h *hub) close() {
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

// keepAlive is how often an idle stream gets a comment line, so that
// proxies do not close it.
const keepAlive = 15 * time.Second

// events streams the engines' events as server-sent events.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	wf, inst := q.Get("workflow"), q.Get("instance")
	filter := func(ev Event) bool {
		return (wf == "" || ev.Workflow == wf) && (inst == "" || ev.Instance == inst)
	}
	var after uint64
	last := strings.TrimSpace(r.Header.Get("Last-Event-ID"))
	if last != "" {
		n, err := strconv.ParseUint(last, 10, 64)
		if err != nil {
			writeError(w, badField("Last-Event-ID", "must be an event id (a whole number)"))
			return
		}
		after = n
	}
	if inst != "" {
		s.instanceEvents(w, r, inst, wf, after)
		return
	}
	release, e := s.takeStream()
	if e != nil {
		writeError(w, e)
		return
	}
	defer release()
	st, err := sse.Start(w, s.cfg.WriteTimeout)
	if err != nil {
		writeError(w, unavailable(err.Error()))
		return
	}
	defer st.End()
	backlog, sub, ok := s.hub.subscribe(after, last != "", filter)
	if !ok {
		writeError(w, unavailable("the server is shutting down"))
		return
	}
	defer s.hub.unsubscribe(sub)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if st.Send(func(w io.Writer) {
		fmt.Fprint(w, ": baton events\n\n")
		for _, ev := range backlog {
			writeEvent(w, ev)
		}
	}) != nil {
		return
	}
	if len(backlog) > 0 {
		after = backlog[len(backlog)-1].ID
	}
	tick := time.NewTicker(keepAlive)
	defer tick.Stop()
	for {
		var err error
		select {
		case ev, open := <-sub.ch:
			if !open {
				s.dropped(st, sub, after)
				return
			}
			// Whatever else is waiting goes out in the same write and
			// flush: a stream keeps up by writing more at once.
			err = st.Send(func(w io.Writer) {
				writeEvent(w, *ev)
				after = ev.ID
				for range subscriberSlots {
					select {
					case ev, open := <-sub.ch:
						if !open {
							return
						}
						writeEvent(w, *ev)
						after = ev.ID
						continue
					default:
					}
					return
				}
			})
		case <-tick.C:
			err = st.Send(func(w io.Writer) { fmt.Fprint(w, ": keep-alive\n\n") })
		case <-r.Context().Done():
			return
		case <-s.hub.done:
			return
		}
		if err != nil {
			return // the client is gone or stopped reading
		}
	}
}

// dropped ends a stream the hub closed: one dropped for falling behind
// gets a gap event, its id the last event it was sent, so that the client
// knows to resume from there.
func (s *Server) dropped(st *sse.Stream, sub *subscriber, last uint64) {
	dropped, first := s.hub.droppedAt(sub)
	if !dropped {
		return // the server is closing
	}
	_ = st.Send(func(w io.Writer) {
		writeEvent(w, Event{ID: last, Type: "gap", First: max(first, last+1), Reason: "slow", Time: time.Now().UTC()})
	})
}

func writeEvent(w io.Writer, ev Event) {
	data, _ := json.Marshal(ev)
	fmt.Fprintf(w, "id: %d\nevent: %s\ndata: %s\n\n", ev.ID, ev.Type, data)
}
