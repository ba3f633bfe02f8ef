package engine_test

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/registry"
)

// vote is one branch's reply in merge.yaml.
type vote struct {
	agent  string
	result map[string]any
}

// pick is a result choosing option, with extra key/value pairs.
func pick(option string, kv ...any) map[string]any {
	m := map[string]any{"option": option}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	return m
}

// abstain is a result without an option.
var abstain = map[string]any{"note": "no opinion"}

// castVotes answers for the branches in order, one simulated second apart,
// so that the join waits three seconds for three votes.
func castVotes(t *testing.T, r *simRun, votes []vote) {
	t.Helper()
	for _, v := range votes {
		r.sim.Advance(time.Second)
		if err := r.answer(v.agent, registry.Outcome{Trigger: "voted", Result: v.result}, nil); err != nil {
			t.Fatalf("answer %s: %v", v.agent, err)
		}
	}
}

// decisionOf returns result.decision as a rule copied it into the context.
func decisionOf(t *testing.T, res engine.Result) map[string]any {
	t.Helper()
	d, ok := res.Context["decision"].(map[string]any)
	if !ok {
		t.Fatalf("got context decision %T %v, want a map", res.Context["decision"], res.Context["decision"])
	}
	return d
}

// wantVotes compares a decision's votes with want, up to rounding.
func wantVotes(t *testing.T, got any, want map[string]float64) {
	t.Helper()
	m, _ := got.(map[string]any)
	if len(m) != len(want) {
		t.Errorf("got votes %v, want %v", got, want)
		return
	}
	for option, w := range want {
		g, _ := m[option].(float64)
		if math.Abs(g-w) > 1e-9 {
			t.Errorf("got votes %v, want %v", got, want)
			return
		}
	}
}

