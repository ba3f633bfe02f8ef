package engine_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/bus"
	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/transport"
)

// outboxWorkflow has a bit of everything a step can send: a retried run
// (a fails its first step), a fan-out to three branches, a delegation with
// return_control (b asks c), and a final notice (to n).
const outboxWorkflow = `
workflow: outbox
initial: A
agents:
  a: {type: t}
  b: {type: t}
  c: {type: t}
  x: {type: t}
  y: {type: t}
  z: {type: t}
  n: {type: t}
states:
  A: {agent: a, retry: {max: 1, backoff: [1s]}}
  P:
    agents: [x, y, z]
    join: {strategy: all}
  B: {agent: b}
  DONE: {terminal: true}
rules:
  - {id: ap, from: a, trigger: ok, next: P, task: '"fan out"'}
  - {id: pb, from: P, trigger: joined, next: B, task: '"finish"', context: {replies: len(result.results)}}
  - {id: done, from: b, trigger: ok, to: n, next: DONE, reason: Tell n}
`

var outboxAgents = []string{"a", "b", "c", "x", "y", "z", "n"}

// journal is a MemStore that also keeps every record.Step, so that a test
// can build the store as it was after any commit: the store a process
// killed right after that commit, before sending anything, leaves behind.
type journal struct {
	*record.MemStore
	mu   sync.Mutex
	recs []record.Step
}

func (j *journal) Commit(ctx context.Context, rec record.Step) error {
	j.mu.Lock()
	j.recs = append(j.recs, record.Step{
		Snapshot: rec.Snapshot, Entries: slices.Clone(rec.Entries),
		Outbox: slices.Clone(rec.Outbox), Settled: slices.Clone(rec.Settled),
	})
	j.mu.Unlock()
	return j.MemStore.Commit(ctx, rec)
}

// upTo returns a new store holding the first k commits.
func (j *journal) upTo(t *testing.T, k int) *record.MemStore {
	s := record.NewMemStore()
	for _, rec := range j.recs[:k] {
		require.NoError(t, s.Commit(context.Background(), rec))
	}
	return s
}

// seen is a piece of work an agent received.
type seen struct {
	agent, key, handoffID, task string
}

// outboxDriver plays the agents of outboxWorkflow as external agents until
// the instance finishes, and records what they received.
func outboxDriver(t *testing.T, eng *engine.Engine, id string) []seen {
	t.Helper()
	ctx := context.Background()
	var got []seen
	for range 200 {
		progressed := false
		for _, ag := range outboxAgents {
			m, ok, err := busOf(eng).TryReceive(ag)
			require.NoError(t, err)
			if !ok {
				continue
			}
			progressed = true
			if m.Type != transport.MessageHandoff {
				continue
			}
			hid, _ := m.Metadata["handoff_id"].(string)
			task, _ := m.Content["task_description"].(string)
			// The key the agent sees; work sent again as the instance is
			// resumed goes out under a transport key of its own.
			key, _ := m.Metadata["idempotency_key"].(string)
			if m.IdempotencyKey != "" && m.IdempotencyKey != key && !strings.HasPrefix(m.IdempotencyKey, key+"#resent.") {
				t.Errorf("work %s went out under the transport key %s", key, m.IdempotencyKey)
			}
			got = append(got, seen{agent: ag, key: key, handoffID: hid, task: task})
			if isFinalNotice(m) {
				require.NoError(t, acceptWork(ctx, eng, m))
				continue
			}
			out, runErr := outboxBehaviour(ag, m)
			if err := reportWork(ctx, eng, m, out, runErr); err != nil && !errors.Is(err, engine.ErrStaleReport) {
				t.Fatalf("%s reports: %v", ag, err)
			}
		}
		h, err := eng.Instance(id)
		require.NoError(t, err)
		select {
		case <-h.Done():
			if !progressed {
				return got
			}
		default:
		}
		if !progressed {
			time.Sleep(time.Second) // a retry's backoff (fake time)
		}
	}
	t.Fatal("the instance did not finish")
	return nil
}

func outboxBehaviour(agent string, m *transport.Message) (registry.Outcome, error) {
	switch agent {
	case "a":
		if step, _ := m.Metadata["step"].(int); step == 1 {
			return registry.Outcome{}, errors.New("flaky")
		}
		return registry.Outcome{Trigger: "ok"}, nil
	case "b":
		if prev, _ := m.Content["previous_result"].(map[string]any); prev["from_c"] == true {
			return registry.Outcome{Trigger: "ok", Result: map[string]any{"done": true}}, nil
		}
		return registry.Outcome{Handoff: &registry.Delegation{To: "c", Task: "check it", ReturnControl: true}}, nil
	case "c":
		return registry.Outcome{Trigger: "ok", Result: map[string]any{"from_c": true}}, nil
	}
	return registry.Outcome{Trigger: "ok", Result: map[string]any{"agent": agent}}, nil
}

