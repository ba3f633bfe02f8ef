package engine_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/rules"
)

func TestEngine_Match_PriorityThenFileOrder(t *testing.T) {
	tests := []struct {
		name     string
		result   map[string]any
		wantRule string
		wantPrio int
	}{
		{"high named beats integer 3 and low", map[string]any{"low": true, "three": true, "high": true, "tie": true}, "high_named", 2},
		{"integer 3 beats normal and low", map[string]any{"low": true, "three": true, "tie": true, "five": true}, "int_three", 3},
		{"critical beats high", map[string]any{"crit": true, "high": true}, "crit_named", 1},
		{"critical tie with integer 1: file order", map[string]any{"crit": true}, "crit_named", 1},
		{"urgent is critical", map[string]any{"urgent": true, "high": true}, "urgent_named", 1},
		{"equal priority: first in file", map[string]any{"tie": true}, "tie_first", 5},
		{"normal named ties integer 5: file order", map[string]any{"five": true, "tie": true}, "tie_first", 5},
		{"integer 5 before medium later in file", map[string]any{"five": true}, "normal_int", 5},
		{"low before the later low fallback", map[string]any{"low": true}, "low_first", 10},
		{"unconditional fallback last", map[string]any{}, "fallback", 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newSimRun(t, "priority.yaml", map[string][]reply{"picker": {ok("pick", tt.result)}})
			res, h := r.finish(nil)
			rule, _ := r.eng.Workflow().Rule(tt.wantRule)
			wantCompleted(t, res, rule.Next)
			got := entries(h, record.KindRuleFired)
			if len(got) != 1 {
				t.Fatalf("got %d rule_fired entries, want 1 (history %s)", len(got), kinds(h))
			}
			if got[0].Rule != tt.wantRule || got[0].Priority != tt.wantPrio {
				t.Errorf("got rule %s priority %d, want %s priority %d", got[0].Rule, got[0].Priority, tt.wantRule, tt.wantPrio)
			}
			if rule.Condition != nil && got[0].Condition != rule.Condition.Source {
				t.Errorf("got condition %q, want %q", got[0].Condition, rule.Condition.Source)
			}
		})
	}
}

func TestEngine_Match_NoRuleMatched(t *testing.T) {
	tests := []struct {
		name  string
		reply reply
		want  string
	}{
		{
			name:  "every condition false",
			reply: ok("go", map[string]any{"n": 1, "s": "y"}),
			want:  "rules: no rule matched in state START (agent judge, trigger go): rule big: `result.n > 5` = false; rule named: `result.s == \"x\"` = false",
		},
		{
			name:  "a condition fails at run time",
			reply: ok("go", map[string]any{"s": "y"}),
			want:  "rule big: `result.n > 5` = error: ",
		},
		{
			name:  "no rule for the trigger",
			reply: ok("unknown", nil),
			want:  "rules: no rule matched in state START (agent judge, trigger unknown): no rule has this agent and trigger",
		},
		{
			name:  "error outcome quotes the agent's error",
			reply: permanent("disk on fire"),
			want:  "rules: no rule matched in state START (agent judge, trigger error): rule on_error: `error.kind == \"never\"` = false; agent error: disk on fire",
		},
		{
			name:  "timeout outcome quotes the time-out",
			reply: takes(6*time.Second, ok("go", nil)),
			want:  "(agent judge, trigger timeout): rule on_error: `error.kind == \"never\"` = false; agent error: engine: run timed out: judge did not finish within 5s",
		},
		{
			name:  "rejected outcome quotes the reason",
			reply: reject("not mine"),
			want:  "(agent judge, trigger rejected): rule on_error: `error.kind == \"never\"` = false; agent error: not mine",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newSimRun(t, "nomatch.yaml", map[string][]reply{"judge": {tt.reply}})
			res, h := r.finish(nil)
			wantFailed(t, res, tt.want)
			if !errors.Is(res.Err, rules.ErrNoRuleMatched) {
				t.Errorf("got %v, want it to match rules.ErrNoRuleMatched", res.Err)
			}
			var fe *engine.FailedError
			if !errors.As(res.Err, &fe) || fe.State != "START" || fe.InstanceID != res.ID {
				t.Errorf("got %#v, want *engine.FailedError in state START of %s", res.Err, res.ID)
			}
			if got := entries(h, record.KindFailed); len(got) != 1 || !strings.Contains(got[0].Error, tt.want) {
				t.Errorf("got failed entries %+v, want one quoting %q", got, tt.want)
			}
			if res.State != "START" {
				t.Errorf("got state %s, want START", res.State)
			}
		})
	}
}

