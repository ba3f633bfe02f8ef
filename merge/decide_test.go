package merge_test

import (
	"errors"
	"math"
	"reflect"
	"sync"
	"testing"

	"github.com/batonhq/baton/merge"
)

// travel declares the branch agents of a flight/hotel/car parallel state in
// `agents` order.
var travel = map[string]merge.Voter{
	"flight": {Level: 0, Expertise: 0.9, Accuracy: 0.8},
	"hotel":  {Level: 1, Expertise: 0.6, Accuracy: 0.7},
	"car":    {Level: 2, Expertise: 0.4, Accuracy: 0.9},
}

type decideCase struct {
	name     string
	strategy merge.Strategy
	replies  []merge.Reply
	voters   map[string]merge.Voter
	option   string
	resolved bool
	conflict bool
	votes    map[string]float64
}

func r(agent, option string) merge.Reply { return merge.Reply{Agent: agent, Option: option} }

func rp(agent, option string, priority int) merge.Reply {
	return merge.Reply{Agent: agent, Option: option, Priority: priority}
}

func ro(agent, option string, order int) merge.Reply {
	return merge.Reply{Agent: agent, Option: option, Order: order}
}

func rc(agent, option string, confidence float64) merge.Reply {
	return merge.Reply{Agent: agent, Option: option, Confidence: confidence}
}

func runDecideCases(t *testing.T, cases []decideCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d, err := merge.Decide(tc.strategy, tc.replies, tc.voters)
			if err != nil {
				t.Fatalf("Decide: got error %v, want nil", err)
			}
			if d.Strategy != tc.strategy {
				t.Errorf("Strategy: got %q, want %q", d.Strategy, tc.strategy)
			}
			if d.Option != tc.option {
				t.Errorf("Option: got %q, want %q", d.Option, tc.option)
			}
			if d.Resolved != tc.resolved {
				t.Errorf("Resolved: got %v, want %v", d.Resolved, tc.resolved)
			}
			if d.Conflict != tc.conflict {
				t.Errorf("Conflict: got %v, want %v", d.Conflict, tc.conflict)
			}
			if !sameFloats(d.Votes, tc.votes) {
				t.Errorf("Votes: got %v, want %v", d.Votes, tc.votes)
			}
			if tc.strategy != merge.WeightedVote && d.Weights != nil {
				t.Errorf("Weights: got %v, want nil outside weighted_vote", d.Weights)
			}
		})
	}
}

// sameFloats compares vote maps up to float rounding; an empty map equals
// another empty map.
func sameFloats(got, want map[string]float64) bool {
	if len(got) != len(want) {
		return false
	}
	for k, w := range want {
		g, ok := got[k]
		if !ok || math.Abs(g-w) > 1e-12 {
			return false
		}
	}
	return true
}

func TestDecide_Priority(t *testing.T) {
	runDecideCases(t, []decideCase{
		{"agreement", merge.Priority, []merge.Reply{rp("a", "X", 2), rp("b", "X", 10), rp("c", "X", 0)}, nil,
			"X", true, false, map[string]float64{"X": 3}},
		{"highest priority wins a disagreement", merge.Priority, []merge.Reply{rp("a", "Y", 0), rp("b", "X", 1), rp("c", "Y", 10)}, nil,
			"X", true, true, map[string]float64{"X": 1, "Y": 2}},
		{"top ranks agree over a lower dissent", merge.Priority, []merge.Reply{rp("a", "X", 2), rp("b", "X", 2), rp("c", "Y", 5)}, nil,
			"X", true, true, map[string]float64{"X": 2, "Y": 1}},
		{"top ranks disagree: unresolved", merge.Priority, []merge.Reply{rp("a", "X", 2), rp("b", "Y", 2), rp("c", "X", 5)}, nil,
			"", false, true, map[string]float64{"X": 2, "Y": 1}},
		{"zero is normal and beats 6", merge.Priority, []merge.Reply{rp("a", "X", 0), rp("b", "Y", 6)}, nil,
			"X", true, true, map[string]float64{"X": 1, "Y": 1}},
		{"negative is normal and beats 6", merge.Priority, []merge.Reply{rp("a", "X", -3), rp("b", "Y", 6)}, nil,
			"X", true, true, map[string]float64{"X": 1, "Y": 1}},
		{"zero ties with explicit normal", merge.Priority, []merge.Reply{rp("a", "X", 0), rp("b", "Y", 5)}, nil,
			"", false, true, map[string]float64{"X": 1, "Y": 1}},
		{"an abstention at the top is ignored", merge.Priority, []merge.Reply{rp("a", "", 1), rp("b", "Y", 5), rp("c", "X", 10)}, nil,
			"Y", true, true, map[string]float64{"X": 1, "Y": 1}},
		{"one reply", merge.Priority, []merge.Reply{rp("a", "X", 10)}, nil,
			"X", true, false, map[string]float64{"X": 1}},
		{"every reply abstains", merge.Priority, []merge.Reply{rp("a", "", 1), rp("b", "", 2)}, nil,
			"", false, false, map[string]float64{}},
	})
}

