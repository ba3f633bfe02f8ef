// Package shardmap is a map from string keys to values, split into shards
// that each have their own lock. The engine keeps its running instances in
// one and MemStore its instances in another: keys come and go by the
// thousand, where a sync.Map allocates a node (and boxes the key) for every
// one stored and a Go map reuses its room, and a start and an end of
// different instances seldom wait for the same lock.
package shardmap

import (
	"hash/maphash"
	"sync"
)

// shards is how many shards a Map has: enough that two processors seldom
// meet on one lock.
const shards = 64

// Map is a sharded map from strings to V. The zero Map is not ready: use
// New. A Map must not be copied.
type Map[V comparable] struct {
	shards [shards]shard[V] // first: a field before them would put every shard across two cache lines
	seed   maphash.Seed
}

type shard[V comparable] struct {
	mu sync.RWMutex
	m  map[string]V
	_  [32]byte // a shard to a cache line: work on other shards does not share it
}

// New returns an empty Map.
func New[V comparable]() *Map[V] {
	return &Map[V]{seed: maphash.MakeSeed()}
}

func (x *Map[V]) shard(key string) *shard[V] {
	return &x.shards[maphash.String(x.seed, key)%shards]
}

// Load returns the value stored under key, if any.
func (x *Map[V]) Load(key string) (V, bool) {
	s := x.shard(key)
	s.mu.RLock()
	v, ok := s.m[key]
	s.mu.RUnlock()
	return v, ok
}

// LoadOrStore returns the value stored under key, with loaded true, or
// stores v under key and returns it.
func (x *Map[V]) LoadOrStore(key string, v V) (actual V, loaded bool) {
	s := x.shard(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	if had, ok := s.m[key]; ok {
		return had, true
	}
	if s.m == nil {
		s.m = make(map[string]V)
	}
	s.m[key] = v
	return v, false
}

// Delete forgets key.
func (x *Map[V]) Delete(key string) {
	s := x.shard(key)
	s.mu.Lock()
	delete(s.m, key)
	s.mu.Unlock()
}

// CompareAndDelete forgets key when v is the value stored under it, and
// reports whether it did.
func (x *Map[V]) CompareAndDelete(key string, v V) bool {
	s := x.shard(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	if had, ok := s.m[key]; !ok || had != v {
		return false
	}
	delete(s.m, key)
	return true
}

// Range calls f for each key and value until f returns false. As with a
// sync.Map, f may change the map: it is called with no lock held, on the
// entries each shard had when Range came to it.
func (x *Map[V]) Range(f func(key string, v V) bool) {
	var keys []string
	var vals []V
	for k := range x.shards {
		s := &x.shards[k]
		keys, vals = keys[:0], vals[:0]
		s.mu.RLock()
		for key, v := range s.m {
			keys, vals = append(keys, key), append(vals, v)
		}
		s.mu.RUnlock()
		for n, key := range keys {
			if !f(key, vals[n]) {
				return
			}
		}
	}
}
