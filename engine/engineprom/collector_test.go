package engineprom_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/batonhq/baton/clock"
	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/engine/engineprom"
	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/rules"
)

// metered has a retried run, a condition that fails at run time, a loop
// that hits its limit and a wait: one instance of each mode shows every
// family.
const metered = `workflow: metered
version: 2
initial: WORK
agents: {worker: {}, looper: {}}
states:
  WORK: {agent: worker, retry: {max: 2, backoff: [1s]}}
  LOOP: {agent: looper, max_visits: 2}
  HOLD: {wait: {signals: [go]}}
  DONE: {terminal: true}
rules:
  - {id: big, from: worker, trigger: done, condition: 'result.n > 1', next: DONE}
  - {id: done, from: worker, trigger: done, next: DONE}
  - {id: loop, from: worker, trigger: loop, next: LOOP}
  - {id: hold, from: worker, trigger: hold, next: HOLD}
  - {id: again, from: looper, trigger: again, next: LOOP}
  - {id: go, from: HOLD, trigger: go, next: DONE}
`

// rig is an engine on the simulated clock, observed and watched by a
// collector on its own registry.
type rig struct {
	sim   *clock.Sim
	eng   *engine.Engine
	reg   *prometheus.Registry
	c     *engineprom.Collector
	stop  func()
	tries map[string]int
}

func newRig(t *testing.T) *rig {
	t.Helper()
	w, err := rules.Parse("metered.yaml", []byte(metered))
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{sim: clock.NewSim(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)), reg: prometheus.NewRegistry(), tries: map[string]int{}}
	r.c, err = engineprom.Register(r.reg, engineprom.WithStepBuckets([]float64{1, 10}), engineprom.WithInstanceBuckets([]float64{10, 100}))
	if err != nil {
		t.Fatal(err)
	}
	worker := registry.HandlerFunc(func(_ context.Context, task *registry.Task) (registry.Outcome, error) {
		r.sim.Advance(2 * time.Second)
		mode, _ := task.Input["mode"].(string)
		switch mode {
		case "flaky":
			r.tries[task.InstanceID]++
			if r.tries[task.InstanceID] == 1 {
				return registry.Outcome{}, registry.Kind(errors.New("rate limited"), "rate_limited")
			}
			return registry.Outcome{Trigger: "done", Result: map[string]any{"n": "not a number"}}, nil
		case "loop", "hold":
			return registry.Outcome{Trigger: mode}, nil
		}
		return registry.Outcome{Trigger: "done"}, nil
	})
	looper := registry.HandlerFunc(func(context.Context, *registry.Task) (registry.Outcome, error) {
		r.sim.Advance(20 * time.Second)
		return registry.Outcome{Trigger: "again"}, nil
	})
	agents, err := engine.NewRegistry(w, map[string]registry.Handler{"worker": worker, "looper": looper})
	if err != nil {
		t.Fatal(err)
	}
	r.eng, err = engine.New(w, agents, engine.WithClock(r.sim), engine.WithExecutor(r.sim), engine.WithJitterSeed(7),
		engine.WithObserver(r.c.Observe))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.eng.Close() })
	r.stop = r.c.Watch(r.eng)
	return r
}

func (r *rig) start(t *testing.T, mode string) *engine.Instance {
	t.Helper()
	inst, err := r.eng.Start(t.Context(), map[string]any{"mode": mode})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.sim.Run(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	return inst
}

// histogram returns the sample count and sum of the histogram name with
// the given label values.
func histogram(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) (uint64, float64) {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
	next:
		for _, m := range f.GetMetric() {
			got := map[string]string{}
			for _, l := range m.GetLabel() {
				got[l.GetName()] = l.GetValue()
			}
			for k, v := range labels {
				if got[k] != v {
					continue next
				}
			}
			h := m.GetHistogram()
			return h.GetSampleCount(), h.GetSampleSum()
		}
	}
	return 0, 0
}

func compare(t *testing.T, reg *prometheus.Registry, want string, names ...string) {
	t.Helper()
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), names...); err != nil {
		t.Error(err)
	}
}