func TestDecide_First(t *testing.T) {
	runDecideCases(t, []decideCase{
		{"agreement", merge.First, []merge.Reply{ro("a", "X", 1), ro("b", "X", 0)}, nil,
			"X", true, false, map[string]float64{"X": 2}},
		{"earliest wins a disagreement", merge.First, []merge.Reply{ro("a", "X", 2), ro("b", "Y", 0), ro("c", "X", 1)}, nil,
			"Y", true, true, map[string]float64{"X": 2, "Y": 1}},
		{"an earlier abstention is skipped", merge.First, []merge.Reply{ro("a", "", 0), ro("b", "Y", 1), ro("c", "X", 2)}, nil,
			"Y", true, true, map[string]float64{"X": 1, "Y": 1}},
		{"equal orders fall back to agent name", merge.First, []merge.Reply{ro("b", "X", 0), ro("a", "Y", 0)}, nil,
			"Y", true, true, map[string]float64{"X": 1, "Y": 1}},
		{"one reply", merge.First, []merge.Reply{ro("a", "X", 7)}, nil,
			"X", true, false, map[string]float64{"X": 1}},
		{"every reply abstains", merge.First, []merge.Reply{ro("a", "", 0)}, nil,
			"", false, false, map[string]float64{}},
	})
}

func TestDecide_Hierarchy(t *testing.T) {
	sameLevel := map[string]merge.Voter{"a": {Level: 1}, "b": {Level: 1}, "c": {Level: 2}}
	negative := map[string]merge.Voter{"a": {Level: -1}, "b": {Level: 0}}
	runDecideCases(t, []decideCase{
		{"agreement", merge.Hierarchy, []merge.Reply{r("flight", "X"), r("hotel", "X"), r("car", "X")}, travel,
			"X", true, false, map[string]float64{"X": 3}},
		{"highest level wins a disagreement", merge.Hierarchy, []merge.Reply{r("car", "Y"), r("hotel", "Y"), r("flight", "X")}, travel,
			"X", true, true, map[string]float64{"X": 1, "Y": 2}},
		{"an abstaining top agent is skipped", merge.Hierarchy, []merge.Reply{r("flight", ""), r("hotel", "Y"), r("car", "X")}, travel,
			"Y", true, true, map[string]float64{"X": 1, "Y": 1}},
		{"an undeclared agent ranks below declared ones", merge.Hierarchy, []merge.Reply{r("intern", "X"), r("car", "Y")}, travel,
			"Y", true, true, map[string]float64{"X": 1, "Y": 1}},
		{"undeclared agents disagreeing: unresolved", merge.Hierarchy, []merge.Reply{r("u1", "X"), r("u2", "Y")}, travel,
			"", false, true, map[string]float64{"X": 1, "Y": 1}},
		{"nil voters: everyone undeclared but agreeing", merge.Hierarchy, []merge.Reply{r("u1", "X"), r("u2", "X")}, nil,
			"X", true, false, map[string]float64{"X": 2}},
		{"same level disagreeing: unresolved", merge.Hierarchy, []merge.Reply{r("a", "X"), r("b", "Y"), r("c", "X")}, sameLevel,
			"", false, true, map[string]float64{"X": 2, "Y": 1}},
		{"negative level counts as 0", merge.Hierarchy, []merge.Reply{r("a", "X"), r("b", "Y")}, negative,
			"", false, true, map[string]float64{"X": 1, "Y": 1}},
		{"one reply", merge.Hierarchy, []merge.Reply{r("car", "X")}, travel,
			"X", true, false, map[string]float64{"X": 1}},
		{"every reply abstains", merge.Hierarchy, []merge.Reply{r("flight", ""), r("car", "")}, travel,
			"", false, false, map[string]float64{}},
	})
}

