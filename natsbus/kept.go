package natsbus

import (
	"strconv"
	"sync"

	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/wire"
)

// kept holds the outcomes a Worker could not get an engine to answer (no
// engine serves reports yet, or the instance's engine is being replaced),
// by the work's idempotency key and attempt: work delivered again with an
// outcome kept is reported again, not run again, so that a handler's side
// effects are not repeated on every redelivery while no engine answers.
// It keeps at most max outcomes; past that the oldest is forgotten, and
// its work, delivered again, runs again (delivery stays at least once).
type kept struct {
	mu    sync.Mutex
	max   int
	items map[string]keptOutcome
	order []string // keys in the order kept; may hold keys dropped since
}

// keptOutcome is a report not answered yet, and the reason when it rejects
// the work.
type keptOutcome struct {
	report wire.Report
	reject string
}

func newKept(max int) *kept {
	return &kept{max: max, items: map[string]keptOutcome{}}
}

// keptKey is the key of the outcome of t's run: one per run, the same on
// every delivery of its work, first send or resent.
func keptKey(t *registry.Task) string {
	return t.IdempotencyKey + "/" + strconv.Itoa(t.Attempt)
}

// get returns the outcome kept under key.
func (k *kept) get(key string) (keptOutcome, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	o, ok := k.items[key]
	return o, ok
}

// put keeps o under key, forgetting the oldest outcome when full.
func (k *kept) put(key string, o keptOutcome) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if _, ok := k.items[key]; ok {
		k.items[key] = o
		return
	}
	for len(k.items) >= k.max && len(k.order) > 0 {
		delete(k.items, k.order[0])
		k.order[0] = ""
		k.order = k.order[1:]
	}
	k.items[key] = o
	k.order = append(k.order, key)
}

// drop forgets the outcome under key: an engine answered its report.
func (k *kept) drop(key string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if _, ok := k.items[key]; !ok {
		return
	}
	delete(k.items, key)
	if len(k.order) > 2*len(k.items)+16 {
		// Most keys in order were dropped: keep the slice as small as the
		// outcomes it orders.
		order := make([]string, 0, len(k.items))
		for _, key := range k.order {
			if _, ok := k.items[key]; ok {
				order = append(order, key)
			}
		}
		k.order = order
	}
}

// len returns how many outcomes are kept.
func (k *kept) len() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.items)
}
