package natsstore_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/bus"
	"github.com/batonhq/baton/clock"
	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/natsserver"
	"github.com/batonhq/baton/natsstore"
	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/rules"
)

const waitFlow = `workflow: wait
initial: DRAFTING
agents: {writer: {}}
states:
  DRAFTING: {agent: writer}
  APPROVAL: {wait: {signals: [approved]}, timeout: 48h}
  DONE: {terminal: true}
  EXPIRED: {terminal: true}
rules:
  - {id: drafted, from: writer, trigger: drafted, next: APPROVAL}
  - {id: approved, from: APPROVAL, trigger: approved, next: DONE, context: {by: result.by}}
  - {id: expired, from: APPROVAL, trigger: timeout, next: EXPIRED}
`

// An instance that waits for a signal when its process dies is, after a
// restart on the same NATS store, still waiting with its original
// deadline: a signal moves it on, or the deadline times it out.
func TestStore_ResumesAWaitingInstance(t *testing.T) {
	w, err := rules.Parse("wait.yaml", []byte(waitFlow))
	require.NoError(t, err)
	// A sync interval the server's sync timer never reaches in a test
	// (nats-server 2.15 arms that timer without its lock).
	srv := startServer(t, natsserver.Config{SyncInterval: time.Minute})
	newEngine := func(store *natsstore.Store, sim *clock.Sim) *engine.Engine {
		reg, err := engine.NewRegistry(w, nil)
		require.NoError(t, err)
		b := bus.New(bus.WithClock(sim), bus.WithAckMessages(false)) // the writer's work waits there
		eng, err := engine.New(w, reg, engine.WithStore(store), engine.WithClock(sim), engine.WithExecutor(sim), engine.WithTransport(b))
		require.NoError(t, err)
		t.Cleanup(func() {
			_ = eng.Close()
			_ = b.Close()
		})
		return eng
	}
	for _, path := range []string{"signal", "timeout"} {
		t.Run(path, func(t *testing.T) {
			ctx := context.Background()
			prefix := "wait" + path
			sim := clock.NewSim(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
			first := newEngine(openStore(t, srv, natsstore.Config{Prefix: prefix}), sim)
			inst, err := first.Start(ctx, nil)
			require.NoError(t, err)
			require.NoError(t, first.Report(ctx, inst.ID(), 1, registry.Outcome{Trigger: "drafted"}, nil))
			require.NoError(t, sim.RunReady(ctx))
			require.Equal(t, "APPROVAL", inst.Result().Waiting)
			since := sim.Now()
			sim.Advance(10 * time.Hour)
			_ = first.Close() // the process dies while the instance waits

			second := newEngine(openStore(t, srv, natsstore.Config{Prefix: prefix}), sim)
			rep, err := second.Resume(ctx)
			require.NoError(t, err)
			require.True(t, slices.Equal(rep.Resumed, []string{inst.ID()}), "resumed %v", rep.Resumed)
			again, err := second.Instance(inst.ID())
			require.NoError(t, err)
			require.Equal(t, "APPROVAL", again.Result().Waiting)
			if path == "signal" {
				require.NoError(t, second.Signal(ctx, inst.ID(), "approved", map[string]any{"by": "ana"}))
				res := again.Result()
				require.Equal(t, "DONE", res.Outcome)
				require.Equal(t, "ana", res.Context["by"])
				return
			}
			require.NoError(t, sim.Run(ctx, nil))
			require.Equal(t, "EXPIRED", again.Result().Outcome)
			h, err := again.History(ctx)
			require.NoError(t, err)
			var last record.Entry
			for _, e := range h {
				if e.Kind == record.KindOutcome {
					last = e
				}
			}
			require.True(t, last.Time.Equal(since.Add(48*time.Hour)), "timed out at %s, want the original deadline %s", last.Time, since.Add(48*time.Hour))
		})
	}
}