func TestDecide_Majority(t *testing.T) {
	runDecideCases(t, []decideCase{
		{"agreement", merge.Majority, []merge.Reply{r("a", "X"), r("b", "X"), r("c", "X")}, nil,
			"X", true, false, map[string]float64{"X": 3}},
		{"two of three", merge.Majority, []merge.Reply{r("a", "Y"), r("b", "X"), r("c", "Y")}, nil,
			"Y", true, true, map[string]float64{"X": 1, "Y": 2}},
		{"three ways: unresolved", merge.Majority, []merge.Reply{r("a", "X"), r("b", "Y"), r("c", "Z")}, nil,
			"", false, true, map[string]float64{"X": 1, "Y": 1, "Z": 1}},
		{"half is not a majority", merge.Majority, []merge.Reply{r("a", "X"), r("b", "X"), r("c", "Y"), r("d", "Y")}, nil,
			"", false, true, map[string]float64{"X": 2, "Y": 2}},
		{"plurality is not a majority", merge.Majority, []merge.Reply{r("a", "X"), r("b", "X"), r("c", "Y"), r("d", "Z"), r("e", "W")}, nil,
			"", false, true, map[string]float64{"X": 2, "Y": 1, "Z": 1, "W": 1}},
		{"abstentions are not votes cast", merge.Majority, []merge.Reply{r("a", "X"), r("b", "X"), r("c", "Y"), r("d", "")}, nil,
			"X", true, true, map[string]float64{"X": 2, "Y": 1}},
		{"one vote among abstentions", merge.Majority, []merge.Reply{r("a", ""), r("b", "X"), r("c", "")}, nil,
			"X", true, false, map[string]float64{"X": 1}},
		{"one reply", merge.Majority, []merge.Reply{r("a", "X")}, nil,
			"X", true, false, map[string]float64{"X": 1}},
		{"every reply abstains", merge.Majority, []merge.Reply{r("a", ""), r("b", "")}, nil,
			"", false, false, map[string]float64{}},
	})
}

func TestDecide_Unanimous(t *testing.T) {
	runDecideCases(t, []decideCase{
		{"agreement", merge.Unanimous, []merge.Reply{r("a", "X"), r("b", "X"), r("c", "X")}, nil,
			"X", true, false, map[string]float64{"X": 3}},
		{"one dissent: unresolved", merge.Unanimous, []merge.Reply{r("a", "X"), r("b", "X"), r("c", "Y")}, nil,
			"", false, true, map[string]float64{"X": 2, "Y": 1}},
		{"an abstention does not break unanimity", merge.Unanimous, []merge.Reply{r("a", "X"), r("b", ""), r("c", "X")}, nil,
			"X", true, false, map[string]float64{"X": 2}},
		{"one reply", merge.Unanimous, []merge.Reply{r("a", "X")}, nil,
			"X", true, false, map[string]float64{"X": 1}},
		{"every reply abstains", merge.Unanimous, []merge.Reply{r("a", "")}, nil,
			"", false, false, map[string]float64{}},
	})
}

