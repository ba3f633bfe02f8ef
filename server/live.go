package server

import (
	"sync"

	"github.com/batonhq/baton/engine"
)

// liveFlows maps the instances this server's engines started and hold in
// memory to the source hash of their version, so that a report finds its
// engine without reading the instance back from the store.
//
// An id may name another instance later: a finished instance is pruned and
// its id taken again, on this server or on another sharing NATS, perhaps
// on another version of its workflow. So an entry lives only from the
// instance's start to its end (or until its partition goes to another
// server), and a hit counts only while an engine of this server still
// holds the instance running; anything else is read from the store.
type liveFlows struct{ m sync.Map } // instance id -> hash

// observe keeps the map from an engine's events for version hash.
func (l *liveFlows) observe(hash string, ev engine.Event) {
	switch ev.Type {
	case engine.EventInstanceStarted:
		l.m.Store(ev.InstanceID, hash)
	case engine.EventCompleted, engine.EventFailed, engine.EventCancelled:
		l.m.Delete(ev.InstanceID)
	}
}

// hash returns the version hash of instance id, if this server started it
// and it has not ended.
func (l *liveFlows) hash(id string) (string, bool) {
	v, ok := l.m.Load(id)
	if !ok {
		return "", false
	}
	return v.(string), true
}

// forget drops the entries of the instances in matches: their partitions
// went to another server.
func (l *liveFlows) forget(in func(id string) bool) {
	l.m.Range(func(k, _ any) bool {
		if id := k.(string); in(id) {
			l.m.Delete(id)
		}
		return true
	})
}

// drop removes the entry of id, found stale.
func (l *liveFlows) drop(id string) { l.m.Delete(id) }

// liveFlow is the flow of instance id when an engine of this server holds
// it running: the engine answers its reports from memory.
func (s *Server) liveFlow(id string) (*flow, bool) {
	hash, ok := s.live.hash(id)
	if !ok {
		return nil, false
	}
	f, ok := s.cat.flow(hash)
	if ok {
		// The engines share a family: an instance one of them runs is
		// found in memory, whichever is asked.
		if h, err := f.eng.Instance(id); err == nil && running(h) {
			return f, true
		}
	}
	s.live.drop(id)
	return nil, false
}

// running reports whether the instance of h has not finished.
func running(h *engine.Instance) bool {
	select {
	case <-h.Done():
		return false
	default:
		return true
	}
}
