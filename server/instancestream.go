package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/batonhq/baton/internal/sse"
	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/rules"
)

// progressSlots is how many agent_progress events an instance's stream
// holds while it writes: progress is never recorded, and a stream that
// falls behind loses the oldest of it, never an event of the history.
const progressSlots = 64

// instanceEvents streams one instance's events: its past ones, then its
// live ones, both built from its history, and an end event once it is
// finished. The hub only wakes the stream: after each of the instance's
// commits the stream reads the history past the last entry it sent, so
// that the past and the live events neither overlap nor leave a gap, and
// a busy server never drops the stream. Event ids count the instance's
// events from 1; a client resumes with the last id it got as
// Last-Event-ID.
func (s *Server) instanceEvents(w http.ResponseWriter, r *http.Request, id, wf string, after uint64) {
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
	// Watch before the first read: a commit after it wakes the stream.
	wake := make(chan struct{}, 1)
	progress := make(chan Event, progressSlots)
	stop, done, ok := s.hub.watch(func(ev Event) bool { return ev.Instance == id }, func(ev Event) {
		if ev.Type == "agent_progress" {
			select {
			case progress <- ev:
			default:
			}
			return
		}
		select {
		case wake <- struct{}{}:
		default:
		}
	})
	if !ok {
		writeError(w, unavailable("the server is shutting down"))
		return
	}
	defer stop()
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if st.Send(func(w io.Writer) { fmt.Fprint(w, ": baton events\n\n") }) != nil {
		return
	}
	c := &instanceCursor{id: id, workflow: wf, flows: s.cat}
	tick := time.NewTicker(keepAlive)
	defer tick.Stop()
	lastID := after // the id of the last event sent
	for {
		evs, finished, err := c.read(r.Context(), s.store)
		if err != nil {
			return // the store did not answer: the client resumes
		}
		var fresh []Event
		for _, ev := range evs {
			if ev.ID > after {
				fresh = append(fresh, ev)
			}
		}
		// Progress heard before this read goes out with the events read,
		// in time order: a run's progress comes before its report, even
		// when both were committed before the stream woke.
		var heard []Event
		for drained := false; !drained; {
			select {
			case ev := <-progress:
				if wf == "" || ev.Workflow == wf {
					heard = append(heard, ev)
				}
			default:
				drained = true
			}
		}
		sent := mergeByTime(fresh, heard, &lastID)
		if len(sent) > 0 || finished {
			err := st.Send(func(w io.Writer) {
				for _, ev := range sent {
					writeEvent(w, ev)
				}
				if finished {
					writeEvent(w, Event{ID: c.n, Type: "end", Instance: id, Workflow: c.snap.Workflow, Version: c.snap.Version, Step: c.last.Step, State: c.last.State, Time: c.last.Time.UTC()})
				}
			})
			if err != nil || finished {
				return
			}
		}
		for waiting := true; waiting; {
			var err error
			select {
			case <-wake:
				waiting = false
			case ev := <-progress:
				if wf != "" && ev.Workflow != wf {
					continue
				}
				ev.ID = lastID
				err = st.Send(func(w io.Writer) { writeEvent(w, ev) })
			case <-tick.C:
				err = st.Send(func(w io.Writer) { fmt.Fprint(w, ": keep-alive\n\n") })
			case <-r.Context().Done():
				return
			case <-done:
				return
			}
			if err != nil {
				return // the client is gone or stopped reading
			}
		}
	}
}

// mergeByTime merges the events read from the history (numbered) with the
// progress heard (not recorded, so unnumbered), in time order; a progress
// event takes the id of the event before it, so that a client resuming
// from it misses none of the recorded ones. last is the id sent last, and
// is moved on.
func mergeByTime(recorded, progress []Event, last *uint64) []Event {
	if len(progress) == 0 {
		if n := len(recorded); n > 0 {
			*last = recorded[n-1].ID
		}
		return recorded
	}
	out := make([]Event, 0, len(recorded)+len(progress))
	i, j := 0, 0
	for i < len(recorded) || j < len(progress) {
		if j < len(progress) && (i == len(recorded) || progress[j].Time.Before(recorded[i].Time)) {
			ev := progress[j]
			ev.ID = *last
			out = append(out, ev)
			j++
			continue
		}
		*last = recorded[i].ID
		out = append(out, recorded[i])
		i++
	}
	return out
}

// instanceCursor reads an instance's events from its history, each entry
// once.
type instanceCursor struct {
	id, workflow string
	flows        *catalog
	snap         record.Snapshot
	past         *pastEvents
	seq          int          // the last entry read
	n            uint64       // the events numbered so far
	last         record.Entry // the entry that finished the instance
}

// read returns the events of the entries committed since the last read,
// numbered, and whether the instance is finished. An instance not yet
// started has no events.
func (c *instanceCursor) read(ctx context.Context, store record.Store) ([]Event, bool, error) {
	if c.past == nil {
		snap, err := store.Instance(ctx, c.id)
		if errors.Is(err, record.ErrUnknownInstance) {
			return nil, false, nil
		}
		if err != nil {
			return nil, false, err
		}
		var wf *rules.Workflow
		if f, ok := c.flows.flow(snap.Hash); ok {
			wf = f.wf
		}
		c.snap, c.past = snap, newPastEvents(snap, wf)
	}
	entries, err := store.History(ctx, c.id)
	if err != nil {
		return nil, false, err
	}
	var out []Event
	finished := false
	for _, en := range entries {
		if ended(en) {
			finished, c.last = true, en
		}
		if en.Seq <= c.seq {
			continue
		}
		c.seq = en.Seq
		from := len(out)
		out = c.past.add(out, en)
		for k := from; k < len(out); k++ {
			c.n++
			out[k].ID = c.n
		}
	}
	if c.workflow != "" && c.snap.Workflow != c.workflow {
		return nil, finished, nil
	}
	return out, finished, nil
}
