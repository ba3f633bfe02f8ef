package bus

import (
	"sync"

	"go.uber.org/zap"
)

// idemKey scopes an idempotency key to its receiver and message type, so
// that a broadcast's copies, or an ERROR about a hand-off, never pass for
// the hand-off they share a key with.
type idemKey struct {
	to  string
	typ MessageType
	key string
}

type idemEntry struct {
	id  string // message accepted with the key
	exp int64  // when the key is forgotten, bus-clock unix nanoseconds
}

type idemOrder struct {
	k   idemKey
	exp int64
}

// idempotency remembers the keys of accepted messages for a window. Keys
// expire in the order they were claimed (the window is fixed), so a FIFO
// of claims prunes them in amortised O(1); released or re-claimed keys
// leave stale FIFO entries that are skipped when they reach the head.
type idempotency struct {
	window int64
	max    int

	mu    sync.Mutex
	seen  map[idemKey]idemEntry
	order []idemOrder // FIFO from head
	head  int
}

func newIdempotency(cfg config) *idempotency {
	if cfg.idemWindow <= 0 {
		return nil
	}
	return &idempotency{window: int64(cfg.idemWindow), max: cfg.idemMax, seen: make(map[idemKey]idemEntry)}
}

// claim records k for message id unless it is already remembered, in which
// case it returns the id of the message that holds it.
func (s *idempotency) claim(k idemKey, id string, now int64) (holder string, dup bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pruneLocked(now)
	if e, ok := s.seen[k]; ok && e.exp > now {
		return e.id, true
	}
	for len(s.seen) >= s.max && s.head < len(s.order) {
		s.popLocked()
	}
	exp := now + s.window
	s.seen[k] = idemEntry{id: id, exp: exp}
	s.order = append(s.order, idemOrder{k: k, exp: exp})
	return "", false
}

// release forgets k if message id holds it: the message was not accepted,
// or was dead-lettered, so a new send with the key must go through.
func (s *idempotency) release(k idemKey, id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.seen[k]; ok && e.id == id {
		delete(s.seen, k)
	}
}

func (s *idempotency) pruneLocked(now int64) {
	for s.head < len(s.order) && s.order[s.head].exp <= now {
		s.popLocked()
	}
	// Compact once the consumed head, or stale entries, dominate.
	if live := len(s.order) - s.head; s.head > 1024 && s.head > live || live > 2*s.max+1024 {
		kept := s.order[:0]
		for _, o := range s.order[s.head:] {
			if e, ok := s.seen[o.k]; ok && e.exp == o.exp {
				kept = append(kept, o)
			}
		}
		clear(s.order[len(kept):])
		s.order, s.head = kept, 0
	}
}

func (s *idempotency) popLocked() {
	o := s.order[s.head]
	s.order[s.head] = idemOrder{}
	s.head++
	if e, ok := s.seen[o.k]; ok && e.exp == o.exp {
		delete(s.seen, o.k)
	}
}

func (s *idempotency) size() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.seen)
}

// claimKey deduplicates m by its idempotency key, if it has one. It reports
// true when m is a duplicate, which the caller acknowledges without
// delivering it.
func (b *Bus) claimKey(m *Message, sc *sendConfig, now int64) bool {
	if b.idem == nil {
		return false
	}
	key := m.Key()
	if key == "" {
		return false
	}
	holder, dup := b.idem.claim(idemKey{to: m.To, typ: m.Type, key: key}, m.MessageID, now)
	if !dup {
		return false
	}
	b.duplicates.Add(1)
	if sc != nil && sc.receipt != nil {
		sc.receipt.Duplicate, sc.receipt.DuplicateOf = true, holder
	}
	if ce := b.log.Check(zap.DebugLevel, "duplicate acknowledged"); ce != nil {
		ce.Write(zap.String("category", "idempotency"), messageFields(m),
			zap.String("idempotency_key", key), zap.String("duplicate_of", holder))
	}
	return true
}

// releaseKey forgets m's idempotency key if m holds it.
func (b *Bus) releaseKey(m *Message) {
	if b.idem == nil {
		return
	}
	if key := m.Key(); key != "" {
		b.idem.release(idemKey{to: m.To, typ: m.Type, key: key}, m.MessageID)
	}
}
