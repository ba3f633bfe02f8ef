package transporttest

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// testConcurrent: senders and takers working at once on several mailboxes
// lose nothing and duplicate nothing: every message sent is taken exactly
// once, and once all are acked the metrics count each delivered.
func testConcurrent(c *checker) {
	const agents, senders, perSender, takersPerAgent, batch = 3, 4, 60, 2, 8
	const total = senders * perSender
	for a := range agents {
		c.open(agentName(a), total)
	}

	var (
		mu    sync.Mutex
		taken = map[string]int{}
		done  atomic.Int64
		wg    sync.WaitGroup
	)
	deadline := time.Now().Add(c.h.Patience)
	for s := range senders {
		wg.Go(func() {
			for i := range perSender {
				n := s*perSender + i
				m := work(agentName(n%agents), n+1)
				if err := c.tr.SendWork(c.t.Context(), m); err != nil {
					c.t.Errorf("got SendWork error %v for message %d, want nil", err, n+1)
				}
			}
		})
	}
	for a := range agents {
		for range takersPerAgent {
			wg.Go(func() {
				for done.Load() < total && time.Now().Before(deadline) {
					ms, err := c.tr.TakeWork(c.t.Context(), agentName(a), batch)
					if err != nil {
						c.t.Errorf("got TakeWork error %v, want nil", err)
						return
					}
					if len(ms) == 0 {
						time.Sleep(poll)
						continue
					}
					for _, m := range ms {
						if err := c.tr.Ack(c.t.Context(), m); err != nil {
							c.t.Errorf("got Ack error %v for %s, want nil", err, m.Key())
						}
						mu.Lock()
						taken[m.Key()]++
						mu.Unlock()
					}
					done.Add(int64(len(ms)))
				}
			})
		}
	}
	wg.Wait()
	if c.t.Failed() {
		return
	}

	var lost, twice []string
	for n := 1; n <= total; n++ {
		key := keyOf(agentName((n-1)%agents), n)
		switch taken[key] {
		case 0:
			lost = append(lost, key)
		case 1:
		default:
			twice = append(twice, key)
		}
	}
	if len(lost) > 0 || len(twice) > 0 || len(taken) != total {
		c.t.Fatalf("got %d distinct messages of %d taken: lost %v, taken more than once %v",
			len(taken), total, lost, twice)
	}
	for a := range agents {
		c.takeNone(agentName(a))
	}
	c.metrics(counts{Accepted: total, Delivered: total})
}

func agentName(i int) string { return fmt.Sprintf("worker-%d", i) }