func TestEngine_Match_RuntimeFailureCountsFalseAndIsRecorded(t *testing.T) {
	r := newSimRun(t, "nomatch.yaml", map[string][]reply{"judge": {ok("broken", map[string]any{"n": "not a number"})}})
	res, h := r.finish(nil)
	wantCompleted(t, res, "NAMED")
	if got, want := fired(h), []string{"broken_fallback"}; !slices.Equal(got, want) {
		t.Errorf("got rules fired %v, want %v", got, want)
	}
	conds := entries(h, record.KindCondition)
	if len(conds) != 1 {
		t.Fatalf("got %d condition entries, want 1 (history %s)", len(conds), kinds(h))
	}
	c := conds[0]
	if c.Rule != "broken" || c.Condition != "result.n > 5" || c.State != "START" || c.Error == "" {
		t.Errorf("got condition entry %+v, want rule broken, condition `result.n > 5`, state START and the failure", c)
	}
	if !strings.Contains(c.Error, "result.n > 5") {
		t.Errorf("got error %q, want it to quote the expression", c.Error)
	}
}

func TestEngine_Match_ConditionEnvironment(t *testing.T) {
	big := map[string]any{"amount": 150, "who": "ann"}
	tests := []struct {
		name   string
		input  map[string]any
		first  []reply
		second []reply
		want   string // RIGHT when the field held what the test expects
	}{
		{name: "result", first: []reply{ok("result", map[string]any{"v": 7, "s": "seven"})}, want: "RIGHT"},
		{name: "result differs", first: []reply{ok("result", map[string]any{"v": 8, "s": "seven"})}, want: "WRONG"},
		{name: "input", input: big, first: []reply{ok("input", nil)}, want: "RIGHT"},
		{name: "input differs", input: map[string]any{"amount": 50, "who": "ann"}, first: []reply{ok("input", nil)}, want: "WRONG"},
		{name: "context", first: []reply{ok("to_mid", map[string]any{"k": "v"})}, second: []reply{ok("context", nil)}, want: "RIGHT"},
		{name: "context differs", first: []reply{ok("to_mid", map[string]any{"k": "w"})}, second: []reply{ok("context", nil)}, want: "WRONG"},
		{name: "error zero on a normal outcome", first: []reply{ok("no_error", nil)}, want: "RIGHT"},
		{name: "error of a permanent failure", first: []reply{permanent("disk on fire")}, want: "RIGHT"},
		{name: "error of retried failures", first: []reply{fail("flaky 1"), fail("flaky 2"), fail("flaky 3")}, want: "RIGHT"},
		{name: "error of a time-out", first: []reply{takes(11*time.Second, ok("x", nil)), takes(11*time.Second, ok("x", nil)), takes(11*time.Second, ok("x", nil))}, want: "RIGHT"},
		{name: "error of a rejection", first: []reply{reject("too busy")}, want: "RIGHT"},
		{name: "state", first: []reply{ok("state", nil)}, want: "RIGHT"},
		{name: "agent", first: []reply{ok("agent", nil)}, want: "RIGHT"},
		{name: "agent of the second state", first: []reply{ok("to_mid", nil)}, second: []reply{ok("agent", nil)}, want: "RIGHT"},
		{name: "trigger of a list", first: []reply{ok("trig_b", nil)}, want: "RIGHT"},
		{name: "trigger of a list differs", first: []reply{ok("trig_a", nil)}, want: "WRONG"},
		{name: "attempt counts retries", first: []reply{fail("a"), fail("b"), ok("attempt", nil)}, want: "RIGHT"},
		{name: "attempt differs", first: []reply{fail("a"), ok("attempt", nil)}, want: "WRONG"},
		{name: "visits", first: []reply{ok("visits", nil)}, want: "RIGHT"},
		{name: "step of the first run", first: []reply{ok("step", nil)}, want: "RIGHT"},
		{name: "step counts retries", first: []reply{fail("a"), ok("step", nil)}, want: "WRONG"},
		{name: "step of the second state", first: []reply{ok("to_mid", nil)}, second: []reply{ok("step", nil)}, want: "RIGHT"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			agents := map[string][]reply{"first": tt.first}
			if tt.second != nil {
				agents["second"] = tt.second
			}
			r := newSimRun(t, "env.yaml", agents)
			res, h := r.finish(tt.input)
			if res.Outcome != tt.want {
				t.Fatalf("got outcome %q (status %s, err %v, rules %v), want %q", res.Outcome, res.Status, res.Err, fired(h), tt.want)
			}
			if conds := entries(h, record.KindCondition); len(conds) > 0 {
				t.Errorf("got condition failures %+v, want none", conds)
			}
		})
	}
}