func transitions(h []record.Entry) []string {
	var out []string
	for _, e := range h {
		if e.Kind == record.KindTransition {
			out = append(out, e.State+">"+e.Next)
		}
	}
	return out
}

// TestEngine_Outbox_WorkIsSentOnlyAfterItsStepCommits checks the order of
// the transactional outbox: when the store commits a step, the work the step
// sends is not on the bus yet, and each item is settled by the step that
// ends its run (or, for a notice, once it is taken).
func TestEngine_Outbox_WorkIsSentOnlyAfterItsStepCommits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var eng *engine.Engine
		var early []string
		j := &journal{MemStore: record.NewMemStore()}
		check := &commitHook{Store: j, before: func(rec record.Step) {
			for _, o := range rec.Outbox {
				for _, a := range busOf(eng).Metrics().Agents {
					if a.Agent == o.To && a.Depth > 0 {
						early = append(early, fmt.Sprintf("%s had %d queued at the commit of %s", o.To, a.Depth, o.Key))
					}
				}
			}
		}}
		eng = externalEngine(t, outboxWorkflow, check)
		inst, err := eng.Start(context.Background(), nil)
		require.NoError(t, err)
		outboxDriver(t, eng, inst.ID())
		assert.Empty(t, early, "work reached the bus before its step committed")

		var added, settled []string
		for _, rec := range j.recs {
			for _, o := range rec.Outbox {
				added = append(added, o.Key)
			}
			settled = append(settled, rec.Settled...)
		}
		assert.ElementsMatch(t, added, settled, "every item sent is settled in the end")
		left, err := j.Outbox(context.Background(), inst.ID())
		require.NoError(t, err)
		assert.Empty(t, left)
	})
}

// commitHook calls before ahead of every commit.
type commitHook struct {
	record.Store
	before func(record.Step)
}

func (c *commitHook) Commit(ctx context.Context, rec record.Step) error {
	c.before(rec)
	return c.Store.Commit(ctx, rec)
}

// TestEngine_Outbox_KilledAfterAnyCommit kills the process, in effect, right
// after each commit of a whole run in turn, before that step's work was
// sent: a new engine on the store as it was resumes the instance, which
// must end as the uninterrupted run did, with every transition applied once,
// and the work in the outbox sent again under its key and hand-off id.
func TestEngine_Outbox_KilledAfterAnyCommit(t *testing.T) {
	j := &journal{MemStore: record.NewMemStore()}
	var ref []seen
	var refHistory []record.Entry
	var id string
	synctest.Test(t, func(t *testing.T) {
		eng := externalEngine(t, outboxWorkflow, j)
		inst, err := eng.Start(context.Background(), nil)
		require.NoError(t, err)
		id = inst.ID()
		ref = outboxDriver(t, eng, id)
		refHistory, err = j.History(context.Background(), id)
		require.NoError(t, err)
	})
	refSnap, err := j.Instance(context.Background(), id)
	require.NoError(t, err)
	require.Equal(t, "DONE", refSnap.State)
	byKey := map[string]seen{}
	for _, s := range ref {
		if _, dup := byKey[s.key]; !dup {
			byKey[s.key] = s
		}
	}
	require.Greater(t, len(j.recs), 8, "the run commits enough steps to be worth cutting")

	for k := 1; k <= len(j.recs); k++ {
		t.Run(fmt.Sprintf("after_commit_%02d", k), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				store := j.upTo(t, k)
				outbox, err := store.Outbox(context.Background(), id)
				require.NoError(t, err)
				eng := externalEngine(t, outboxWorkflow, store)
				rep, err := eng.Resume(context.Background())
				require.NoError(t, err)
				require.Empty(t, rep.Failed)
				snapBefore, err := store.Instance(context.Background(), id)
				require.NoError(t, err)
				var got []seen
				if snapBefore.Status.Finished() && len(outbox) == 0 {
					require.Empty(t, rep.Resumed, "a finished instance with nothing left to send is not resumed")
				} else {
					require.Equal(t, []string{id}, rep.Resumed)
					got = outboxDriver(t, eng, id)
				}

				// The outbox's work is sent again as it was.
				for _, o := range outbox {
					want := byKey[o.Key]
					k := slices.IndexFunc(got, func(s seen) bool { return s.key == o.Key })
					require.GreaterOrEqual(t, k, 0, "outbox item %s was not sent again", o.Key)
					assert.Equal(t, want, got[k], "outbox item %s is sent with its key, hand-off id and task", o.Key)
				}
				snap, err := store.Instance(context.Background(), id)
				require.NoError(t, err)
				assert.Equal(t, refSnap.State, snap.State)
				assert.Equal(t, refSnap.Context, snap.Context)
				assert.Equal(t, refSnap.Step, snap.Step, "no step is applied twice or skipped")
				h, err := store.History(context.Background(), id)
				require.NoError(t, err)
				assert.Equal(t, transitions(refHistory), transitions(h), "each transition is applied once")
				left, err := store.Outbox(context.Background(), id)
				require.NoError(t, err)
				assert.Empty(t, left, "nothing is left in the outbox")
			})
		})
	}
}

