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
	"github.com/batonhq/baton/registry"
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

// journal is a MemStore that also keeps every StepRecord, so that a test
// can build the store as it was after any commit: the store a process
// killed right after that commit, before sending anything, leaves behind.
type journal struct {
	*engine.MemStore
	mu   sync.Mutex
	recs []engine.StepRecord
}

func (j *journal) Commit(ctx context.Context, rec engine.StepRecord) error {
	j.mu.Lock()
	j.recs = append(j.recs, engine.StepRecord{
		Snapshot: rec.Snapshot, Entries: slices.Clone(rec.Entries),
		Outbox: slices.Clone(rec.Outbox), Settled: slices.Clone(rec.Settled),
	})
	j.mu.Unlock()
	return j.MemStore.Commit(ctx, rec)
}

// upTo returns a new store holding the first k commits.
func (j *journal) upTo(t *testing.T, k int) *engine.MemStore {
	s := engine.NewMemStore()
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
			if m.Type != bus.MessageHandoff {
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
			if eng.IsFinalNotice(m) {
				require.NoError(t, eng.Accept(ctx, m))
				continue
			}
			out, runErr := outboxBehaviour(ag, m)
			if err := eng.ReportMessage(ctx, m, out, runErr); err != nil && !errors.Is(err, engine.ErrStaleReport) {
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

func outboxBehaviour(agent string, m *bus.Message) (registry.Outcome, error) {
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

func transitions(h []engine.Entry) []string {
	var out []string
	for _, e := range h {
		if e.Kind == engine.KindTransition {
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
		j := &journal{MemStore: engine.NewMemStore()}
		check := &commitHook{Store: j, before: func(rec engine.StepRecord) {
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
	engine.Store
	before func(engine.StepRecord)
}

func (c *commitHook) Commit(ctx context.Context, rec engine.StepRecord) error {
	c.before(rec)
	return c.Store.Commit(ctx, rec)
}

// TestEngine_Outbox_KilledAfterAnyCommit kills the process, in effect, right
// after each commit of a whole run in turn, before that step's work was
// sent: a new engine on the store as it was resumes the instance, which
// must end as the uninterrupted run did, with every transition applied once,
// and the work in the outbox sent again under its key and hand-off id.
func TestEngine_Outbox_KilledAfterAnyCommit(t *testing.T) {
	j := &journal{MemStore: engine.NewMemStore()}
	var ref []seen
	var refHistory []engine.Entry
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