func TestParallel_Merge(t *testing.T) {
	tests := []struct {
		trigger string // lead's trigger, which picks the state of the strategy
		name    string
		votes   []vote // in arrival order
		state   string // AGREED, RESOLVED or CONFLICT
		option  string
		tally   map[string]float64
	}{
		{"priority", "agree", []vote{{"x", pick("A")}, {"y", pick("A")}, {"z", pick("A")}}, "AGREED", "A", map[string]float64{"A": 3}},
		{"priority", "higher priority wins", []vote{{"x", pick("A", "priority", "high")}, {"y", pick("B")}, {"z", pick("B")}}, "RESOLVED", "A", map[string]float64{"A": 1, "B": 2}},
		{"priority", "numeric priority", []vote{{"x", pick("A")}, {"y", pick("B", "priority", 1)}, {"z", pick("A", "priority", "low")}}, "RESOLVED", "B", map[string]float64{"A": 2, "B": 1}},
		{"priority", "tie at the top", []vote{{"x", pick("A", "priority", "high")}, {"y", pick("B", "priority", "high")}, {"z", pick("C")}}, "CONFLICT", "", map[string]float64{"A": 1, "B": 1, "C": 1}},

		{"first", "agree", []vote{{"y", pick("A")}, {"x", pick("A")}, {"z", pick("A")}}, "AGREED", "A", map[string]float64{"A": 3}},
		{"first", "earliest wins", []vote{{"z", pick("C")}, {"x", pick("A")}, {"y", pick("A")}}, "RESOLVED", "C", map[string]float64{"A": 2, "C": 1}},
		{"first", "all abstain", []vote{{"x", abstain}, {"y", abstain}, {"z", abstain}}, "CONFLICT", "", map[string]float64{}},

		{"hierarchy", "agree", []vote{{"z", pick("A")}, {"y", pick("A")}, {"x", pick("A")}}, "AGREED", "A", map[string]float64{"A": 3}},
		{"hierarchy", "first agent wins", []vote{{"z", pick("C")}, {"y", pick("B")}, {"x", pick("A")}}, "RESOLVED", "A", map[string]float64{"A": 1, "B": 1, "C": 1}},
		{"hierarchy", "abstainer passes", []vote{{"x", abstain}, {"z", pick("C")}, {"y", pick("B")}}, "RESOLVED", "B", map[string]float64{"B": 1, "C": 1}},
		{"hierarchy", "all abstain", []vote{{"x", abstain}, {"y", abstain}, {"z", abstain}}, "CONFLICT", "", map[string]float64{}},

		{"majority", "agree with an abstention", []vote{{"x", pick("A")}, {"y", pick("A")}, {"z", abstain}}, "AGREED", "A", map[string]float64{"A": 2}},
		{"majority", "two of three", []vote{{"x", pick("B")}, {"y", pick("A")}, {"z", pick("A")}}, "RESOLVED", "A", map[string]float64{"A": 2, "B": 1}},
		{"majority", "no majority", []vote{{"x", pick("A")}, {"y", pick("B")}, {"z", pick("C")}}, "CONFLICT", "", map[string]float64{"A": 1, "B": 1, "C": 1}},

		{"unanimous", "agree", []vote{{"x", pick("A")}, {"y", pick("A")}, {"z", pick("A")}}, "AGREED", "A", map[string]float64{"A": 3}},
		{"unanimous", "one dissent", []vote{{"x", pick("A")}, {"y", pick("A")}, {"z", pick("B")}}, "CONFLICT", "", map[string]float64{"A": 2, "B": 1}},

		// x weighs 0.5*0.9 + 0.3*confidence + 0.2*0.9; y and z 0.5*0.5 +
		// 0.3*confidence + 0.2*0.5. A missing confidence counts as 1.
		{"weighted_vote", "agree", []vote{{"x", pick("A")}, {"y", pick("A")}, {"z", pick("A")}}, "AGREED", "A", map[string]float64{"A": 0.93 + 0.65 + 0.65}},
		{"weighted_vote", "expertise beats headcount", []vote{{"x", pick("A", "confidence", 1.0)}, {"y", pick("B", "confidence", 0.0)}, {"z", pick("B", "confidence", 0.0)}}, "RESOLVED", "A", map[string]float64{"A": 0.93, "B": 0.70}},
		{"weighted_vote", "confidence tips it", []vote{{"x", pick("A", "confidence", 0.0)}, {"y", pick("B", "confidence", 1.0)}, {"z", abstain}}, "RESOLVED", "B", map[string]float64{"A": 0.63, "B": 0.65}},
		{"weighted_vote", "tie", []vote{{"x", abstain}, {"y", pick("A", "confidence", 0.5)}, {"z", pick("B", "confidence", 0.5)}}, "CONFLICT", "", map[string]float64{"A": 0.5, "B": 0.5}},
	}
	prefix := map[string]string{"weighted_vote": "weighted"}
	for _, tt := range tests {
		t.Run(tt.trigger+"/"+tt.name, func(t *testing.T) {
			r := newSimRun(t, "merge.yaml", map[string][]reply{"lead": {ok(tt.trigger, nil)}})
			inst := r.begin(nil)
			castVotes(t, r, tt.votes)
			res := inst.Result()
			wantCompleted(t, res, tt.state)

			d := decisionOf(t, res)
			resolved := tt.state != "CONFLICT"
			disagreed := len(tt.tally) > 1
			if d["strategy"] != tt.trigger || d["option"] != tt.option || d["resolved"] != resolved || d["conflict"] != disagreed {
				t.Errorf("got decision %v, want strategy %s option %q resolved %v conflict %v", d, tt.trigger, tt.option, resolved, disagreed)
			}
			wantVotes(t, d["votes"], tt.tally)
			if resolved && res.Context["option"] != tt.option {
				t.Errorf("got context option %v, want %q from result.decision.option", res.Context["option"], tt.option)
			}

			h := history(t, inst)
			p := tt.trigger
			if q, ok := prefix[p]; ok {
				p = q
			}
			rule := map[string]string{"AGREED": "_agreed", "RESOLVED": "_resolved", "CONFLICT": "_conflict"}[tt.state]
			if got, want := fired(h), []string{p, p + rule}; !slices.Equal(got, want) {
				t.Errorf("got rules %v, want %v", got, want)
			}
			outcome := "joined"
			if !resolved {
				outcome = "conflict"
			}
			if joined := entries(h, record.KindJoined); len(joined) != 1 || joined[0].Trigger != outcome {
				t.Errorf("got joined entries %+v, want one %s", joined, outcome)
			}

			m := r.eng.Metrics()
			want := engine.Metrics{Resolutions: 1, JoinWait: 3 * time.Second}
			if !resolved {
				want.Conflicts = 1
			}
			if disagreed {
				want.Disagreements = 1
			}
			if m.Resolutions != want.Resolutions || m.Conflicts != want.Conflicts || m.Disagreements != want.Disagreements || m.JoinWait != want.JoinWait {
				t.Errorf("got metrics %+v, want %+v", m, want)
			}
		})
	}
}

