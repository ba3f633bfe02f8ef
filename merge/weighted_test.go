package merge_test

import (
	"math"
	"testing"

	"github.com/batonhq/baton/merge"
)

// TestDecide_WeightedVote works the weights (expertise 0.5, confidence 0.3, accuracy 0.2) through by hand
// (weight = 0.5*expertise + 0.3*confidence + 0.2*accuracy):
//
// "majority overturned" declares
//
//	lead   {expertise 1.0, accuracy 1.0}, replies A with confidence 1.0:
//	       0.5*1.0 + 0.3*1.0 + 0.2*1.0 = 0.50 + 0.30 + 0.20 = 1.00
//	junior {expertise 0.2, accuracy 0.1}, replies B with confidence 0.3:
//	       0.5*0.2 + 0.3*0.3 + 0.2*0.1 = 0.10 + 0.09 + 0.02 = 0.21
//	temp   {expertise 0.3, accuracy 0.5}, replies B with confidence 0.5:
//	       0.5*0.3 + 0.3*0.5 + 0.2*0.5 = 0.15 + 0.15 + 0.10 = 0.40
//
// so A totals 1.00 and B 0.21 + 0.40 = 0.61: A wins although two of the
// three replies chose B.
//
// "travel" uses the travel voters:
//
//	flight A, confidence 0.7: 0.45 + 0.21 + 0.16 = 0.82
//	hotel  B, confidence 0.9: 0.30 + 0.27 + 0.14 = 0.71
//	car    B, confidence 0.6: 0.20 + 0.18 + 0.18 = 0.56
//
// so B totals 1.27 and beats A's 0.82.
func TestDecide_WeightedVote(t *testing.T) {
	staff := map[string]merge.Voter{
		"lead":   {Expertise: 1, Accuracy: 1},
		"junior": {Expertise: 0.2, Accuracy: 0.1},
		"temp":   {Expertise: 0.3, Accuracy: 0.5},
	}
	// 0.5*0.2 = 0.1, 0.5*0.4 = 0.2 and 0.5*0.6 = 0.3 exactly as floats, but
	// 0.1 + 0.2 = 0.30000000000000004: a tie only up to rounding.
	rounding := map[string]merge.Voter{"a": {Expertise: 0.2}, "b": {Expertise: 0.4}, "c": {Expertise: 0.6}}
	tests := []struct {
		decideCase
		weights map[string]float64
	}{
		{decideCase{"majority overturned", merge.WeightedVote,
			[]merge.Reply{rc("lead", "A", 1), rc("junior", "B", 0.3), rc("temp", "B", 0.5)}, staff,
			"A", true, true, map[string]float64{"A": 1, "B": 0.61}},
			map[string]float64{"lead": 1, "junior": 0.21, "temp": 0.40}},
		{decideCase{"travel", merge.WeightedVote,
			[]merge.Reply{rc("flight", "A", 0.7), rc("hotel", "B", 0.9), rc("car", "B", 0.6)}, travel,
			"B", true, true, map[string]float64{"A": 0.82, "B": 1.27}},
			map[string]float64{"flight": 0.82, "hotel": 0.71, "car": 0.56}},
		{decideCase{"agreement", merge.WeightedVote,
			[]merge.Reply{rc("flight", "A", 0.7), rc("hotel", "A", 0.9)}, travel,
			"A", true, false, map[string]float64{"A": 1.53}},
			map[string]float64{"flight": 0.82, "hotel": 0.71}},
		{decideCase{"exact tie: unresolved", merge.WeightedVote,
			[]merge.Reply{rc("a", "X", 0.5), rc("b", "Y", 0.5)}, nil,
			"", false, true, map[string]float64{"X": 0.15, "Y": 0.15}},
			map[string]float64{"a": 0.15, "b": 0.15}},
		{decideCase{"tie up to rounding: unresolved", merge.WeightedVote,
			[]merge.Reply{r("a", "X"), r("b", "X"), r("c", "Y")}, rounding,
			"", false, true, map[string]float64{"X": 0.3, "Y": 0.3}},
			map[string]float64{"a": 0.1, "b": 0.2, "c": 0.3}},
		{decideCase{"a tie below the top does not matter", merge.WeightedVote,
			[]merge.Reply{rc("a", "X", 0.5), rc("b", "Y", 0.5), rc("c", "Z", 1)}, nil,
			"Z", true, true, map[string]float64{"X": 0.15, "Y": 0.15, "Z": 0.3}},
			map[string]float64{"a": 0.15, "b": 0.15, "c": 0.3}},
		{decideCase{"an abstention is weighed and listed but not counted", merge.WeightedVote,
			[]merge.Reply{rc("flight", "", 0.7), rc("hotel", "B", 0.9), rc("car", "A", 0.6)}, travel,
			"B", true, true, map[string]float64{"A": 0.56, "B": 0.71}},
			map[string]float64{"flight": 0.82, "hotel": 0.71, "car": 0.56}},
		{decideCase{"undeclared agent weighs its confidence only", merge.WeightedVote,
			[]merge.Reply{rc("intern", "A", 1), rc("car", "B", 0)}, travel,
			"B", true, true, map[string]float64{"A": 0.3, "B": 0.38}},
			map[string]float64{"intern": 0.3, "car": 0.38}},
		{decideCase{"out-of-range and NaN confidences are clamped", merge.WeightedVote,
			[]merge.Reply{rc("a", "X", 7), rc("b", "Y", -1), rc("c", "Y", math.NaN())}, nil,
			"X", true, true, map[string]float64{"X": 0.3, "Y": 0}},
			map[string]float64{"a": 0.3, "b": 0, "c": 0}},
		{decideCase{"a lone option weighing nothing still decides", merge.WeightedVote,
			[]merge.Reply{rc("a", "X", 0)}, nil,
			"X", true, false, map[string]float64{"X": 0}},
			map[string]float64{"a": 0}},
		{decideCase{"options weighing nothing tie", merge.WeightedVote,
			[]merge.Reply{rc("a", "X", 0), rc("b", "Y", 0)}, nil,
			"", false, true, map[string]float64{"X": 0, "Y": 0}},
			map[string]float64{"a": 0, "b": 0}},
		{decideCase{"every reply abstains", merge.WeightedVote,
			[]merge.Reply{rc("flight", "", 1), rc("car", "", 1)}, travel,
			"", false, false, map[string]float64{}},
			map[string]float64{"flight": 0.91, "car": 0.68}},
	}
	cases := make([]decideCase, len(tests))
	for i, tc := range tests {
		cases[i] = tc.decideCase
	}
	runDecideCases(t, cases)
	for _, tc := range tests {
		t.Run(tc.name+"/weights", func(t *testing.T) {
			d, err := merge.Decide(tc.strategy, tc.replies, tc.voters)
			if err != nil {
				t.Fatalf("Decide: got error %v, want nil", err)
			}
			if !sameFloats(d.Weights, tc.weights) {
				t.Errorf("Weights: got %v, want %v", d.Weights, tc.weights)
			}
		})
	}
}