func TestDecide_Errors(t *testing.T) {
	tests := []struct {
		name     string
		strategy merge.Strategy
		replies  []merge.Reply
		sentinel error
		msg      string
	}{
		{"unknown strategy", "vote", []merge.Reply{r("a", "X")}, merge.ErrUnknownStrategy,
			`merge: unknown strategy "vote": want priority, first, hierarchy, majority, unanimous, weighted_vote`},
		{"strategy names are case sensitive", "Majority", []merge.Reply{r("a", "X")}, merge.ErrUnknownStrategy,
			`merge: unknown strategy "Majority": want priority, first, hierarchy, majority, unanimous, weighted_vote`},
		{"empty strategy before no replies", "", nil, merge.ErrUnknownStrategy,
			`merge: unknown strategy "": want priority, first, hierarchy, majority, unanimous, weighted_vote`},
		{"nil replies", merge.Majority, nil, merge.ErrNoReplies, "merge: no replies"},
		{"empty replies", merge.WeightedVote, []merge.Reply{}, merge.ErrNoReplies, "merge: no replies"},
		{"reply without agent", merge.First, []merge.Reply{r("a", "X"), r("", "Y")}, merge.ErrInvalidReply,
			"merge: reply 1: agent is required"},
		{"second reply from an agent", merge.Unanimous, []merge.Reply{r("b", "X"), r("a", "X"), r("c", "X"), r("a", "Y")}, merge.ErrInvalidReply,
			`merge: reply 3 ("a"): agent already replied`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, err := merge.Decide(tc.strategy, tc.replies, nil)
			if !errors.Is(err, tc.sentinel) {
				t.Fatalf("error: got %v, want one matching %v", err, tc.sentinel)
			}
			if err.Error() != tc.msg {
				t.Errorf("message: got %q, want %q", err.Error(), tc.msg)
			}
			if !reflect.DeepEqual(d, merge.Decision{}) {
				t.Errorf("decision: got %+v, want the zero Decision", d)
			}
		})
	}
}

func TestDecide_TypedErrors(t *testing.T) {
	_, err := merge.Decide("vote", []merge.Reply{r("a", "X")}, nil)
	var se *merge.StrategyError
	if !errors.As(err, &se) || se.Strategy != "vote" {
		t.Errorf("StrategyError: got %#v, want Strategy %q", err, "vote")
	}
	_, err = merge.Decide(merge.First, []merge.Reply{r("a", "X"), r("b", "Y"), r("a", "Z")}, nil)
	var re *merge.ReplyError
	if !errors.As(err, &re) {
		t.Fatalf("ReplyError: got %#v, want a *merge.ReplyError", err)
	}
	if re.Index != 2 || re.Agent != "a" || re.Field != "agent" {
		t.Errorf("ReplyError: got index %d agent %q field %q, want 2 %q %q", re.Index, re.Agent, re.Field, "a", "agent")
	}
}

// TestDecide_ResultIndependentOfReplyOrder runs every permutation of each
// reply set through every strategy and expects one Decision.
func TestDecide_ResultIndependentOfReplyOrder(t *testing.T) {
	close3 := map[string]merge.Voter{"a": {Expertise: 0.2}, "b": {Expertise: 0.4}, "c": {Expertise: 0.6}}
	sets := []struct {
		name    string
		replies []merge.Reply
		voters  map[string]merge.Voter
	}{
		{"travel split", []merge.Reply{
			{Agent: "flight", Option: "A", Confidence: 0.7, Priority: 2, Order: 2},
			{Agent: "hotel", Option: "B", Confidence: 0.9, Priority: 2, Order: 0},
			{Agent: "car", Option: "B", Confidence: 0.6, Priority: 5, Order: 1},
			{Agent: "rail", Option: "", Confidence: 1, Priority: 1, Order: 3},
		}, travel},
		{"equal orders and ranks", []merge.Reply{
			{Agent: "e", Option: "X", Order: 1}, {Agent: "d", Option: "Y", Order: 1},
			{Agent: "c", Option: "X", Order: 1}, {Agent: "b", Option: "Z", Order: 1},
			{Agent: "a", Option: "Y", Order: 1},
		}, nil},
		{"float sums that round differently", []merge.Reply{r("a", "X"), r("b", "X"), r("c", "Y")}, close3},
	}
	for _, set := range sets {
		for _, s := range merge.Strategies() {
			t.Run(set.name+"/"+string(s), func(t *testing.T) {
				want, err := merge.Decide(s, set.replies, set.voters)
				if err != nil {
					t.Fatalf("Decide: got error %v, want nil", err)
				}
				permute(set.replies, func(p []merge.Reply) {
					got, err := merge.Decide(s, p, set.voters)
					if err != nil {
						t.Fatalf("Decide(%v): got error %v, want nil", p, err)
					}
					if !reflect.DeepEqual(got, want) {
						t.Fatalf("Decide(%v): got %+v, want %+v", p, got, want)
					}
				})
			})
		}
	}
}

