package engine_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/registry"
)

const fullMailboxWF = `
workflow: fm
initial: P
agents:
  x: {type: t, queue: 1}
  y: {type: t}
states:
  P: {agents: [x, y], join: {strategy: all}}
  DONE: {terminal: true}
rules:
  - {id: pd, from: P, trigger: joined, next: DONE}
`

// TestEngine_Outbox_WorkOfARunEndedByAnEarlierSendIsNotSent: the bus refuses
// x's branch of the second instance, which fails the instance (the join can
// no longer be met); y's branch, queued in the same step, must not go out.
// (Found in review: flush went on sending.)
func TestEngine_Outbox_WorkOfARunEndedByAnEarlierSendIsNotSent(t *testing.T) {
	ctx := context.Background()
	store := record.NewMemStore()
	eng := externalEngine(t, fullMailboxWF, store)
	_, err := eng.Start(ctx, nil)
	require.NoError(t, err)
	second, err := eng.Start(ctx, nil)
	require.NoError(t, err)
	res, err := second.Wait(ctx)
	require.NoError(t, err)
	require.Equal(t, record.StatusFailed, res.Status)
	n := 0
	for {
		m, ok, err := busOf(eng).TryReceive("y")
		require.NoError(t, err)
		if !ok {
			break
		}
		if m.Metadata["instance_id"] == second.ID() {
			n++
		}
	}
	require.Zero(t, n, "y got work for an instance already failed")
}

const joinTimeoutWF = `
workflow: jt
initial: A
agents:
  a: {type: t}
  x: {type: t}
  y: {type: t}
states:
  A: {agent: a}
  P: {agents: [x, y], join: {strategy: all, timeout: 1m}}
  DONE: {terminal: true}
rules:
  - {id: ap, from: a, trigger: ok, next: P}
  - {id: pd, from: P, trigger: joined, next: DONE}
`

// TestEngine_Resume_JoinPastItsDeadlineLeavesNothingToSend: a parallel join
// whose deadline passed while the engine was down times out as it is
// rebuilt; its branches' work must leave the outbox, and a later Resume has
// nothing to do. (Found in review: the items stayed in the store, and the
// next Resume panicked on them.)
func TestEngine_Resume_JoinPastItsDeadlineLeavesNothingToSend(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		store := record.NewMemStore()
		first := externalEngine(t, joinTimeoutWF, store)
		inst, err := first.Start(ctx, nil)
		require.NoError(t, err)
		m, err := busOf(first).ReceiveWait(ctx, "a")
		require.NoError(t, err)
		require.NoError(t, reportWork(ctx, first, m, okOutcome(), nil))
		require.NoError(t, first.Close())
		time.Sleep(2 * time.Minute) // down past the join's deadline

		second := externalEngine(t, joinTimeoutWF, store)
		rep, err := second.Resume(ctx)
		require.NoError(t, err)
		require.Equal(t, []string{inst.ID()}, rep.Resumed)
		snap, err := store.Instance(ctx, inst.ID())
		require.NoError(t, err)
		assert.Equal(t, record.StatusFailed, snap.Status, "the join timed out (on_partial defaults to fail)")
		left, err := store.Outbox(ctx, inst.ID())
		require.NoError(t, err)
		assert.Empty(t, left, "a failed instance has nothing left to send")
		for _, ag := range []string{"x", "y"} {
			_, ok, err := busOf(second).TryReceive(ag)
			require.NoError(t, err)
			assert.False(t, ok, "%s got the work of a join already over", ag)
		}
		require.NoError(t, second.Close())

		third := externalEngine(t, joinTimeoutWF, store)
		func() {
			defer func() {
				if p := recover(); p != nil {
					t.Errorf("third Resume panicked: %v", p)
				}
			}()
			rep, err = third.Resume(ctx)
			require.NoError(t, err)
			assert.Empty(t, rep.Resumed)
			assert.Empty(t, rep.Failed)
		}()
	})
}

func okOutcome() registry.Outcome { return registry.Outcome{Trigger: "ok"} }
