package record

import (
	"hash/maphash"
	"sync"
)

// memIndex maps instance ids to a MemStore's instances. It is a map in
// shards, each with its own lock, rather than a sync.Map: a sync.Map
// allocates a node for every id stored, and ids come and go by the
// thousand (every instance, then its drop past the retention), where a
// Go map reuses its room.
type memIndex struct {
	seed   maphash.Seed
	shards [memShards]memShard
}

// memShards is how many shards a memIndex has: enough that the engine's
// workers seldom meet on one lock.
const memShards = 64

type memShard struct {
	mu sync.RWMutex
	m  map[string]*memInstance
	_  [32]byte // keeps each shard's lock on its own cache line
}

func newMemIndex() *memIndex {
	return &memIndex{seed: maphash.MakeSeed()}
}

func (x *memIndex) shard(id string) *memShard {
	return &x.shards[maphash.String(x.seed, id)%memShards]
}

// load returns the instance with the id, if any.
func (x *memIndex) load(id string) (*memInstance, bool) {
	sh := x.shard(id)
	sh.mu.RLock()
	mi, ok := sh.m[id]
	sh.mu.RUnlock()
	return mi, ok
}

// loadOrStore returns the instance with mi's id, or stores mi and returns
// it with stored true.
func (x *memIndex) loadOrStore(mi *memInstance) (_ *memInstance, stored bool) {
	sh := x.shard(mi.snap.id)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if old, ok := sh.m[mi.snap.id]; ok {
		return old, false
	}
	if sh.m == nil {
		sh.m = make(map[string]*memInstance)
	}
	sh.m[mi.snap.id] = mi
	return mi, true
}

// remove deletes mi, if it is still the instance stored under its id.
func (x *memIndex) remove(mi *memInstance) {
	sh := x.shard(mi.snap.id)
	sh.mu.Lock()
	if sh.m[mi.snap.id] == mi {
		delete(sh.m, mi.snap.id)
	}
	sh.mu.Unlock()
}

// each calls f with every instance, holding no lock of the index, until
// f returns false.
func (x *memIndex) each(f func(*memInstance) bool) {
	var batch []*memInstance
	for k := range x.shards {
		sh := &x.shards[k]
		sh.mu.RLock()
		batch = batch[:0]
		for _, mi := range sh.m {
			batch = append(batch, mi)
		}
		sh.mu.RUnlock()
		for _, mi := range batch {
			if !f(mi) {
				return
			}
		}
	}
}
