package engine_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/bus"
	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/wire"
)

const threeBranchWF = `
workflow: tb
initial: A
agents:
  a: {type: t}
  x: {type: t}
  y: {type: t}
  z: {type: t}
states:
  A: {agent: a}
  P: {agents: [x, y, z], join: {strategy: all, timeout: 1m}}
  DONE: {terminal: true}
rules:
  - {id: ap, from: a, trigger: ok, next: P}
  - {id: pd, from: P, trigger: joined, next: DONE}
`

// A join resumed by another engine after one branch reported takes the
// other branches' reports, made for the work the first engine sent; the
// first engine, which lost the instance, answers them unknown_instance
// (not stale, which would have the agent drop its work).
func TestEngine_Resume_JoinWithABranchDoneTakesTheOthersReports(t *testing.T) {
	ctx := context.Background()
	store := record.NewMemStore()
	first := externalEngine(t, threeBranchWF, store)
	inst, err := first.Start(ctx, nil)
	require.NoError(t, err)
	m, err := busOf(first).ReceiveWait(ctx, "a")
	require.NoError(t, err)
	require.NoError(t, reportWork(ctx, first, m, okOutcome(), nil))
	steps := map[string]int{}
	for _, ag := range []string{"x", "y", "z"} {
		m, err := busOf(first).ReceiveWait(ctx, ag)
		require.NoError(t, err)
		step, _ := m.Metadata["step"].(int)
		steps[ag] = step
	}
	ans := first.HandleReport(ctx, &wire.Report{InstanceID: inst.ID(), Step: steps["x"], Agent: "x", Trigger: "ok"})
	require.True(t, ans.OK, "%+v", ans)
	require.Equal(t, []string{inst.ID()}, first.Release(func(string) bool { return true }))
	for _, ag := range []string{"y", "z"} {
		ans := first.HandleReport(ctx, &wire.Report{InstanceID: inst.ID(), Step: steps[ag], Agent: ag, Trigger: "ok"})
		require.Equal(t, wire.CodeUnknownInstance, ans.Code, "%s to the engine that lost the instance: %+v", ag, ans)
	}
	require.NoError(t, first.Close())

	second := externalEngine(t, threeBranchWF, store)
	rep, err := second.ResumeWhere(ctx, func(string) bool { return true })
	require.NoError(t, err)
	require.Equal(t, []string{inst.ID()}, rep.Resumed)
	for _, ag := range []string{"y", "z"} {
		ans := second.HandleReport(ctx, &wire.Report{InstanceID: inst.ID(), Step: steps[ag], Agent: ag, Trigger: "ok"})
		require.True(t, ans.OK, "%s: %+v", ag, ans)
	}
	snap, err := store.Instance(ctx, inst.ID())
	require.NoError(t, err)
	require.Equal(t, "DONE", snap.State)
}

// gatedStore holds the next commit until let is closed, then refuses it
// with ErrNotOwner: another engine fenced the instance meanwhile.
type gatedStore struct {
	record.Store
	armed   chan struct{} // closed by the test to gate the next commit
	holding chan struct{} // closed when the gated commit waits
	let     chan struct{}
	once    bool
}

func (s *gatedStore) Commit(ctx context.Context, rec record.Step) error {
	select {
	case <-s.armed:
		if !s.once {
			s.once = true
			close(s.holding)
			<-s.let
			return fmt.Errorf("test store: %w", engine.ErrNotOwner)
		}
	default:
	}
	return s.Store.Commit(ctx, rec)
}

// A branch's report that waited for the instance while another branch's
// commit was refused (the instance taken over meanwhile) is answered
// unknown_instance, not stale: answered stale, the agent would drop its
// work, and the engine that took the instance over would never hear of
// the run.
func TestEngine_Report_WaitingWhileTheInstanceIsReleased(t *testing.T) {
	ctx := context.Background()
	store := &gatedStore{Store: record.NewMemStore(), armed: make(chan struct{}), holding: make(chan struct{}), let: make(chan struct{})}
	eng := externalEngine(t, threeBranchWF, store)
	inst, err := eng.Start(ctx, nil)
	require.NoError(t, err)
	m, err := busOf(eng).ReceiveWait(ctx, "a")
	require.NoError(t, err)
	require.NoError(t, reportWork(ctx, eng, m, okOutcome(), nil))
	steps := map[string]int{}
	for _, ag := range []string{"x", "y"} {
		m, err := busOf(eng).ReceiveWait(ctx, ag)
		require.NoError(t, err)
		steps[ag], _ = m.Metadata["step"].(int)
	}
	close(store.armed)
	answers := make(chan wire.Answer, 2)
	go func() {
		answers <- eng.HandleReport(ctx, &wire.Report{InstanceID: inst.ID(), Step: steps["x"], Agent: "x", Trigger: "ok"})
	}()
	<-store.holding
	go func() {
		answers <- eng.HandleReport(ctx, &wire.Report{InstanceID: inst.ID(), Step: steps["y"], Agent: "y", Trigger: "ok"})
	}()
	// Give y's report a moment to reach the instance and wait for it. Were
	// it slower, it would find the instance gone and get the same answer:
	// the test cannot fail on a slow machine, it only checks less.
	time.Sleep(50 * time.Millisecond)
	close(store.let)
	for range 2 {
		ans := <-answers
		require.Equal(t, wire.CodeUnknownInstance, ans.Code, "%+v", ans)
	}
}

// Work an engine sends again as it takes an instance over reaches the
// agent even when the transport delivered and acknowledged the first send:
// the agent took it, but its report reached no engine that kept it. (The
// transport drops a second send under the same key; the resend has a key
// of its own, while the agent sees the work's idempotency key.)
func TestEngine_Resume_ResentWorkIsDeliveredAfterTheFirstWasAcknowledged(t *testing.T) {
	ctx := context.Background()
	store := record.NewMemStore()
	shared := bus.New()
	t.Cleanup(func() { _ = shared.Close() })
	engineOn := func() *engine.Engine {
		w, err := rules.Parse("resume.yaml", []byte(resumeWorkflow))
		require.NoError(t, err)
		reg, err := engine.NewRegistry(w, nil)
		require.NoError(t, err)
		eng, err := newEngine(w, reg, engine.WithStore(store), engine.WithTransport(shared))
		require.NoError(t, err)
		t.Cleanup(func() { _ = eng.Close() })
		return eng
	}
	first := engineOn()
	inst, err := first.Start(ctx, map[string]any{"order": "o-1"})
	require.NoError(t, err)
	m, err := shared.ReceiveWait(ctx, "a")
	require.NoError(t, err)
	require.NoError(t, shared.Ack(ctx, m)) // taken; the report is lost with the first engine
	require.Equal(t, []string{inst.ID()}, first.Release(func(string) bool { return true }))

	second := engineOn()
	rep, err := second.ResumeWhere(ctx, func(string) bool { return true })
	require.NoError(t, err)
	require.Equal(t, []string{inst.ID()}, rep.Resumed)
	again, ok, err := shared.TryReceive("a")
	require.NoError(t, err)
	require.True(t, ok, "the work sent again on resume was not delivered")
	require.Equal(t, m.Metadata["idempotency_key"], again.Metadata["idempotency_key"], "the agent sees the work's own key")
	require.NoError(t, reportWork(ctx, second, again, registry.Outcome{Trigger: "ok"}, nil))
	snap, err := store.Instance(ctx, inst.ID())
	require.NoError(t, err)
	require.Equal(t, "B", snap.State)
}
