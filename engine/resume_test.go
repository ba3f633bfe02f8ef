package engine_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/rules"
)

const resumeWorkflow = `
workflow: resume
initial: A
agents:
  a: {type: t}
  b: {type: t}
states:
  A: {agent: a}
  B: {agent: b}
  DONE: {terminal: true}
rules:
  - {id: ab, from: a, trigger: ok, next: B, task: '"do b"', constraints: {limit: 3}}
  - {id: done, from: b, trigger: ok, next: DONE}
`

func externalEngine(t *testing.T, src string, store record.Store) *engine.Engine {
	t.Helper()
	w, err := rules.Parse("resume.yaml", []byte(src))
	require.NoError(t, err)
	reg, err := engine.NewRegistry(w, nil)
	require.NoError(t, err)
	eng, err := newEngine(w, reg, engine.WithStore(store))
	require.NoError(t, err)
	t.Cleanup(func() { _ = eng.Close() })
	return eng
}

func TestEngine_Resume_ContinuesFromTheLastCommittedStep(t *testing.T) {
	ctx := context.Background()
	store := record.NewMemStore()
	first := externalEngine(t, resumeWorkflow, store)
	inst, err := first.Start(ctx, map[string]any{"order": "o-1"})
	require.NoError(t, err)
	m, err := busOf(first).ReceiveWait(ctx, "a")
	require.NoError(t, err)
	require.NoError(t, reportWork(ctx, first, m, registry.Outcome{Trigger: "ok", Result: map[string]any{"x": 1}}, nil))
	lost, err := busOf(first).ReceiveWait(ctx, "b") // b takes step 2, then the process dies
	require.NoError(t, err)
	require.NoError(t, first.Close())

	second := externalEngine(t, resumeWorkflow, store)
	rep, err := second.Resume(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{inst.ID()}, rep.Resumed)
	assert.Empty(t, rep.Failed)

	again, err := busOf(second).ReceiveWait(ctx, "b")
	require.NoError(t, err)
	assert.Equal(t, lost.Metadata["idempotency_key"], again.Metadata["idempotency_key"], "the re-dispatched step keeps its key")
	assert.Equal(t, lost.Metadata["handoff_id"], again.Metadata["handoff_id"], "the hand-off is sent again from the outbox, under its id")
	assert.Equal(t, "do b", again.Content["task_description"])
	assert.Equal(t, map[string]any{"limit": 3}, again.Content["constraints"])
	assert.Equal(t, map[string]any{"x": 1}, again.Content["previous_result"])
	require.NoError(t, reportWork(ctx, second, again, registry.Outcome{Trigger: "ok"}, nil))

	h, err := second.Instance(inst.ID())
	require.NoError(t, err)
	res, err := h.Wait(ctx)
	require.NoError(t, err)
	assert.Equal(t, "DONE", res.Outcome)
	history, err := h.History(ctx)
	require.NoError(t, err)
	var kinds []string
	for _, e := range history {
		kinds = append(kinds, string(e.Kind))
	}
	assert.Contains(t, strings.Join(kinds, ","), "handoff,resumed,agent_run", "the hand-off is recorded once, the resume is recorded, then the step runs once")

	rep, err = second.Resume(ctx)
	require.NoError(t, err)
	assert.Empty(t, rep.Resumed, "finished instances are not resumed")
}

func TestEngine_Resume_OtherVersionsFinishOnTheirOwnRules(t *testing.T) {
	ctx := context.Background()
	store := record.NewMemStore()
	old := externalEngine(t, resumeWorkflow, store)
	inst, err := old.Start(ctx, nil)
	require.NoError(t, err)
	require.NoError(t, old.Close())

	edited := strings.Replace(resumeWorkflow, `task: '"do b"'`, `task: '"do b, v2"'`, 1)
	newer := externalEngine(t, edited, store)
	rep, err := newer.Resume(ctx)
	require.NoError(t, err)
	assert.Empty(t, rep.Resumed)
	assert.Equal(t, []string{inst.ID()}, rep.OtherVersion, "an instance keeps the rules it started with")

	// The store kept the source of the version the instance started on: an
	// engine built from it resumes the instance, on the old rules.
	snap, err := store.Instance(ctx, inst.ID())
	require.NoError(t, err)
	w, err := engine.StoredWorkflow(ctx, store, snap.Hash)
	require.NoError(t, err)
	assert.Equal(t, snap.Hash, w.Hash)
	reg, err := engine.NewRegistry(w, nil)
	require.NoError(t, err)
	same, err := newEngine(w, reg, engine.WithStore(store))
	require.NoError(t, err)
	t.Cleanup(func() { _ = same.Close() })
	rep, err = same.Resume(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{inst.ID()}, rep.Resumed, "the engine of its own version resumes it")
	m, err := busOf(same).ReceiveWait(ctx, "a")
	require.NoError(t, err)
	require.NoError(t, reportWork(ctx, same, m, registry.Outcome{Trigger: "ok"}, nil))
	b, err := busOf(same).ReceiveWait(ctx, "b")
	require.NoError(t, err)
	assert.Equal(t, "do b", b.Content["task_description"], "the old version's rules, not the edited ones")

	_, err = engine.StoredWorkflow(ctx, store, "no-such-hash")
	assert.ErrorIs(t, err, engine.ErrUnknownWorkflow)
}

const retryResumeWorkflow = `
workflow: resume_retry
initial: A
agents:
  a: {type: t}
states:
  A: {agent: a, retry: {max: 2, backoff: [1m]}}
  DONE: {terminal: true}
  LOST: {terminal: true}
rules:
  - {id: done, from: a, trigger: ok, next: DONE}
  - {id: lost, from: a, trigger: error, next: LOST}
`

func TestEngine_Resume_APendingRetryIsRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		store := record.NewMemStore()
		first := externalEngine(t, retryResumeWorkflow, store)
		inst, err := first.Start(ctx, nil)
		require.NoError(t, err)
		m, err := busOf(first).ReceiveWait(ctx, "a")
		require.NoError(t, err)
		require.NoError(t, reportWork(ctx, first, m, registry.Outcome{}, errors.New("flaky")))
		require.NoError(t, first.Close()) // dies during the 1m backoff

		second := externalEngine(t, retryResumeWorkflow, store)
		rep, err := second.Resume(ctx)
		require.NoError(t, err)
		require.Equal(t, []string{inst.ID()}, rep.Resumed)
		start := time.Now()
		retry, err := busOf(second).ReceiveWait(ctx, "a")
		require.NoError(t, err)
		assert.Equal(t, time.Minute, time.Since(start), "the retry waits its backoff again")
		assert.Equal(t, 2, retry.Metadata["step"], "the retry is the next step")
		require.NoError(t, reportWork(ctx, second, retry, registry.Outcome{Trigger: "ok"}, nil))
		h, err := second.Instance(inst.ID())
		require.NoError(t, err)
		res, err := h.Wait(ctx)
		require.NoError(t, err)
		assert.Equal(t, "DONE", res.Outcome)
		require.NoError(t, second.Close())
	})
}