func TestWeight(t *testing.T) {
	tests := []struct {
		name       string
		voter      merge.Voter
		confidence float64
		want       float64
	}{
		{"zero voter, no confidence", merge.Voter{}, 0, 0},
		{"full marks", merge.Voter{Expertise: 1, Accuracy: 1}, 1, 1},
		{"expertise only", merge.Voter{Expertise: 1}, 0, 0.5},
		{"confidence only", merge.Voter{}, 1, 0.3},
		{"accuracy only", merge.Voter{Accuracy: 1}, 0, 0.2},
		{"flight, 0.7", travel["flight"], 0.7, 0.82},
		{"level does not weigh", merge.Voter{Level: 9, Expertise: 0.5, Accuracy: 0.5}, 0.5, 0.5},
		{"values above 1 clamp to 1", merge.Voter{Expertise: 3, Accuracy: 2}, 1.5, 1},
		{"negative values clamp to 0", merge.Voter{Expertise: -1, Accuracy: -0.5}, -2, 0},
		{"NaN counts as 0", merge.Voter{Expertise: math.NaN(), Accuracy: 1}, math.NaN(), 0.2},
		{"infinities clamp", merge.Voter{Expertise: math.Inf(1), Accuracy: math.Inf(-1)}, math.Inf(1), 0.8},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := merge.Weight(tc.voter, tc.confidence); math.Abs(got-tc.want) > 1e-12 {
				t.Errorf("Weight: got %v, want %v", got, tc.want)
			}
		})
	}
}