func TestParallel_Merge_WeightedVoteWeights(t *testing.T) {
	r := newSimRun(t, "merge.yaml", map[string][]reply{"lead": {ok("weighted_vote", nil)}})
	inst := r.begin(nil)
	castVotes(t, r, []vote{{"x", pick("A", "confidence", 0.5)}, {"y", abstain}, {"z", pick("B", "confidence", 2.0)}})
	res := inst.Result()
	wantCompleted(t, res, "RESOLVED")
	// Abstainers are weighed too; a confidence above 1 counts as 1.
	wantVotes(t, decisionOf(t, res)["weights"], map[string]float64{"x": 0.78, "y": 0.65, "z": 0.65})
}

func TestParallel_Merge_Partial(t *testing.T) {
	tests := []struct {
		name        string
		votes       []vote
		state       string
		option      string
		results     []string
		resolutions int64
	}{
		{"decided on what arrived", []vote{{"x", pick("A")}, {"y", pick("A")}}, "PARTIAL", "A", []string{"x", "y"}, 1},
		{"undecided is conflict", []vote{{"x", pick("A")}, {"y", pick("B")}}, "CONFLICT", "", []string{"x", "y"}, 1},
		{"nothing to merge", nil, "PARTIAL", "", nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newSimRun(t, "merge.yaml", map[string][]reply{"lead": {ok("partial_vote", nil)}})
			inst := r.begin(nil)
			castVotes(t, r, tt.votes)
			wantRunning(t, inst, "PARTIAL_VOTE")
			r.runUntil(finished(inst)) // z never answers: the join times out
			res := inst.Result()
			wantCompleted(t, res, tt.state)
			if got := mapKeys(t, res.Context["results"]); !slices.Equal(got, tt.results) {
				t.Errorf("got results from %v, want %v", got, tt.results)
			}
			d := decisionOf(t, res)
			if tt.resolutions == 0 {
				if len(d) != 0 {
					t.Errorf("got decision %v, want none without replies", d)
				}
			} else if d["option"] != tt.option {
				t.Errorf("got option %v, want %q", d["option"], tt.option)
			}
			if m := r.eng.Metrics(); m.Resolutions != tt.resolutions {
				t.Errorf("got %d resolutions, want %d", m.Resolutions, tt.resolutions)
			}
		})
	}
}

func TestParallel_Merge_MetricsAddUp(t *testing.T) {
	r := newSimRun(t, "merge.yaml", map[string][]reply{
		"lead": {ok("unanimous", nil), ok("unanimous", nil), ok("majority", nil)},
	})
	runs := []struct {
		votes []vote
		state string
	}{
		{[]vote{{"x", pick("A")}, {"y", pick("A")}, {"z", pick("A")}}, "AGREED"},
		{[]vote{{"x", pick("A")}, {"y", pick("A")}, {"z", pick("B")}}, "CONFLICT"},
		{[]vote{{"x", pick("A")}, {"y", pick("A")}, {"z", pick("B")}}, "RESOLVED"},
	}
	for _, run := range runs {
		inst := r.begin(nil)
		castVotes(t, r, run.votes)
		wantCompleted(t, inst.Result(), run.state)
	}
	m := r.eng.Metrics()
	if m.Resolutions != 3 || m.Conflicts != 1 || m.Disagreements != 2 || m.JoinWait != 9*time.Second {
		t.Errorf("got %+v, want 3 resolutions, 1 conflict, 2 disagreements and 9s of join wait", m)
	}
	if m.ResolutionMax > m.ResolutionTime {
		t.Errorf("got the longest resolution %v above their total %v", m.ResolutionMax, m.ResolutionTime)
	}
}