func TestCollector_EveryFamily(t *testing.T) {
	r := newRig(t)
	r.start(t, "flaky")
	r.start(t, "loop")
	held := r.start(t, "hold")

	compare(t, r.reg, `
# HELP baton_instances_started_total Instances started.
# TYPE baton_instances_started_total counter
baton_instances_started_total{version="2",workflow="metered"} 3
`, "baton_instances_started_total")
	compare(t, r.reg, `
# HELP baton_instances_finished_total Instances that completed, failed or were cancelled; outcome is the terminal state, or the failure's kind.
# TYPE baton_instances_finished_total counter
baton_instances_finished_total{outcome="DONE",status="completed",workflow="metered"} 1
baton_instances_finished_total{outcome="max_visits",status="failed",workflow="metered"} 1
`, "baton_instances_finished_total")
	compare(t, r.reg, `
# HELP baton_instances_running Instances started or resumed and not finished (waiting ones included), in the watched engines.
# TYPE baton_instances_running gauge
baton_instances_running{workflow="metered"} 1
`, "baton_instances_running")
	compare(t, r.reg, `
# HELP baton_retries_total Failed runs scheduled for another attempt, by the failure's kind.
# TYPE baton_retries_total counter
baton_retries_total{agent="worker",kind="rate_limited",state="WORK",workflow="metered"} 1
`, "baton_retries_total")
	compare(t, r.reg, `
# HELP baton_limit_hits_total Transitions a limit stopped.
# TYPE baton_limit_hits_total counter
baton_limit_hits_total{limit="max_visits",workflow="metered"} 1
`, "baton_limit_hits_total")
	compare(t, r.reg, `
# HELP baton_condition_errors_total Rule conditions that failed at run time (each counted as false).
# TYPE baton_condition_errors_total counter
baton_condition_errors_total{state="WORK",workflow="metered"} 1
`, "baton_condition_errors_total")

	// Steps: the worker ran four times (two for the flaky instance), 2s
	// each; the looper twice, 20s each.
	if n, sum := histogram(t, r.reg, "baton_step_duration_seconds", map[string]string{"agent": "worker", "state": "WORK"}); n != 4 || sum != 8 {
		t.Errorf("worker steps: got %d summing %gs, want 4 summing 8s", n, sum)
	}
	if n, sum := histogram(t, r.reg, "baton_step_duration_seconds", map[string]string{"agent": "looper", "state": "LOOP"}); n != 2 || sum != 40 {
		t.Errorf("looper steps: got %d summing %gs, want 2 summing 40s", n, sum)
	}
	// Instances: the loop took 2s + 2 × 20s; the flaky one 2s, its backoff
	// (at most 1s) and 2s.
	if n, sum := histogram(t, r.reg, "baton_instance_duration_seconds", map[string]string{"status": "failed"}); n != 1 || sum != 42 {
		t.Errorf("failed instances: got %d summing %gs, want 1 of 42s", n, sum)
	}
	if n, sum := histogram(t, r.reg, "baton_instance_duration_seconds", map[string]string{"status": "completed"}); n != 1 || sum < 4 || sum > 5 {
		t.Errorf("completed instances: got %d summing %gs, want 1 of 4s to 5s", n, sum)
	}

	// The waiting instance is cancelled: it is no longer running.
	if err := held.Cancel(t.Context()); err != nil {
		t.Fatal(err)
	}
	compare(t, r.reg, `
# HELP baton_instances_finished_total Instances that completed, failed or were cancelled; outcome is the terminal state, or the failure's kind.
# TYPE baton_instances_finished_total counter
baton_instances_finished_total{outcome="DONE",status="completed",workflow="metered"} 1
baton_instances_finished_total{outcome="cancelled",status="cancelled",workflow="metered"} 1
baton_instances_finished_total{outcome="max_visits",status="failed",workflow="metered"} 1
# HELP baton_instances_running Instances started or resumed and not finished (waiting ones included), in the watched engines.
# TYPE baton_instances_running gauge
baton_instances_running{workflow="metered"} 0
`, "baton_instances_finished_total", "baton_instances_running")

	// An engine no longer watched is not reported.
	r.stop()
	r.stop()
	if n := testutil.CollectAndCount(r.c, "baton_instances_running"); n != 0 {
		t.Errorf("got %d running series after stop, want 0", n)
	}
}

func TestRegister_Errors(t *testing.T) {
	if _, err := engineprom.Register(nil); !errors.Is(err, engineprom.ErrNoRegistry) {
		t.Errorf("got %v, want ErrNoRegistry", err)
	}
	reg := prometheus.NewRegistry()
	if _, err := engineprom.Register(reg); err != nil {
		t.Fatal(err)
	}
	var are prometheus.AlreadyRegisteredError
	if _, err := engineprom.Register(reg); !errors.As(err, &are) {
		t.Errorf("got %v registering twice, want AlreadyRegisteredError", err)
	}
}

func TestCollector_NamespaceAndConstLabels(t *testing.T) {
	c := engineprom.New(engineprom.WithNamespace("acme"), engineprom.WithConstLabels(prometheus.Labels{"site": "eu"}))
	c.Observe(engine.Event{Type: engine.EventLimitHit, Workflow: "w", Limit: "max_steps", InstanceID: "never-a-label"})
	want := `
# HELP acme_limit_hits_total Transitions a limit stopped.
# TYPE acme_limit_hits_total counter
acme_limit_hits_total{limit="max_steps",site="eu",workflow="w"} 1
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "acme_limit_hits_total"); err != nil {
		t.Error(err)
	}
}
