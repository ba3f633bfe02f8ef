package feature_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/batonhq/baton/bus"
	"github.com/batonhq/baton/bus/feature"
	"github.com/batonhq/baton/clock"
	"github.com/batonhq/baton/transport"
)

// faultLedger is an idempotent consumer's commit log: a job's effect is
// committed once per idempotency key, however often it is executed (a
// redelivery taken by a second worker while the first is still at work
// executes the job twice; the second commit is discarded).
type faultLedger struct {
	mu         sync.Mutex
	commits    map[string]int
	executions int
	discarded  int
}

func (l *faultLedger) commit(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.executions++
	if l.commits[key] > 0 {
		l.discarded++
		return
	}
	l.commits[key]++
}

// done reports whether key's effect is already committed.
func (l *faultLedger) done(key string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.commits[key] != 0
}

// TestCommFlow_Fault_CrashSlowFloodEffectivelyOnce runs one flooding sender
// against three agents: one that crashes on every first delivery (never
// acks), one slower than its ack timeout with two workers, and a steady
// one. The sender also resends a tenth of its jobs with the same
// idempotency key, as after a crash of its own. At the end no job is lost,
// each job's effect is committed exactly once, and the accounting is exact.
// The sender's messages go through a rate limiter and a pressure gauge.
// It runs on the bus only: its workers wait on the bus's mailboxes
// (ReceiveWait) inside a synctest bubble, which a NATS server outside the
// bubble cannot join.
func TestCommFlow_Fault_CrashSlowFloodEffectivelyOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const jobs = 450
		b := newBus(t, bus.WithAckTimeout(time.Second))
		for _, a := range []string{"flood", "crasher", "steady"} {
			if err := b.Register(a); err != nil {
				t.Fatal(err)
			}
		}
		if err := b.Register("slow", bus.WithMailboxCapacity(200)); err != nil {
			t.Fatal(err)
		}
		// The gauge inside the limiter sees each message as it reaches its
		// mailbox, not as it enters its sender's outbound queue.
		g := feature.NewPressureGauge(b, feature.Backpressure{Throttle: 0.3, Overload: 0.6, Recover: 0.1}, clock.Real())
		defer g.Close()
		rl := feature.NewRateLimiter(g, feature.RateLimits{Outbound: 600, Inbound: 6000, Burst: 5}, clock.Real())
		defer rl.Close()
		ctx, stop := context.WithCancel(t.Context())
		var wg sync.WaitGroup
		books := map[string]*faultLedger{}
		worker := func(agent string, work func(m *transport.Message) bool) {
			l := books[agent]
			wg.Go(func() {
				for {
					m, err := b.ReceiveWait(ctx, agent)
					if err != nil {
						return
					}
					if m.Type != transport.MessageHandoff {
						continue // a backpressure notice about the sender's own mailbox
					}
					key := m.Key()
					if l.done(key) { // a redelivery of committed work: just ack
						_ = b.Ack(ctx, m)
						continue
					}
					if !work(m) {
						continue // crashed mid-message
					}
					l.commit(key)
					_ = b.Ack(ctx, m)
				}
			})
		}
		for _, a := range []string{"crasher", "slow", "steady"} {
			books[a] = &faultLedger{commits: map[string]int{}}
		}
		worker("crasher", func(m *transport.Message) bool { return m.DeliveryCount > 1 })
		for range 2 {
			worker("slow", func(*transport.Message) bool { time.Sleep(1500 * time.Millisecond); return true })
		}
		worker("steady", func(*transport.Message) bool { return true })
		var backMu sync.Mutex
		kinds := map[string]int{} // what the sender reads back: ACKs and notices
		wg.Go(func() {
			for {
				m, err := b.ReceiveWait(ctx, "flood")
				if err != nil {
					return
				}
				backMu.Lock()
				kinds[string(m.Type)+"/"+m.Action()]++
				backMu.Unlock()
			}
		})

		agents := []string{"crasher", "slow", "steady"}
		resends := 0
		for i := range jobs {
			send := func() {
				m := &transport.Message{Type: transport.MessageHandoff, From: "flood", To: agents[i%3], RequiresAck: true,
					Content:  map[string]any{"action": "handoff", "job": i},
					Metadata: map[string]any{"idempotency_key": fmt.Sprintf("job-%d", i)}}
				if err := rl.SendWork(t.Context(), m); err != nil {
					t.Fatalf("send %s: %v", m.To, err)
				}
			}
			send()
			if i%10 == 0 {
				send()
				resends++
			}
		}
		settled := func() bool {
			s := rl.Metrics()
			return s.InFlight == 0 && s.Queued == 0
		}
		for range 1000 {
			time.Sleep(time.Second)
			if settled() {
				break
			}
		}
		stop()
		wg.Wait()

		if kinds["ACK/ack"] != jobs {
			t.Errorf("got %v back at the sender, want %d ACKs", kinds, jobs)
		}
		if s := rl.Metrics(); !s.Balanced() || s.Delivered != s.Accepted || s.DeadLettered != 0 || s.Queued != 0 || s.InFlight != 0 {
			t.Fatalf("got %+v, want every accepted message delivered", s)
		}
		for i := range jobs {
			key, agent := fmt.Sprintf("job-%d", i), agents[i%3]
			if got := books[agent].commits[key]; got != 1 {
				t.Fatalf("got %s committed %d times by %s, want exactly once (never lost)", key, got, agent)
			}
		}
		s, rs, ps := rl.Metrics(), rl.Stats(), g.Stats()
		if s.Duplicates != uint64(resends) || s.Redeliveries < jobs/3 || rs.DeferredTotal == 0 || ps.Changes == 0 {
			t.Errorf("got duplicates %d redeliveries %d deferred %d pressure changes %d, want %d, at least %d, and flooding",
				s.Duplicates, s.Redeliveries, rs.DeferredTotal, ps.Changes, resends, jobs/3)
		}
		t.Logf("executions crasher %d slow %d (%d discarded by key) steady %d; redeliveries %d; backpressure signals %d",
			books["crasher"].executions, books["slow"].executions, books["slow"].discarded, books["steady"].executions,
			s.Redeliveries, ps.Signals)
	})
}
