package engine_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/record"
)

func repeat(n int, r reply) []reply {
	out := make([]reply, n)
	for i := range out {
		out[i] = r
	}
	return out
}

// The scripts below drive limits*.yaml: PING and PONG hand off to each
// other (PONG allows 2 visits), SELF re-enters itself (default 3 visits),
// FLAKY retries up to 10 times; max_steps is 6.
var (
	pongLoop = map[string][]reply{ // the fifth run's rule would be PONG's third visit
		"ping": repeat(3, ok("again", nil)),
		"pong": repeat(2, ok("again", nil)),
	}
	selfLoop = map[string][]reply{ // SELF's fourth visit
		"ping": {ok("self", nil)},
		"loop": repeat(3, ok("again", nil)),
	}
	stepsByRules = map[string][]reply{ // the seventh step, by a rule
		"ping": append(repeat(2, ok("again", nil)), ok("self", nil)),
		"pong": repeat(2, ok("again", nil)),
		"loop": {ok("again", nil)},
	}
	stepsByRetries = map[string][]reply{ // the seventh step, by a retry
		"ping":  {ok("flaky", nil)},
		"flaky": repeat(5, fail("flaky backend")),
	}
)

func withGuard(agents map[string][]reply, guard ...reply) map[string][]reply {
	out := map[string][]reply{"guard": guard}
	for k, v := range agents {
		out[k] = v
	}
	return out
}

func TestEngine_Limits(t *testing.T) {
	pongPath := []string{"PING", "PONG", "PING", "PONG", "PING"}
	selfPath := []string{"PING", "SELF", "SELF", "SELF"}
	tests := []struct {
		name      string
		file      string
		agents    map[string][]reply
		wantPath  []string
		wantState string // the outcome when completed, the state when failed
		wantErr   string // "" when the instance must complete
		wantLimit engine.LimitError
		wantHops  any // context.hops after the run: the hit's merge is dropped
		wantSent  int // agent-to-agent hand-offs sent: the hit's is dropped
	}{
		{
			name: "max_visits per state fails", file: "limits.yaml", agents: pongLoop,
			wantPath: pongPath, wantState: "PING",
			wantErr:   "engine: limit max_visits exceeded: state PONG would be visited 3 times (max 2)",
			wantLimit: engine.LimitError{Limit: "max_visits", State: "PONG", Count: 3, Max: 2},
			wantHops:  4, wantSent: 4,
		},
		{
			name: "max_visits per state enters on_limit", file: "limits_on_limit.yaml", agents: withGuard(pongLoop, ok("stop", nil)),
			wantPath: append(slices.Clone(pongPath), "GUARD", "STOPPED"), wantState: "STOPPED",
			wantLimit: engine.LimitError{Limit: "max_visits", State: "PONG", Count: 3, Max: 2},
			wantHops:  4, wantSent: 4,
		},
		{
			name: "default max_visits fails", file: "limits.yaml", agents: selfLoop,
			wantPath: selfPath, wantState: "SELF",
			wantErr:   "engine: limit max_visits exceeded: state SELF would be visited 4 times (max 3)",
			wantLimit: engine.LimitError{Limit: "max_visits", State: "SELF", Count: 4, Max: 3},
			wantSent:  1,
		},
		{
			name: "default max_visits enters on_limit", file: "limits_on_limit.yaml", agents: withGuard(selfLoop, ok("stop", nil)),
			wantPath: append(slices.Clone(selfPath), "GUARD", "STOPPED"), wantState: "STOPPED",
			wantLimit: engine.LimitError{Limit: "max_visits", State: "SELF", Count: 4, Max: 3},
			wantSent:  1,
		},
		{
			name: "max_steps by a rule fails", file: "limits.yaml", agents: stepsByRules,
			wantPath: append(slices.Clone(pongPath), "SELF"), wantState: "SELF",
			wantErr:   "engine: limit max_steps exceeded: entering SELF would make step 7 (max 6)",
			wantLimit: engine.LimitError{Limit: "max_steps", State: "SELF", Count: 7, Max: 6},
			wantHops:  4, wantSent: 5,
		},
		{
			name: "max_steps by a retry fails", file: "limits.yaml", agents: stepsByRetries,
			wantPath: []string{"PING", "FLAKY"}, wantState: "FLAKY",
			wantErr:   "engine: limit max_steps exceeded: entering FLAKY would make step 7 (max 6)",
			wantLimit: engine.LimitError{Limit: "max_steps", State: "FLAKY", Count: 7, Max: 6},
			wantSent:  1,
		},
		{
			// The on_limit state's own run would be step 7: max_steps holds
			// for it too, so the instance fails with the first hit.
			name: "max_steps with an agent-owned on_limit fails", file: "limits_on_limit.yaml", agents: withGuard(stepsByRetries),
			wantPath: []string{"PING", "FLAKY"}, wantState: "FLAKY",
			wantErr:   "engine: limit max_steps exceeded: entering FLAKY would make step 7 (max 6)",
			wantLimit: engine.LimitError{Limit: "max_steps", State: "FLAKY", Count: 7, Max: 6},
			wantSent:  1,
		},
		{
			name: "max_steps by a retry enters a terminal on_limit", file: "limits_terminal.yaml",
			agents: map[string][]reply{
				"ping":  {ok("again", nil), ok("flaky", nil)},
				"flaky": repeat(2, fail("flaky backend")),
			},
			wantPath: []string{"PING", "PING", "FLAKY", "LIMITED"}, wantState: "LIMITED",
			wantLimit: engine.LimitError{Limit: "max_steps", State: "FLAKY", Count: 5, Max: 4},
			wantSent:  1,
		},
		{
			name: "max_visits enters a terminal on_limit", file: "limits_terminal.yaml",
			agents:   map[string][]reply{"ping": repeat(2, ok("again", nil))},
			wantPath: []string{"PING", "PING", "LIMITED"}, wantState: "LIMITED",
			wantLimit: engine.LimitError{Limit: "max_visits", State: "PING", Count: 3, Max: 2},
		},
		{
			name: "a hit while in the on_limit state fails", file: "limits_on_limit.yaml", agents: withGuard(pongLoop, ok("ping", nil)),
			wantPath: append(slices.Clone(pongPath), "GUARD"), wantState: "GUARD",
			wantErr:   "engine: limit max_visits exceeded: state PING would be visited 4 times (max 3)",
			wantLimit: engine.LimitError{Limit: "max_visits", State: "PING", Count: 4, Max: 3},
			wantHops:  4, wantSent: 4,
		},
		{
			name: "on_limit re-entering itself fails", file: "limits_on_limit.yaml", agents: withGuard(selfLoop, ok("again", nil)),
			wantPath: append(slices.Clone(selfPath), "GUARD"), wantState: "GUARD",
			wantErr:   "engine: limit max_visits exceeded: state GUARD would be visited 2 times (max 1)",
			wantLimit: engine.LimitError{Limit: "max_visits", State: "GUARD", Count: 2, Max: 1},
			wantSent:  1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newSimRun(t, tt.file, tt.agents)
			res, h := r.finish(nil)
			if tt.wantErr == "" {
				wantCompleted(t, res, tt.wantState)
			} else {
				wantFailed(t, res, tt.wantErr)
				var le *engine.LimitError
				if !errors.As(res.Err, &le) || !errors.Is(res.Err, engine.ErrLimit) {
					t.Fatalf("got %v, want a *engine.LimitError matching ErrLimit", res.Err)
				}
				if res.State != tt.wantState {
					t.Errorf("got state %s, want %s", res.State, tt.wantState)
				}
			}
			if got := path(h); !slices.Equal(got, tt.wantPath) {
				t.Errorf("path: got %v, want %v", got, tt.wantPath)
			}
			hits := entries(h, record.KindLimitHit)
			if len(hits) == 0 {
				t.Fatalf("got no limit_hit entry, want one (history %s)", kinds(h))
			}
			if hit := hits[len(hits)-1]; hit.Next != tt.wantLimit.State || hit.Error != tt.wantLimit.Error() {
				t.Errorf("limit hit: got next %s error %q, want %s and %q", hit.Next, hit.Error, tt.wantLimit.State, tt.wantLimit.Error())
			}
			if res.Status == record.StatusCompleted && len(hits) != 1 {
				t.Errorf("got %d limit hits, want 1", len(hits))
			}
			if got := res.Context["hops"]; got != tt.wantHops {
				t.Errorf("context hops: got %v, want %v (the hit's merge must be dropped)", got, tt.wantHops)
			}
			if got := len(entries(h, record.KindHandoff)); got != tt.wantSent {
				t.Errorf("hand-off entries: got %d, want %d", got, tt.wantSent)
			}
			if got := handoffStats(t, r.eng).Total; got != tt.wantSent {
				t.Errorf("hand-offs sent: got %d, want %d", got, tt.wantSent)
			}
			if res.Steps > r.eng.Workflow().Limits.MaxSteps {
				t.Errorf("got %d steps, want at most max_steps %d", res.Steps, r.eng.Workflow().Limits.MaxSteps)
			}
		})
	}
}

