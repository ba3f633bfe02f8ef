package engine

import (
	"hash/maphash"
	"sync"
)

// instanceShards is how many locks the engine's instances are spread over:
// a start and an end of different instances seldom wait for each other.
const instanceShards = 32

// instanceMap is the engine's instances by id, until they finish. It is a
// sync.Map's methods, typed, over maps sharded by the id's hash: a sync.Map
// stored each instance behind two allocations of its own (the id boxed in
// an interface and the entry node), and a map holds it in its table.
type instanceMap struct {
	seed   maphash.Seed
	shards [instanceShards]instanceShard
}

type instanceShard struct {
	mu sync.Mutex
	m  map[string]*instance
	_  [48]byte // a shard to a cache line: starts and ends on other shards do not share one
}

func newInstanceMap() *instanceMap { return &instanceMap{seed: maphash.MakeSeed()} }

func (x *instanceMap) shard(id string) *instanceShard {
	return &x.shards[maphash.String(x.seed, id)%instanceShards]
}

// Load returns the instance of id, if the engine has it.
func (x *instanceMap) Load(id string) (*instance, bool) {
	s := x.shard(id)
	s.mu.Lock()
	i, ok := s.m[id]
	s.mu.Unlock()
	return i, ok
}

// LoadOrStore returns the instance of id if there is one (loaded), else
// stores i under id and returns it.
func (x *instanceMap) LoadOrStore(id string, i *instance) (actual *instance, loaded bool) {
	s := x.shard(id)
	s.mu.Lock()
	defer s.mu.Unlock()
	if had, ok := s.m[id]; ok {
		return had, true
	}
	if s.m == nil {
		s.m = map[string]*instance{}
	}
	s.m[id] = i
	return i, false
}

// Delete forgets the instance of id.
func (x *instanceMap) Delete(id string) {
	s := x.shard(id)
	s.mu.Lock()
	delete(s.m, id)
	s.mu.Unlock()
}

// Range calls f for each instance until f returns false. As with a
// sync.Map, f may change the map: it is called with no lock held, on the
// instances each shard had as Range came to it.
func (x *instanceMap) Range(f func(id string, i *instance) bool) {
	var ids []string
	var insts []*instance
	for k := range x.shards {
		s := &x.shards[k]
		ids, insts = ids[:0], insts[:0]
		s.mu.Lock()
		for id, i := range s.m {
			ids, insts = append(ids, id), append(insts, i)
		}
		s.mu.Unlock()
		for n, id := range ids {
			if !f(id, insts[n]) {
				return
			}
		}
	}
}
