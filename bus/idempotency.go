package bus

import (
	"hash/maphash"
	"sync"

	"github.com/batonhq/baton/transport"
	"go.uber.org/zap"
)

// idemKey scopes an idempotency key to its receiver and message type, so
// that a broadcast's copies, or an ERROR about a hand-off, never pass for
// the hand-off they share a key with.
type idemKey struct {
	to  string
	typ transport.MessageType
	key string
}

type idemEntry struct {
	k   idemKey
	id  string // message accepted with the key
	exp int64  // when the key is forgotten, bus-clock unix nanoseconds
}

type idemOrder struct {
	h   uint64
	exp int64
}

// idempotency remembers the keys of accepted messages for a window, spread
// over shards by the key's hash so that concurrent senders rarely meet on a
// lock. Each shard maps the 64-bit hash of (receiver, type, key), which
// probes far faster than the three strings, and keeps the key to check it:
// two keys with the same hash (odds about n/2^64) only make the older one
// forgotten early. Within a shard, keys expire in the order they were claimed (the
// window is fixed), so a FIFO of claims prunes them in amortised O(1);
// released or re-claimed keys leave stale FIFO entries that are skipped when
// they reach the head.
type idempotency struct {
	window int64
	seed   maphash.Seed
	shards [idemShards]idemShard
}

const idemShards = 16

type idemShard struct {
	mu    sync.Mutex
	max   int
	seen  map[uint64]idemEntry
	order []idemOrder // FIFO from head
	head  int
	_     [64]byte
}

func newIdempotency(cfg config) *idempotency {
	if cfg.idemWindow <= 0 {
		return nil
	}
	s := &idempotency{window: int64(cfg.idemWindow), seed: maphash.MakeSeed()}
	for i := range s.shards {
		s.shards[i].max = max(1, (cfg.idemMax+idemShards-1)/idemShards)
		s.shards[i].seen = make(map[uint64]idemEntry)
	}
	return s
}

func (s *idempotency) hash(k idemKey) (uint64, *idemShard) {
	var h maphash.Hash
	h.SetSeed(s.seed)
	h.WriteString(k.to)
	h.WriteByte(0)
	h.WriteString(string(k.typ))
	h.WriteByte(0)
	h.WriteString(k.key)
	sum := h.Sum64()
	return sum, &s.shards[sum%idemShards]
}

// claim records k for message id unless it is already remembered, in which
// case it returns the id of the message that holds it.
func (s *idempotency) claim(k idemKey, id string, now int64) (holder string, dup bool) {
	h, sh := s.hash(k)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	sh.pruneLocked(now)
	if e, ok := sh.seen[h]; ok && e.exp > now && e.k == k {
		return e.id, true
	}
	for len(sh.seen) >= sh.max && sh.head < len(sh.order) {
		sh.popLocked()
	}
	exp := now + s.window
	sh.seen[h] = idemEntry{k: k, id: id, exp: exp}
	sh.order = append(sh.order, idemOrder{h: h, exp: exp})
	return "", false
}

// release forgets k if message id holds it: the message was not accepted,
// or was dead-lettered, so a new send with the key must go through.
func (s *idempotency) release(k idemKey, id string) {
	h, sh := s.hash(k)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if e, ok := sh.seen[h]; ok && e.id == id && e.k == k {
		delete(sh.seen, h)
	}
}

func (sh *idemShard) pruneLocked(now int64) {
	for sh.head < len(sh.order) && sh.order[sh.head].exp <= now {
		sh.popLocked()
	}
	// Compact once the consumed head, or stale entries, dominate.
	if live := len(sh.order) - sh.head; sh.head > 1024 && sh.head > live || live > 2*sh.max+1024 {
		kept := sh.order[:0]
		for _, o := range sh.order[sh.head:] {
			if e, ok := sh.seen[o.h]; ok && e.exp == o.exp {
				kept = append(kept, o)
			}
		}
		clear(sh.order[len(kept):])
		sh.order, sh.head = kept, 0
	}
}

func (sh *idemShard) popLocked() {
	o := sh.order[sh.head]
	sh.order[sh.head] = idemOrder{}
	sh.head++
	if e, ok := sh.seen[o.h]; ok && e.exp == o.exp {
		delete(sh.seen, o.h)
	}
}

// size returns how many keys are remembered at now, forgetting the expired.
func (s *idempotency) size(now int64) int {
	n := 0
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		sh.pruneLocked(now)
		n += len(sh.seen)
		sh.mu.Unlock()
	}
	return n
}

// claimKey deduplicates m by its idempotency key, if it has one. It reports
// true when m is a duplicate, which the caller acknowledges without
// delivering it.
func (b *Bus) claimKey(m *transport.Message, sc *sendConfig, now int64) bool {
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
func (b *Bus) releaseKey(m *transport.Message) {
	if b.idem == nil {
		return
	}
	if key := m.Key(); key != "" {
		b.idem.release(idemKey{to: m.To, typ: m.Type, key: key}, m.MessageID)
	}
}