// permute calls f with every permutation of a copy of rs (Heap's algorithm).
func permute(rs []merge.Reply, f func([]merge.Reply)) {
	p := append([]merge.Reply(nil), rs...)
	var gen func(k int)
	gen = func(k int) {
		if k <= 1 {
			f(p)
			return
		}
		for i := 0; i < k; i++ {
			gen(k - 1)
			if k%2 == 0 {
				p[i], p[k-1] = p[k-1], p[i]
			} else {
				p[0], p[k-1] = p[k-1], p[0]
			}
		}
	}
	gen(len(p))
}

func TestDecide_LeavesArgumentsAlone(t *testing.T) {
	replies := []merge.Reply{r("c", "X"), r("a", "Y"), r("b", "X")}
	before := append([]merge.Reply(nil), replies...)
	for _, s := range merge.Strategies() {
		if _, err := merge.Decide(s, replies, travel); err != nil {
			t.Fatalf("Decide(%s): got error %v, want nil", s, err)
		}
	}
	if !reflect.DeepEqual(replies, before) {
		t.Errorf("replies: got %v, want %v (unchanged)", replies, before)
	}
}

func TestDecide_ManyReplies(t *testing.T) {
	// More replies than Decide sorts on the stack.
	var replies []merge.Reply
	for i := range 25 {
		opt := "X"
		if i%3 == 0 {
			opt = "Y"
		}
		replies = append(replies, merge.Reply{Agent: string(rune('a' + i)), Option: opt, Order: 25 - i})
	}
	d, err := merge.Decide(merge.Majority, replies, nil)
	if err != nil {
		t.Fatalf("Decide: got error %v, want nil", err)
	}
	if d.Option != "X" || d.Votes["X"] != 16 || d.Votes["Y"] != 9 {
		t.Errorf("got option %q votes %v, want X with X:16 Y:9", d.Option, d.Votes)
	}
	d, err = merge.Decide(merge.First, replies, nil)
	if err != nil || d.Option != "Y" {
		t.Errorf("first: got %q, %v, want %q (agent y, i = 24, arrived first)", d.Option, err, "Y")
	}
}

func TestDecide_ConcurrentUse(t *testing.T) {
	replies := []merge.Reply{rc("flight", "A", 0.7), rc("hotel", "B", 0.9), rc("car", "B", 0.6)}
	want, err := merge.Decide(merge.WeightedVote, replies, travel)
	if err != nil {
		t.Fatalf("Decide: got error %v, want nil", err)
	}
	var wg sync.WaitGroup
	results := make([]merge.Decision, 16)
	for i := range results {
		wg.Go(func() {
			results[i], _ = merge.Decide(merge.WeightedVote, replies, travel)
		})
	}
	wg.Wait()
	for i, got := range results {
		if !reflect.DeepEqual(got, want) {
			t.Errorf("goroutine %d: got %+v, want %+v", i, got, want)
		}
	}
}

func TestStrategies(t *testing.T) {
	want := []merge.Strategy{"priority", "first", "hierarchy", "majority", "unanimous", "weighted_vote"}
	got := merge.Strategies()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Strategies: got %v, want %v", got, want)
	}
	got[0] = "mutated"
	if again := merge.Strategies(); again[0] != merge.Priority {
		t.Errorf("Strategies after mutating a result: got %v, want %v", again, want)
	}
	for _, s := range want {
		if !s.Valid() {
			t.Errorf("%q.Valid(): got false, want true", s)
		}
	}
	for _, s := range []merge.Strategy{"", "vote", "weighted", "Weighted_Vote", " first", "timestamp"} {
		if s.Valid() {
			t.Errorf("%q.Valid(): got true, want false", s)
		}
	}
}