// failedEvents counts the instances that failed, as the observers see it.
type failedEvents struct {
	mu  sync.Mutex
	ids []string
}

func (f *failedEvents) observe(e engine.Event) {
	if e.Type == engine.EventFailed {
		f.mu.Lock()
		f.ids = append(f.ids, e.InstanceID)
		f.mu.Unlock()
	}
}

func (f *failedEvents) all() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.ids)
}

// askAll has the external agent asker take every item of its mailbox and
// report "ask" for each; it returns how many it took.
func askAll(t *testing.T, eng *engine.Engine, b *bus.Bus) int {
	t.Helper()
	ms, err := b.Receive("asker", 0)
	require.NoError(t, err)
	for _, m := range ms {
		if err := reportWork(t.Context(), eng, m, registry.Outcome{Trigger: "ask"}, nil); err != nil && !errors.Is(err, engine.ErrStaleReport) {
			t.Fatalf("report: %v", err)
		}
	}
	return len(ms)
}

// An engine that resumes instances whose work still fills their first
// agent's mailbox (the same bus, as after a refused commit) does not fail
// them when the work it sends again finds the mailbox full: the resent
// work waits, is not dead-lettered, and the work already queued carries
// each instance to its end.
func TestEngine_Resume_FullMailboxDelaysTheResentWork(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := record.NewMemStore()
		b := bus.New()
		defer b.Close()
		handlers := map[string]registry.Handler{"reviewer": answer("reviewed", nil)} // asker is external: a mailbox of 2
		eng1 := poolEngine(t, "lane_first.yaml", handlers, engine.WithStore(store), engine.WithTransport(b))
		var ids []string
		for range 2 {
			inst, err := eng1.Start(t.Context(), nil)
			require.NoError(t, err)
			ids = append(ids, inst.ID())
		}
		require.NoError(t, eng1.Close())

		var failed failedEvents
		eng2 := poolEngine(t, "lane_first.yaml", handlers, engine.WithStore(store), engine.WithTransport(b), engine.WithObserver(failed.observe))
		defer eng2.Close()
		rep, err := eng2.Resume(t.Context())
		require.NoError(t, err)
		if len(rep.Resumed) != 2 || len(rep.Failed) != 0 {
			t.Fatalf("got resume report %+v, want both instances resumed", rep)
		}
		time.Sleep(2 * time.Second) // a few tries at sending the resent work again
		synctest.Wait()
		if got := failed.all(); len(got) != 0 {
			t.Fatalf("got instances %v failed after the resume, want none", got)
		}
		if s := b.Metrics(); s.DeadLettered != 0 {
			t.Fatalf("got %d dead letters, want none: the resent work waits for room", s.DeadLettered)
		}
		if n := askAll(t, eng2, b); n != 2 {
			t.Fatalf("asker took %d items, want the 2 sent before the restart", n)
		}
		time.Sleep(time.Minute) // past every pause of the resent work
		synctest.Wait()
		askAll(t, eng2, b) // what was resent meanwhile, if anything: its reports are stale
		for _, id := range ids {
			wantCompleted(t, waitFor(t, eng2, id), "DONE")
		}
		if got := failed.all(); len(got) != 0 {
			t.Errorf("got instances %v failed, want none", got)
		}
		if s := b.Metrics(); s.DeadLettered != 0 {
			t.Errorf("got %d dead letters, want none", s.DeadLettered)
		}
	})
}

