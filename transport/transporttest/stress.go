package transporttest

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/batonhq/baton/transport"
)

// testConcurrent: senders and takers working at once on small mailboxes,
// nacking some work once, lose nothing and duplicate nothing: every message
// sent is either acked exactly once or refused for a full mailbox and
// dead-lettered exactly once, and the metrics count each of them so.
func testConcurrent(c *checker) {
	const (
		agents, senders, perSender = 3, 4, 60
		takersPerAgent, batch      = 2, 8
		capacity                   = 24
		total                      = senders * perSender
	)
	l := c.watch()
	for a := range agents {
		c.open(agentName(a), capacity)
	}

	var (
		mu       sync.Mutex
		acked    = map[string]int{}
		nacked   = map[string]bool{}
		refused  = map[string]int{}
		settled  atomic.Int64 // acked or refused
		sendsRun sync.WaitGroup
		wg       sync.WaitGroup
	)
	deadline := time.Now().Add(c.h.Patience)
	for s := range senders {
		sendsRun.Go(func() {
			for i := range perSender {
				n := s*perSender + i + 1
				m := work(agentName(n%agents), n)
				key := m.Key()
				err := c.tr.SendWork(c.t.Context(), m)
				switch {
				case errors.Is(err, transport.ErrQueueFull):
					mu.Lock()
					refused[key]++
					mu.Unlock()
					settled.Add(1)
				case err != nil:
					c.t.Errorf("got SendWork error %v for %s, want nil or a full mailbox", err, key)
					settled.Add(1)
				}
			}
		})
	}
	for a := range agents {
		for range takersPerAgent {
			wg.Go(func() {
				for settled.Load() < total && time.Now().Before(deadline) {
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
						c.settle(m, &mu, acked, nacked, &settled)
					}
				}
			})
		}
	}
	watching := make(chan struct{})
	wg.Go(func() {
		for {
			select {
			case <-watching:
				return
			default:
			}
			if got := countsOf(c.tr.Metrics()); !got.addsUp() {
				c.t.Errorf("got metrics that do not add up under load: %v", got)
				return
			}
			time.Sleep(poll)
		}
	})
	sendsRun.Wait()
	for settled.Load() < total && time.Now().Before(deadline) {
		time.Sleep(poll)
	}
	close(watching)
	wg.Wait()
	if c.t.Failed() {
		return
	}

	var lost, twice []string
	for n := 1; n <= total; n++ {
		key := keyOf(agentName(n%agents), n)
		switch acked[key] + refused[key] {
		case 0:
			lost = append(lost, key)
		case 1:
		default:
			twice = append(twice, key)
		}
	}
	if len(lost) > 0 || len(twice) > 0 {
		c.t.Fatalf("got %d acked and %d refused of %d: lost %v, acked or refused more than once %v",
			len(acked), len(refused), total, lost, twice)
	}
	c.t.Logf("%d acked (%d nacked once first), %d refused for a full mailbox", len(acked), len(nacked), len(refused))
	for a := range agents {
		c.takeNone(agentName(a))
	}
	ds := c.wait(l, len(refused))
	for _, d := range ds {
		if d.Reason != transport.ReasonQueueOverflow || d.Message == nil || refused[d.Message.Key()] != 1 {
			c.t.Fatalf("got dead letters %v, want each refused send once, queue_overflow", letterKeys(ds))
		}
	}
	c.metrics(counts{Accepted: total, Delivered: uint64(len(acked)), DeadLettered: uint64(len(refused))})
}

// settle acks m, except that every fifth step is nacked once first.
func (c *checker) settle(m *transport.Message, mu *sync.Mutex, acked map[string]int, nacked map[string]bool, settled *atomic.Int64) {
	key := m.Key()
	step, _ := strconv.Atoi(key[strings.LastIndexByte(key, ':')+1:])
	mu.Lock()
	nack := step%5 == 0 && !nacked[key]
	if nack {
		nacked[key] = true
	}
	mu.Unlock()
	if nack {
		if err := c.tr.Nack(c.t.Context(), m); err != nil {
			c.t.Errorf("got Nack error %v for %s, want nil", err, key)
		}
		return
	}
	if err := c.tr.Ack(c.t.Context(), m); err != nil {
		c.t.Errorf("got Ack error %v for %s, want nil", err, key)
	}
	mu.Lock()
	acked[key]++
	mu.Unlock()
	settled.Add(1)
}

func agentName(i int) string { return fmt.Sprintf("worker-%d", i) }