func TestEngine_Limits_OnLimitRunIsDispatchedByTheEngine(t *testing.T) {
	r := newSimRun(t, "limits_on_limit.yaml", withGuard(pongLoop, ok("stop", nil)))
	res, h := r.finish(nil)
	wantCompleted(t, res, "STOPPED")
	runs := r.script.runsOf("guard")
	if len(runs) != 1 {
		t.Fatalf("got %d guard runs, want 1", len(runs))
	}
	task := runs[0].Task
	if task.From != "" || task.Reason != "on_limit" || task.Step != 6 || task.Attempt != 1 {
		t.Errorf("got from %q reason %q step %d attempt %d, want an engine dispatch (from \"\") for on_limit at step 6 attempt 1", task.From, task.Reason, task.Step, task.Attempt)
	}
	if !strings.Contains(task.Description, "max_visits") || !strings.Contains(task.Description, "PONG") {
		t.Errorf("got description %q, want it to name the limit and the state", task.Description)
	}
	var toGuard []record.Entry
	for _, e := range entries(h, record.KindTransition) {
		if e.Next == "GUARD" {
			toGuard = append(toGuard, e)
		}
	}
	if len(toGuard) != 1 || toGuard[0].Rule != "@on_limit" || toGuard[0].State != "PING" {
		t.Errorf("got transitions into GUARD %+v, want one from PING by @on_limit", toGuard)
	}
	for _, e := range entries(h, record.KindHandoff) {
		if e.To == "guard" {
			t.Errorf("got hand-off entry %+v to the guard, want an engine dispatch", e)
		}
	}
}