// roomlessBus tells a start there is room whatever its first agent's
// mailbox holds: what a start meets when other work (an engine resuming
// instances, another engine's starts) fills the mailbox between its room
// check and its send.
type roomlessBus struct{ *bus.Bus }

func (b roomlessBus) Room(ctx context.Context, agent string) (free, capacity int, err error) {
	_, capacity, err = b.Bus.Room(ctx, agent)
	return capacity, capacity, err
}

// A start accepted because its room check passed is not failed when its
// first work then finds the mailbox full: the work waits for room (no
// dead letter), and the instance runs once the agent makes room.
func TestEngine_Start_MailboxFilledAfterTheRoomCheckDelaysTheWork(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := bus.New()
		defer b.Close()
		var failed failedEvents
		eng := poolEngine(t, "lane_first.yaml", map[string]registry.Handler{"reviewer": answer("reviewed", nil)},
			engine.WithTransport(roomlessBus{b}), engine.WithObserver(failed.observe))
		defer eng.Close()
		var insts []*engine.Instance
		for range 3 {
			inst, err := eng.Start(t.Context(), nil)
			require.NoError(t, err)
			insts = append(insts, inst)
		}
		synctest.Wait()
		if got := failed.all(); len(got) != 0 {
			t.Fatalf("got instances %v failed, want none: the third start's work waits for room", got)
		}
		if s := b.Metrics(); s.DeadLettered != 0 {
			t.Fatalf("got %d dead letters, want none", s.DeadLettered)
		}
		if n := askAll(t, eng, b); n != 2 {
			t.Fatalf("asker took %d items, want 2 (its mailbox)", n)
		}
		time.Sleep(time.Minute) // past the pauses of the waiting work
		synctest.Wait()
		if n := askAll(t, eng, b); n != 1 {
			t.Fatalf("asker took %d items, want the third start's work", n)
		}
		for _, inst := range insts {
			res, err := inst.Wait(t.Context())
			require.NoError(t, err)
			wantCompleted(t, res, "DONE")
		}
		if s := b.Metrics(); s.DeadLettered != 0 {
			t.Errorf("got %d dead letters, want none", s.DeadLettered)
		}
	})
}

// The same holds for a Go agent's lane: an engine resuming more instances
// than their first agent's lane holds does not fail the ones that find it
// full; their work waits for room, is not counted refused, and every
// instance completes.
func TestEngine_Resume_FullLaneDelaysTheResentWork(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := record.NewMemStore()
		b := bus.New()
		defer b.Close()
		reviewer := map[string]registry.Handler{"reviewer": answer("reviewed", nil)}
		eng1 := poolEngine(t, "lane_first.yaml", reviewer, engine.WithStore(store), engine.WithTransport(b))
		var ids []string
		for k := range 4 {
			if k == 2 {
				// An agent takes the first two and never reports: room for two more.
				ms, err := b.Receive("asker", 0)
				require.NoError(t, err)
				require.Len(t, ms, 2)
			}
			inst, err := eng1.Start(t.Context(), nil)
			require.NoError(t, err)
			ids = append(ids, inst.ID())
		}
		require.NoError(t, eng1.Close())

		// Now asker is a Go handler: a lane of 2, one run at a time.
		gate := make(chan struct{})
		handlers := map[string]registry.Handler{
			"reviewer": answer("reviewed", nil),
			"asker": registry.HandlerFunc(func(ctx context.Context, _ *registry.Task) (registry.Outcome, error) {
				select {
				case <-gate:
				case <-ctx.Done():
				}
				return registry.Outcome{Trigger: "ask"}, nil
			}),
		}
		var failed failedEvents
		eng2 := poolEngine(t, "lane_first.yaml", handlers, engine.WithStore(store), engine.WithObserver(failed.observe))
		defer eng2.Close()
		rep, err := eng2.Resume(t.Context())
		require.NoError(t, err)
		if len(rep.Resumed) != 4 || len(rep.Failed) != 0 {
			t.Fatalf("got resume report %+v, want the 4 instances resumed", rep)
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if got := failed.all(); len(got) != 0 {
			t.Fatalf("got instances %v failed after the resume, want none", got)
		}
		close(gate)
		time.Sleep(time.Minute) // past every pause of the waiting work
		synctest.Wait()
		for _, id := range ids {
			wantCompleted(t, waitFor(t, eng2, id), "DONE")
		}
		if q := eng2.AgentQueues()["asker"]; q.Refused != 0 {
			t.Errorf("got asker's lane %+v, want nothing refused", q)
		}
	})
}
