package feature

import (
	"slices"
	"sync"
	"time"

	"github.com/batonhq/baton/transport"
)

// latencyWindow is how many recent durations a latency keeps for its
// percentiles: enough for a stable p99, small enough to sort on a scrape.
const latencyWindow = 1024

// latency summarizes the durations of one operation of a routing
// decorator: count, sum and maximum of all of them, percentiles of the
// latest latencyWindow.
type latency struct {
	mu     sync.Mutex
	count  uint64
	sum    time.Duration
	max    time.Duration
	recent []time.Duration // ring of the latest durations
	next   int
}

func (l *latency) record(d time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.count++
	l.sum += d
	l.max = max(l.max, d)
	if len(l.recent) < latencyWindow {
		l.recent = append(l.recent, d)
		return
	}
	l.recent[l.next] = d
	l.next = (l.next + 1) % latencyWindow
}

func (l *latency) summary() transport.LatencySummary {
	l.mu.Lock()
	s := transport.LatencySummary{Count: l.count, Sum: l.sum, Max: l.max}
	sorted := slices.Clone(l.recent)
	l.mu.Unlock()
	if len(sorted) == 0 {
		return s
	}
	slices.Sort(sorted)
	at := func(p int) time.Duration { return sorted[(len(sorted)-1)*p/100] }
	s.P50, s.P95, s.P99 = at(50), at(95), at(99)
	return s
}
