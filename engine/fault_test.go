package engine_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/transport"
)

// stepKey names one step of one instance.
type stepKey struct {
	instance string
	step     int
}

// faultyWorkers play external agents that misbehave: every 13th message a
// worker takes, it crashes (never acks, never reports, and is replaced by a
// new worker); every 11th it is slow (it reports after the bus's ack
// timeout, when the message has already been redelivered to another
// worker). Each report the engine accepts is counted per step.
type faultyWorkers struct {
	eng      *engine.Engine
	mu       sync.Mutex
	accepted map[stepKey]int
	stale    int
	crashes  int
	slow     int
	wg       sync.WaitGroup
}

func (f *faultyWorkers) start(ctx context.Context, agent string) {
	f.wg.Add(1)
	go f.work(ctx, agent)
}

func (f *faultyWorkers) work(ctx context.Context, agent string) {
	defer f.wg.Done()
	for n := 1; ; n++ {
		m, err := busOf(f.eng).ReceiveWait(ctx, agent)
		if err != nil {
			return
		}
		if m.Type != transport.MessageHandoff {
			continue
		}
		switch {
		case n%13 == 0:
			f.mu.Lock()
			f.crashes++
			f.mu.Unlock()
			f.start(ctx, agent) // the replacement worker
			return
		case n%11 == 0:
			f.mu.Lock()
			f.slow++
			f.mu.Unlock()
			time.Sleep(45 * time.Second) // past the 30s ack timeout: the message is redelivered meanwhile
		}
		f.report(ctx, m)
	}
}

func (f *faultyWorkers) report(ctx context.Context, m *transport.Message) {
	err := reportWork(ctx, f.eng, m, registry.Outcome{Trigger: "ok"}, nil)
	instance, _ := m.Metadata["instance_id"].(string)
	step, _ := m.Metadata["step"].(int)
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case err == nil:
		f.accepted[stepKey{instance, step}]++
	case errors.Is(err, engine.ErrStaleReport):
		f.stale++
	}
}

// TestEngine_Fault_CrashesSlowAgentsAndAFlood runs a flood of instances
// (more than the mailboxes hold) through agents that crash mid-message and
// agents slower than the ack timeout. Every instance must complete, every
// step the engine ran must have been applied exactly once, and the bus's
// accounting must balance with nothing left queued or in flight.
func TestEngine_Fault_CrashesSlowAgentsAndAFlood(t *testing.T) {
	defer goleak.VerifyNone(t)
	synctest.Test(t, func(t *testing.T) {
		w, err := rules.Load("testdata/fault.yaml")
		require.NoError(t, err)
		reg, err := engine.NewRegistry(w, nil)
		require.NoError(t, err)
		eng, err := newEngine(w, reg)
		require.NoError(t, err)
		ctx, stop := context.WithCancel(context.Background())

		f := &faultyWorkers{eng: eng, accepted: map[stepKey]int{}}
		for _, agent := range []string{"a", "b", "c"} {
			for range 3 {
				f.start(ctx, agent)
			}
		}
		const n = 200 // the flood: a's mailbox holds 60
		insts := make([]*engine.Instance, 0, n)
		refused := 0
		for len(insts) < n {
			inst, err := eng.Start(ctx, nil)
			if errors.Is(err, engine.ErrOverloaded) {
				// a's mailbox is full: the start is refused at the door and
				// the client tries again once the workers made room.
				refused++
				time.Sleep(100 * time.Millisecond)
				continue
			}
			require.NoError(t, err)
			insts = append(insts, inst)
		}
		require.Positive(t, refused, "the flood never filled a's mailbox")
		for _, inst := range insts {
			res, err := inst.Wait(ctx)
			require.NoError(t, err)
			if res.Outcome != "DONE" {
				history, _ := inst.History(context.Background())
				for _, e := range history {
					if e.Kind == record.KindOutcome || e.Kind == record.KindRetry || e.Error != "" {
						t.Logf("%s step %d %s %s %s", e.Kind, e.Step, e.State, e.Trigger, e.Error)
					}
				}
			}
			require.Equal(t, "DONE", res.Outcome, "instance %s: %v", res.ID, res.Err)
		}
		time.Sleep(5 * time.Minute) // let slow workers report late and every ack timer run out
		stop()
		f.wg.Wait()

		// Exactly once: each step an agent ran appears once in the history,
		// and the engine accepted exactly one report for it.
		runs := 0
		for _, inst := range insts {
			history, err := inst.History(context.Background())
			require.NoError(t, err)
			seen := map[int]bool{}
			for _, e := range history {
				if e.Kind != record.KindAgentRun || e.Error != "" {
					continue
				}
				require.False(t, seen[e.Step], "instance %s ran step %d twice", inst.ID(), e.Step)
				seen[e.Step] = true
				runs++
				assert.Equal(t, 1, f.accepted[stepKey{inst.ID(), e.Step}], "instance %s step %d: accepted reports", inst.ID(), e.Step)
			}
		}
		assert.Equal(t, 3*n, runs, "every instance ran a, b and c once each")
		total := 0
		for _, c := range f.accepted {
			total += c
		}
		assert.Equal(t, runs, total, "no report was applied outside the history")
		assert.Positive(t, f.crashes, "the test must crash some workers")
		assert.Positive(t, f.slow, "the test must have slow workers")
		assert.Positive(t, f.stale, "redelivered messages must have been answered twice, the second time stale")

		m := busOf(eng).Metrics()
		assert.Equal(t, m.Accepted, m.Delivered+m.DeadLettered+uint64(m.Queued)+uint64(m.InFlight), "bus accounting: %+v", m)
		assert.Zero(t, m.Queued, "nothing left queued")
		assert.Zero(t, m.InFlight, "nothing left in flight")
		require.NoError(t, eng.Close())
	})
}
