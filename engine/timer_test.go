package engine_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/batonhq/baton/clock"
	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/rules"
)

// TestEngine_Timeout_EachRunItsOwn chains three states with a timeout of
// 10s. A run that finishes just before its timeout leaves its timer to the
// next run; one run never answers. Each run must be timed from its own
// start, and no other run is timed out.
func TestEngine_Timeout_EachRunItsOwn(t *testing.T) {
	w, err := rules.Parse("timers.yaml", []byte(`workflow: timers
initial: A
agents:
  a: {type: test}
  b: {type: test}
  c: {type: test}
states:
  A: {agent: a, timeout: 10s}
  B: {agent: b, timeout: 10s}
  C: {agent: c, timeout: 10s}
  DONE: {terminal: true}
  LATE: {terminal: true}
rules:
  - {id: ab, from: a, trigger: done, next: B}
  - {id: bc, from: b, trigger: done, next: C}
  - {id: cd, from: c, trigger: done, next: DONE}
  - {id: late, from: c, trigger: timeout, next: LATE}
  - {id: late_a, from: a, trigger: timeout, next: LATE}
  - {id: late_b, from: b, trigger: timeout, next: LATE}
`))
	if err != nil {
		t.Fatal(err)
	}
	s := time.Second
	for _, tt := range []struct {
		name string
		b, c []reply
		want string
	}{
		// b takes a's stopped timer and must be timed from its own start.
		{name: "the second run never answers", b: []reply{takes(time.Second, deferred)}, want: "b@19s"},
		{name: "the third run never answers", b: []reply{takes(9*s, ok("done", nil))}, c: []reply{takes(time.Second, deferred)}, want: "c@28s"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := newSimRunOf(t, w, map[string][]reply{"a": {takes(9*s, ok("done", nil))}, "b": tt.b, "c": tt.c})
			res, h := r.finish(nil)
			wantCompleted(t, res, "LATE")
			var timedOut []string
			for _, e := range entries(h, record.KindAgentRun) {
				if e.Error != "" {
					timedOut = append(timedOut, e.Agent+"@"+e.Time.Sub(h[0].Time).String())
				}
			}
			if want := []string{tt.want}; !slices.Equal(timedOut, want) {
				t.Errorf("timed out runs: got %v, want %v", timedOut, want)
			}
		})
	}
}

// deferred answers later, as a report would: the run stays under way.
func deferred(context.Context, *clock.Sim, *registry.Task) (registry.Outcome, error) {
	return registry.Outcome{}, registry.ErrDeferred
}

// TestEngine_Timeout_NoTimerOutlivesItsStep has a run end into a state
// with no timeout (a wait) and another end the instance: the ended run's
// timer, kept for a next run that does not come, is stopped with the step,
// so that nothing moves the clock while the instance waits or after it
// ended (a timer left pending would fire 10s on).
func TestEngine_Timeout_NoTimerOutlivesItsStep(t *testing.T) {
	w, err := rules.Parse("gate.yaml", []byte(`workflow: gate
initial: A
agents:
  a: {type: test}
  b: {type: test}
states:
  A: {agent: a, timeout: 10s}
  GATE: {wait: {signals: [open]}}
  B: {agent: b, timeout: 10s}
  DONE: {terminal: true}
rules:
  - {id: ab, from: a, trigger: done, next: GATE}
  - {id: open, from: GATE, trigger: open, next: B}
  - {id: done, from: b, trigger: done, next: DONE}
`))
	if err != nil {
		t.Fatal(err)
	}
	r := newSimRunOf(t, w, map[string][]reply{"a": {takes(time.Second, ok("done", nil))}, "b": {takes(time.Second, ok("done", nil))}})
	inst := r.start(nil)
	if res := inst.Result(); res.Waiting != "GATE" {
		t.Fatalf("got waiting %q, want GATE", res.Waiting)
	}
	if got := r.sim.Now().Sub(epoch); got != time.Second {
		t.Errorf("waiting, the clock is %s on, want 1s: a timer outlived its run", got)
	}
	if err := inst.Signal(context.Background(), "open", nil); err != nil {
		t.Fatal(err)
	}
	r.settle()
	wantCompleted(t, inst.Result(), "DONE")
	if got := r.sim.Now().Sub(epoch); got != 2*time.Second {
		t.Errorf("ended, the clock is %s on, want 2s: a timer outlived its run", got)
	}
}
