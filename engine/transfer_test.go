package engine_test

import (
	"maps"
	"reflect"
	"testing"

	"github.com/batonhq/baton/bus"
	"github.com/batonhq/baton/handoff"
	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/transport"
)

// receiveOne takes the single message waiting in agent's mailbox.
func receiveOne(t *testing.T, b *bus.Bus, agent string) *transport.Message {
	t.Helper()
	msgs, err := b.Receive(agent, 0)
	if err != nil {
		t.Fatalf("Receive(%s): %v", agent, err)
	}
	if len(msgs) != 1 {
		t.Fatalf("got %d messages for %s, want 1", len(msgs), agent)
	}
	return msgs[0]
}

func TestEngine_Context_MergeAndTransfer(t *testing.T) {
	first := map[string]any{"what": "the refund", "x": 1, "extra": true}
	tests := []struct {
		name      string
		sender    reply
		wantDesc  string
		wantCtx   map[string]any
		wantPrio  int
		wantCons  map[string]any
		wantWhy   string
		wantRule  string
		wantOwner string
	}{
		{
			name: "task expression", sender: ok("task", first),
			wantDesc: "work on the refund", wantCtx: map[string]any{"x": 1, "amount": 50},
			wantPrio: 2, wantCons: map[string]any{"limit": 5, "method": "original"}, wantWhy: "Middle must work", wantRule: "with_task",
		},
		{
			name: "no task: the reason", sender: ok("reason", first),
			wantDesc: "Because it is time", wantCtx: map[string]any{"x": 1},
			wantPrio: 5, wantCons: map[string]any{}, wantWhy: "Because it is time", wantRule: "with_reason",
		},
		{
			name: "no task, no reason: the rule id", sender: ok("bare", first),
			wantDesc: "bare", wantCtx: map[string]any{},
			wantPrio: 5, wantCons: map[string]any{}, wantWhy: "", wantRule: "bare",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newSimRun(t, "transfer.yaml", map[string][]reply{
				"sender": {tt.sender},
				"middle": {ok("more", map[string]any{"y": "why"})},
			})
			inst := r.start(map[string]any{"amount": 50})
			runs := r.script.runsOf("middle")
			if len(runs) != 1 {
				t.Fatalf("got %d runs of middle, want 1", len(runs))
			}
			task := runs[0].Task
			if task.Description != tt.wantDesc {
				t.Errorf("task description: got %q, want %q", task.Description, tt.wantDesc)
			}
			if !reflect.DeepEqual(task.Context, tt.wantCtx) {
				t.Errorf("context: got %v, want %v", task.Context, tt.wantCtx)
			}
			if !reflect.DeepEqual(task.PreviousResult, first) {
				t.Errorf("previous result: got %v, want %v", task.PreviousResult, first)
			}
			if !reflect.DeepEqual(task.Constraints, tt.wantCons) {
				t.Errorf("constraints: got %v, want %v", task.Constraints, tt.wantCons)
			}
			if task.Step != 2 || task.Attempt != 1 || task.From != "sender" || task.State != "MID" || task.Reason != tt.wantWhy {
				t.Errorf("got step %d attempt %d from %q state %s reason %q, want step 2 attempt 1 from sender state MID reason %q",
					task.Step, task.Attempt, task.From, task.State, task.Reason, tt.wantWhy)
			}
			if task.WorkflowID != "transfer" || task.InstanceID != inst.ID() || task.IdempotencyKey != inst.ID()+":2" {
				t.Errorf("got workflow %q instance %q key %q, want transfer, %s and %s:2", task.WorkflowID, task.InstanceID, task.IdempotencyKey, inst.ID(), inst.ID())
			}

			// The second hand-off goes to an external agent: read it off the bus.
			m := receiveOne(t, busOf(r.eng), "receiver")
			wantCtx := maps.Clone(tt.wantCtx)
			maps.Copy(wantCtx, map[string]any{"x": "overwritten", "y": "why", "seen_x": tt.wantCtx["x"]})
			if got := m.Content["context"]; !reflect.DeepEqual(got, wantCtx) {
				t.Errorf("merged context on the bus: got %v, want %v", got, wantCtx)
			}
			if got := inst.Result().Context; !reflect.DeepEqual(got, wantCtx) {
				t.Errorf("instance context: got %v, want %v", got, wantCtx)
			}
			if got, want := m.Content["previous_result"], map[string]any{"y": "why"}; !reflect.DeepEqual(got, want) {
				t.Errorf("previous_result on the bus: got %v, want %v", got, want)
			}
			if m.Type != transport.MessageHandoff || m.From != "middle" || m.To != "receiver" {
				t.Errorf("got %s %s->%s, want HANDOFF middle->receiver", m.Type, m.From, m.To)
			}
			if m.Content["task_description"] != "Receiver finishes" || m.Content["reason"] != string(handoff.ReasonRule) {
				t.Errorf("got task_description %v reason %v, want %q and %q", m.Content["task_description"], m.Content["reason"], "Receiver finishes", handoff.ReasonRule)
			}
			if m.Metadata["workflow"] != "transfer" || m.Metadata["instance_id"] != inst.ID() || m.Metadata["step"] != 3 {
				t.Errorf("got metadata %v, want workflow transfer, instance %s, step 3", m.Metadata, inst.ID())
			}

			// The rule hand-off records carry reason "rule".
			recs := handoffHistory(t, r.eng, inst.ID())
			if len(recs) != 2 {
				t.Fatalf("got %d hand-off records, want 2", len(recs))
			}
			for _, rec := range recs {
				if rec.Reason != handoff.ReasonRule {
					t.Errorf("hand-off %s->%s: got reason %q, want %q", rec.From, rec.To, rec.Reason, handoff.ReasonRule)
				}
			}
			if recs[0].Priority != tt.wantPrio || recs[0].Step != 2 {
				t.Errorf("first hand-off: got priority %d step %d, want %d and 2", recs[0].Priority, recs[0].Step, tt.wantPrio)
			}
			hs := entries(history(t, inst), record.KindHandoff)
			if len(hs) != 2 || hs[0].Rule != tt.wantRule || hs[0].Step != 2 || hs[0].Detail != tt.wantDesc {
				t.Errorf("got hand-off entries %+v, want the first by rule %s at step 2 with %q", hs, tt.wantRule, tt.wantDesc)
			}
		})
	}
}

