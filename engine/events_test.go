package engine_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/rules"
)

// ev renders an event without its time and ids.
func ev(e engine.Event) string {
	s := fmt.Sprintf("%s %s->%s step %d", e.Type, e.From, e.To, e.Step)
	if e.Rule != "" {
		s += " rule " + e.Rule
	}
	if e.Outcome != "" {
		s += " outcome " + e.Outcome
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
				"state_changed ->FIRST step 0",
				"state_changed FIRST->SECOND step 1 rule a_to_b",
				"agent_changed alpha->beta step 1",
				"agent_handoff alpha->beta step 2 rule a_to_b",
				"state_changed SECOND->THIRD step 2 rule b_to_c",
				"agent_changed beta->gamma step 2",
				"agent_handoff beta->gamma step 3 rule b_to_c",
				"state_changed THIRD->DONE step 3 rule c_done",
				"agent_handoff gamma->watch step 3 rule c_done",
				"completed -> step 3 outcome DONE",
			},
		},
		{
			name: "re-entry changes state, not agent",
			agents: map[string][]reply{
				"alpha": {ok("next", nil)}, "beta": {ok("stay", nil), ok("next", nil)}, "gamma": {ok("unknown", nil)},
			},
			want: []string{
				"state_changed ->FIRST step 0",
				"state_changed FIRST->SECOND step 1 rule a_to_b",
				"agent_changed alpha->beta step 1",
				"agent_handoff alpha->beta step 2 rule a_to_b",
				"state_changed SECOND->SECOND step 2 rule b_self",
				"state_changed SECOND->THIRD step 3 rule b_to_c",
				"agent_changed beta->gamma step 3",
				"agent_handoff beta->gamma step 4 rule b_to_c",
				"failed -> step 4",
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
				if e.InstanceID != res.ID || e.Workflow != "chain" {
					t.Errorf("event %d: got instance %q workflow %q, want %s and chain", k, e.InstanceID, e.Workflow, res.ID)
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
