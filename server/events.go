package server

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/internal/sse"
	"github.com/batonhq/baton/ops"
)

// Event is one engine event as the API streams it. Fields an event does
// not set are left out.
type Event = ops.Event

// eventOf turns an engine event into the API's.
func eventOf(ev engine.Event) Event { return ops.EventOf(ev) }

// hub keeps a ring of recent events and hands new ones to subscribers: the
// operations layer's, under the names the server's streams use.
type hub struct {
	*ops.Hub
	done <-chan struct{}
}

// subscriber is a stream's subscription.
type subscriber struct {
	*ops.Subscription
	ch <-chan *Event
}

// subscriberSlots is how many events a stream may fall behind the engines
// before it is dropped.
const subscriberSlots = ops.SubscriberSlots

func newHub(size int) *hub {
	h := ops.NewHub(size)
	return &hub{Hub: h, done: h.Done()}
}

func (h *hub) publish(ev Event) { h.Publish(ev) }

func (h *hub) subscribe(after uint64, replay bool, filter func(Event) bool) ([]Event, *subscriber, bool) {
	backlog, sub, ok := h.Subscribe(after, replay, filter)
	if !ok {
		return nil, nil, false
	}
	return backlog, &subscriber{Subscription: sub, ch: sub.C()}, true
}

func (h *hub) watch(filter func(Event) bool, notify func(Event)) (stop func(), done <-chan struct{}, ok bool) {
	return h.Watch(filter, notify)
}

func (h *hub) droppedAt(s *subscriber) (bool, uint64) { return s.Dropped() }

func (h *hub) unsubscribe(s *subscriber) { s.Close() }

func (h *hub) close() { h.Close() }

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