func TestEngine_Context_HandoffPriorityMapping(t *testing.T) {
	tests := []struct {
		trigger string
		want    transport.Priority
	}{
		{"p_critical", transport.PriorityCritical},
		{"p_urgent", transport.PriorityCritical},
		{"p_high", transport.PriorityHigh},
		{"p_4", transport.PriorityHigh},
		{"p_normal", transport.PriorityNormal},
		{"p_9", transport.PriorityNormal},
		{"p_low", transport.PriorityLow},
		{"p_50", transport.PriorityLow},
	}
	for _, tt := range tests {
		t.Run(tt.trigger, func(t *testing.T) {
			r := newSimRun(t, "transfer.yaml", map[string][]reply{
				"sender": {ok("bare", nil)},
				"middle": {ok(tt.trigger, nil)},
			})
			r.start(nil)
			if got := receiveOne(t, busOf(r.eng), "receiver").Priority; got != tt.want {
				t.Errorf("got priority %s, want %s", got, tt.want)
			}
		})
	}
}

func TestEngine_Context_StartsEmptyAndInputIsSeparate(t *testing.T) {
	r := newSimRun(t, "transfer.yaml", map[string][]reply{
		"sender": {ok("bare", nil)},
		"middle": {ok("p_low", nil)},
	})
	input := map[string]any{"amount": 9}
	inst := r.start(input)
	first := r.script.runsOf("sender")[0].Task
	if len(first.Context) != 0 || !reflect.DeepEqual(first.Input, input) {
		t.Errorf("first run: got context %v input %v, want empty context and input %v", first.Context, first.Input, input)
	}
	if first.PreviousResult == nil || first.Constraints == nil || len(first.PreviousResult)+len(first.Constraints) != 0 {
		t.Errorf("first run: got previous %v constraints %v, want empty non-nil maps", first.PreviousResult, first.Constraints)
	}
	if got := inst.Result().Context; len(got) != 0 {
		t.Errorf("got context %v, want empty", got)
	}
}

func TestEngine_Context_TaskFailingAtRunTimeFailsTheInstance(t *testing.T) {
	r := newSimRun(t, "transfer.yaml", map[string][]reply{"sender": {ok("broken", map[string]any{"what": 42})}})
	res, h := r.finish(nil)
	wantFailed(t, res, "engine: rule broken_task: task: rules: evaluate `\"work on \" + result.what`")
	if res.State != "START" || len(res.Context) != 0 {
		t.Errorf("got state %s context %v, want START and no merge", res.State, res.Context)
	}
	if n := len(entries(h, record.KindHandoff)); n != 0 {
		t.Errorf("got %d hand-offs, want none", n)
	}
}
