package natsstore

// Fences of finished instances. A store keeps a fence for every instance
// it read or wrote, for its next commit; an engine commits nothing more to
// an instance that is finished with no outbox item left, so those fences
// are kept only for the newest maxRetired of them, and the store's memory
// does not grow with the instances that finished. A commit to one whose
// fence was dropped is refused as fenced until the instance is read again,
// as for an instance the store never saw.

// done tells a finished instance with no outbox item left.
func done(r stepRecord) bool { return r.Snapshot.Status.Finished() && len(r.Outbox) == 0 }

// maxRetired is how many fences of done instances a store keeps.
var maxRetired = 4096 // a variable only so that a test can lower it

// retire marks the fence of id done or not; the oldest fences of done
// instances past maxRetired are dropped. It takes no fence's lock, so that
// a commit may call it holding its own.
func (s *Store) retire(id string, isDone bool) {
	v, ok := s.fences.Load(id)
	if !ok {
		return
	}
	v.(*fence).done.Store(isDone)
	if !isDone {
		return
	}
	s.retMu.Lock()
	defer s.retMu.Unlock()
	s.retired = append(s.retired, id)
	for len(s.retired) > maxRetired {
		old := s.retired[0]
		s.retired[0] = ""
		s.retired = s.retired[1:]
		// An id retired twice may be dropped by its older mention: a
		// commit to it is then refused until it is read again (a store
		// with partition leases reads it again itself).
		if v, ok := s.fences.Load(old); ok && v.(*fence).done.Load() {
			s.fences.CompareAndDelete(old, v)
		}
	}
}
