package engine_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/batonhq/baton/bus"
	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/transport"
)

// ev renders an event without its time and ids: its type, state/agent and
// step, then the fields it sets.
func ev(e engine.Event) string {
	s := fmt.Sprintf("%s %s/%s step %d", e.Type, e.State, e.Agent, e.Step)
	if e.From != "" || e.To != "" {
		s += " " + e.From + "->" + e.To
	}
	for _, f := range []struct{ name, v string }{
		{"rule", e.Rule}, {"trigger", e.Trigger}, {"kind", e.Kind}, {"limit", e.Limit},
		{"signal", e.Signal}, {"outcome", e.Outcome}, {"reason", e.Reason},
	} {
		if f.v != "" {
			s += " " + f.name + " " + f.v
		}
	}
	if e.Attempt > 0 {
		s += fmt.Sprintf(" attempt %d", e.Attempt)
	}
	if e.Err != nil {
		s += " (error)"
	}
	return s
}

func TestEngine_Events(t *testing.T) {
	tests := []struct {
		name   string
		agents map[string][]reply
		want   []string
	}{
		{
			name: "chain with a final notice",
			agents: map[string][]reply{
				"alpha": {ok("next", nil)}, "beta": {ok("next", nil)}, "gamma": {ok("next", nil)}, "watch": nil,
			},
			want: []string{
				"instance_started FIRST/alpha step 0",
				"state_changed FIRST/alpha step 0 ->FIRST",
				"run_started FIRST/alpha step 1 reason start attempt 1",
				"agent_reported FIRST/alpha step 1 trigger next attempt 1",
				"rule_fired FIRST/alpha step 1 ->SECOND rule a_to_b trigger next",
				"state_changed SECOND/beta step 1 FIRST->SECOND rule a_to_b",
				"agent_changed SECOND/beta step 1 alpha->beta",
				"agent_handoff SECOND/beta step 2 alpha->beta rule a_to_b",
				"run_started SECOND/beta step 2 alpha-> rule a_to_b attempt 1",
				"agent_reported SECOND/beta step 2 trigger next attempt 1",
				"rule_fired SECOND/beta step 2 ->THIRD rule b_to_c trigger next",
				"state_changed THIRD/gamma step 2 SECOND->THIRD rule b_to_c",
				"agent_changed THIRD/gamma step 2 beta->gamma",
				"agent_handoff THIRD/gamma step 3 beta->gamma rule b_to_c",
				"run_started THIRD/gamma step 3 beta-> rule b_to_c attempt 1",
				"agent_reported THIRD/gamma step 3 trigger next attempt 1",
				"rule_fired THIRD/gamma step 3 ->DONE rule c_done trigger next",
				"state_changed DONE/ step 3 THIRD->DONE rule c_done",
				"agent_handoff DONE/ step 3 gamma->watch rule c_done",
				"completed DONE/ step 3 outcome DONE",
			},
		},
		{
			name: "re-entry changes state, not agent; no rule matched fails",
			agents: map[string][]reply{
				"alpha": {ok("next", nil)}, "beta": {ok("stay", nil), ok("next", nil)}, "gamma": {ok("unknown", nil)},
			},
			want: []string{
				"instance_started FIRST/alpha step 0",
				"state_changed FIRST/alpha step 0 ->FIRST",
				"run_started FIRST/alpha step 1 reason start attempt 1",
				"agent_reported FIRST/alpha step 1 trigger next attempt 1",
				"rule_fired FIRST/alpha step 1 ->SECOND rule a_to_b trigger next",
				"state_changed SECOND/beta step 1 FIRST->SECOND rule a_to_b",
				"agent_changed SECOND/beta step 1 alpha->beta",
				"agent_handoff SECOND/beta step 2 alpha->beta rule a_to_b",
				"run_started SECOND/beta step 2 alpha-> rule a_to_b attempt 1",
				"agent_reported SECOND/beta step 2 trigger stay attempt 1",
				"rule_fired SECOND/beta step 2 ->SECOND rule b_self trigger stay",
				"state_changed SECOND/beta step 2 SECOND->SECOND rule b_self",
				"run_started SECOND/beta step 3 rule b_self attempt 1",
				"agent_reported SECOND/beta step 3 trigger next attempt 1",
				"rule_fired SECOND/beta step 3 ->THIRD rule b_to_c trigger next",
				"state_changed THIRD/gamma step 3 SECOND->THIRD rule b_to_c",
				"agent_changed THIRD/gamma step 3 beta->gamma",
				"agent_handoff THIRD/gamma step 4 beta->gamma rule b_to_c",
				"run_started THIRD/gamma step 4 beta-> rule b_to_c attempt 1",
				"agent_reported THIRD/gamma step 4 trigger unknown attempt 1",
				"failed THIRD/gamma step 4 kind no_rule_matched (error)",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newSimRun(t, "chain.yaml", tt.agents)
			res, _ := r.finish(nil)
			var got []string
			for k, e := range r.events {
				got = append(got, ev(e))
				if e.InstanceID != res.ID || e.Workflow != "chain" || e.Version != r.eng.Workflow().Version {
					t.Errorf("event %d: got instance %q workflow %q version %d, want %s, chain and %d", k, e.InstanceID, e.Workflow, e.Version, res.ID, r.eng.Workflow().Version)
				}
				if k > 0 && e.Time.Before(r.events[k-1].Time) {
					t.Errorf("event %d is earlier than the one before", k)
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("events:\ngot  %q\nwant %q", got, tt.want)
			}
			if last := r.events[len(r.events)-1]; last.Type == engine.EventFailed && !errors.Is(last.Err, rules.ErrNoRuleMatched) {
				t.Errorf("failed event: got error %v, want the no-match error", last.Err)
			}
		})
	}
}

// eventsOf returns the events of type typ.
func eventsOf(evs []engine.Event, typ engine.EventType) []engine.Event {
	var out []engine.Event
	for _, e := range evs {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

// oneEvent returns the only event of type typ, failing the test if there
// is not exactly one.
func oneEvent(t *testing.T, evs []engine.Event, typ engine.EventType) engine.Event {
	t.Helper()
	got := eventsOf(evs, typ)
	if len(got) != 1 {
		var all []string
		for _, e := range evs {
			all = append(all, ev(e))
		}
		t.Fatalf("got %d %s events, want 1; events:\n%s", len(got), typ, strings.Join(all, "\n"))
	}
	return got[0]
}

func TestEngine_Events_RetryScheduledAndFailedRuns(t *testing.T) {
	r := newSimRun(t, "retry.yaml", map[string][]reply{"worker": {fail("rate limited"), takes(3*time.Second, ok("done", nil))}})
	res, _ := r.finish(nil)
	wantCompleted(t, res, "DONE")
	failed := eventsOf(r.events, engine.EventAgentReported)
	if len(failed) != 2 || failed[0].Err == nil || failed[0].Kind != "error" || failed[0].Attempt != 1 || failed[0].Agent != "worker" || failed[0].State != "WORK" {
		t.Fatalf("got agent_reported %+v, want a failed first attempt of worker in WORK", failed)
	}
	if failed[1].Err != nil || failed[1].Trigger != "done" || failed[1].Attempt != 2 || failed[1].Duration != 3*time.Second {
		t.Errorf("got second agent_reported %+v, want attempt 2 reporting done after 3s", failed[1])
	}
	retry := oneEvent(t, r.events, engine.EventRetryScheduled)
	if retry.Attempt != 2 || retry.Delay <= 0 || retry.Delay > time.Second || retry.Kind != "error" || retry.Err == nil || retry.Agent != "worker" || retry.Step != 1 {
		t.Errorf("got retry_scheduled %+v, want attempt 2 of step 1 within the 1s backoff, kind error", retry)
	}
	started := eventsOf(r.events, engine.EventRunStarted)
	if len(started) != 2 || started[1].Reason != "retry" || started[1].Attempt != 2 {
		t.Errorf("got run_started %+v, want the retry's attempt 2", started)
	}
}

func TestEngine_Events_TimeoutIsReported(t *testing.T) {
	r := newSimRun(t, "retry.yaml", map[string][]reply{"worker": {ok("hasty", nil)}, "hasty": {takes(11*time.Second, ok("done", nil))}})
	res, _ := r.finish(nil)
	wantCompleted(t, res, "TIMEDOUT")
	got := eventsOf(r.events, engine.EventAgentReported)
	if len(got) != 2 || got[1].Kind != "timeout" || !errors.Is(got[1].Err, engine.ErrTimeout) || got[1].Agent != "hasty" {
		t.Errorf("got agent_reported %+v, want hasty's run timed out", got)
	}
}

func TestEngine_Events_LimitHit(t *testing.T) {
	again := ok("again", nil)
	r := newSimRun(t, "limits.yaml", map[string][]reply{"ping": {again, again, again}, "pong": {again, again}})
	res, _ := r.finish(nil)
	if res.Status != record.StatusFailed {
		t.Fatalf("got %s, want failed", res.Status)
	}
	lim := oneEvent(t, r.events, engine.EventLimitHit)
	if lim.Limit != "max_visits" || lim.To != "PONG" || lim.Count != 3 || lim.Max != 2 || lim.State != "PING" || lim.Err == nil {
		t.Errorf("got limit_hit %+v, want max_visits of PONG at 3 of 2, from PING", lim)
	}
	if f := oneEvent(t, r.events, engine.EventFailed); f.Kind != "max_visits" {
		t.Errorf("got failed kind %q, want max_visits", f.Kind)
	}
}

func TestEngine_Events_ConditionErrorAndRuleFired(t *testing.T) {
	w, err := rules.Parse("cond.yaml", []byte(`
workflow: cond
initial: CHECK
agents: {checker: {}}
states:
  CHECK: {agent: checker}
  BIG: {terminal: true}
  FALLBACK: {terminal: true}
rules:
  - {id: big, from: checker, trigger: checked, condition: 'result.number > 100000', next: BIG}
  - {id: fallback, from: checker, trigger: checked, condition: 'true', next: FALLBACK}
`))
	if err != nil {
		t.Fatal(err)
	}
	r := newSimRunOf(t, w, map[string][]reply{"checker": {ok("checked", map[string]any{"number": "ABC-123"})}})
	r.finish(nil)
	cond := oneEvent(t, r.events, engine.EventConditionError)
	if cond.Rule != "big" || cond.Condition != "result.number > 100000" || cond.Trigger != "checked" || cond.Err == nil || cond.State != "CHECK" {
		t.Errorf("got condition_error %+v, want rule big's condition", cond)
	}
	fired := oneEvent(t, r.events, engine.EventRuleFired)
	if fired.Rule != "fallback" || fired.Condition != "true" || fired.Trigger != "checked" || fired.To != "FALLBACK" || fired.Agent != "checker" {
		t.Errorf("got rule_fired %+v, want fallback into FALLBACK", fired)
	}
}

func TestEngine_Events_SignalAndCancel(t *testing.T) {
	r := newSimRun(t, "wait.yaml", map[string][]reply{"writer": {ok("drafted", nil), ok("drafted", nil)}, "publisher": {ok("published", nil)}})
	inst := startWaiting(t, r)
	if err := inst.Signal(t.Context(), "approved", map[string]any{"by": "ann"}); err != nil {
		t.Fatal(err)
	}
	r.settle()
	sig := oneEvent(t, r.events, engine.EventSignalReceived)
	if sig.Signal != "approved" || sig.State != "APPROVAL" || sig.InstanceID != inst.ID() {
		t.Errorf("got signal_received %+v, want approved in APPROVAL", sig)
	}
	r.events = nil
	second := startWaiting(t, r)
	if err := second.Cancel(t.Context()); err != nil {
		t.Fatal(err)
	}
	c := oneEvent(t, r.events, engine.EventCancelled)
	if !errors.Is(c.Err, engine.ErrCanceled) || c.State != "APPROVAL" || c.InstanceID != second.ID() {
		t.Errorf("got cancelled %+v, want the cancelled instance in APPROVAL", c)
	}
	if len(eventsOf(r.events, engine.EventFailed)) != 0 {
		t.Error("a cancelled instance was told as failed too")
	}
}

func TestEngine_Events_DeadLettered(t *testing.T) {
	r := newSimRun(t, "terminal.yaml", map[string][]reply{"closer": {ok("loud", map[string]any{"code": 7})}})
	filler := &transport.Message{Type: transport.MessageNotification, From: "closer", To: "monitor", Content: map[string]any{"action": "fill"}}
	if err := busOf(r.eng).Send(t.Context(), filler); err != nil {
		t.Fatalf("fill the monitor's mailbox: %v", err)
	}
	res, _ := r.finish(nil)
	dl := oneEvent(t, r.events, engine.EventDeadLettered)
	if dl.Reason != string(transport.ReasonQueueOverflow) || dl.Agent != "monitor" || dl.InstanceID != res.ID || dl.Step != 2 || dl.MessageID == "" || dl.Workflow != "terminal" || dl.State != "LOUD" {
		t.Errorf("got dead_lettered %+v, want the notice to monitor of step 2", dl)
	}
	done := oneEvent(t, r.events, engine.EventCompleted)
	if done.Outcome != "LOUD" || done.Duration < 0 {
		t.Errorf("got completed %+v, want outcome LOUD", done)
	}
}

// A run whose every attempt fails leaves a warning per attempt and an error
// for the instance, each naming the instance, step, agent and kind.
func TestEngine_Logs_EveryFailedRun(t *testing.T) {
	core, logs := observer.New(zapcore.InfoLevel)
	boom := fail("model unavailable")
	r := newSimRun(t, "retry.yaml", map[string][]reply{"worker": {boom, boom, boom, boom, boom}}, engine.WithLogger(zap.New(core)))
	res, _ := r.finish(nil)
	wantCompleted(t, res, "ERRORED")
	warned := logs.FilterMessage("engine: run failed").All()
	if len(warned) != 5 {
		t.Fatalf("got %d run failed lines, want 5 (one per attempt)", len(warned))
	}
	for k, l := range warned {
		f := l.ContextMap()
		if l.Level != zapcore.WarnLevel || f["instance"] != res.ID || f["agent"] != "worker" || f["step"] != int64(k+1) || f["kind"] != "error" || f["attempt"] != int64(k+1) || !strings.Contains(fmt.Sprint(f["error"]), "model unavailable") {
			t.Errorf("line %d: got %s %v, want a warning for attempt %d, step %d", k, l.Level, f, k+1, k+1)
		}
	}
	if n := logs.FilterMessage("engine: retry scheduled").Len(); n != 4 {
		t.Errorf("got %d retry lines, want 4", n)
	}

	// An instance that fails logs an error.
	core, logs = observer.New(zapcore.InfoLevel)
	r = newSimRun(t, "chain.yaml", map[string][]reply{"alpha": {ok("nonsense", nil)}}, engine.WithLogger(zap.New(core)))
	res, _ = r.finish(nil)
	failed := logs.FilterMessage("engine: instance failed").All()
	if len(failed) != 1 || failed[0].Level != zapcore.ErrorLevel || failed[0].ContextMap()["instance"] != res.ID || failed[0].ContextMap()["kind"] != "no_rule_matched" || failed[0].ContextMap()["agent"] != "alpha" {
		t.Errorf("got %+v, want one error line for the failed instance", failed)
	}
}

// A Go program that forgets a handler is told at New which agents will wait
// for a taker of the engine's own transport; one given a transport (NATS,
// a server) is not, since there external agents are the point.
func TestEngine_New_WarnsOfAgentsWithoutAHandler(t *testing.T) {
	w := loadWorkflow(t, "chain.yaml")
	core, logs := observer.New(zapcore.WarnLevel)
	reg, err := engine.NewRegistry(w, map[string]registry.Handler{"alpha": registry.HandlerFunc(func(context.Context, *registry.Task) (registry.Outcome, error) {
		return registry.Outcome{Trigger: "ok"}, nil
	})})
	if err != nil {
		t.Fatal(err)
	}
	eng, err := newEngine(w, reg, engine.WithLogger(zap.New(core)))
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	warned := logs.FilterMessageSnippet("without a Go handler").All()
	if len(warned) != 1 {
		t.Fatalf("got %d warnings, want 1", len(warned))
	}
	got := fmt.Sprint(warned[0].ContextMap()["agents"])
	if strings.Contains(got, "alpha") || !strings.Contains(got, "beta") {
		t.Errorf("got agents %s, want the agents without a handler (beta, not alpha)", got)
	}

	core, logs = observer.New(zapcore.WarnLevel)
	tr := bus.New()
	defer tr.Close()
	eng2, err := newEngine(w, nil, engine.WithLogger(zap.New(core)), engine.WithTransport(tr))
	if err != nil {
		t.Fatal(err)
	}
	defer eng2.Close()
	if n := logs.FilterMessageSnippet("without a Go handler").Len(); n != 0 {
		t.Errorf("got %d warnings with a transport given, want none", n)
	}
}
