package engine_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/handoff"
	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/rules"
)

const noticeWorkflow = `
workflow: notice
initial: WORK
agents:
  worker:  {type: w}
  auditor: {type: a}
states:
  WORK: {agent: worker}
  DONE: {terminal: true}
rules:
  - {id: done, from: worker, trigger: done, to: auditor, next: DONE}
`

// newNoticeEngine runs noticeWorkflow with external agents only.
func newNoticeEngine(t *testing.T) *engine.Engine {
	t.Helper()
	w, err := rules.Parse("notice.yaml", []byte(noticeWorkflow))
	require.NoError(t, err)
	reg, err := engine.NewRegistry(w, nil)
	require.NoError(t, err)
	eng, err := newEngine(w, reg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = eng.Close() })
	return eng
}

func TestEngine_External_TakingSettlesHandoffsAndFinalNotices(t *testing.T) {
	eng := newNoticeEngine(t)
	ctx := context.Background()

	inst, err := eng.Start(ctx, nil)
	require.NoError(t, err)
	msg, err := busOf(eng).ReceiveWait(ctx, "worker")
	require.NoError(t, err)
	require.NoError(t, acceptWork(ctx, eng, msg), "taking an engine dispatch is a heartbeat")
	require.NoError(t, reportWork(ctx, eng, msg, registry.Outcome{Trigger: "done"}, nil))
	res, err := inst.Wait(ctx)
	require.NoError(t, err)
	assert.Equal(t, "DONE", res.Outcome)

	notice, err := busOf(eng).ReceiveWait(ctx, "auditor")
	require.NoError(t, err)
	require.Len(t, pendingHandoffs(t, eng), 1, "the final notice waits for its agent")
	require.NoError(t, acceptWork(ctx, eng, notice))
	assert.Empty(t, pendingHandoffs(t, eng), "taking settles the final notice")
	recs := handoffHistory(t, eng, inst.ID())
	require.Len(t, recs, 1)
	assert.Equal(t, handoff.StatusAccepted, recs[0].Status)
	assert.ErrorIs(t, acceptWork(ctx, eng, notice), engine.ErrStaleReport, "a settled notice is no longer current")
}

func TestEngine_External_ReportingAFinalNoticeSettlesIt(t *testing.T) {
	eng := newNoticeEngine(t)
	ctx := context.Background()

	_, err := eng.Start(ctx, nil)
	require.NoError(t, err)
	msg, err := busOf(eng).ReceiveWait(ctx, "worker")
	require.NoError(t, err)
	require.NoError(t, reportWork(ctx, eng, msg, registry.Outcome{Trigger: "done"}, nil))
	notice, err := busOf(eng).ReceiveWait(ctx, "auditor")
	require.NoError(t, err)
	require.NoError(t, reportWork(ctx, eng, notice, registry.Outcome{}, nil))
	assert.Empty(t, pendingHandoffs(t, eng))
}
