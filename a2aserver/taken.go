package a2aserver

import "sync"

// maxTaken bounds how many signalling messages a handler remembers.
const maxTaken = 4096

// takenSignals remembers the messages whose signal was taken, by task and
// message id, so that a message sent again (its answer lost on the way)
// is answered with its task instead of being refused as a second signal.
// The oldest are forgotten first; a restarted server remembers none.
type takenSignals struct {
	mu    sync.Mutex
	seen  map[string]struct{}
	order []string // a ring of the keys in seen, oldest at next
	next  int
}

func takenKey(task, message string) string { return task + "\x00" + message }

// has reports whether message's signal to task was taken.
func (t *takenSignals) has(task, message string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, ok := t.seen[takenKey(task, message)]
	return ok
}

// add remembers that message's signal to task was taken.
func (t *takenSignals) add(task, message string) {
	k := takenKey(task, message)
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.seen == nil {
		t.seen = make(map[string]struct{})
	}
	if _, ok := t.seen[k]; ok {
		return
	}
	if len(t.order) < maxTaken {
		t.order = append(t.order, k)
	} else {
		delete(t.seen, t.order[t.next])
		t.order[t.next] = k
		t.next = (t.next + 1) % maxTaken
	}
	t.seen[k] = struct{}{}
}
