package merge_test

import (
	"errors"
	"fmt"

	"github.com/batonhq/baton/merge"
)

// A parallel state asked three search agents which offer to book; each
// result map carries the agent's option and confidence.
func Example() {
	voters := map[string]merge.Voter{
		"flight": {Level: 0, Expertise: 0.9, Accuracy: 0.8},
		"hotel":  {Level: 1, Expertise: 0.6, Accuracy: 0.7},
		"car":    {Level: 2, Expertise: 0.4, Accuracy: 0.9},
	}
	results := map[string]map[string]any{
		"flight": {"option": "package-A", "confidence": 0.7},
		"hotel":  {"option": "package-B", "confidence": 0.9},
		"car":    {"option": "package-B", "confidence": 0.6},
	}
	var replies []merge.Reply
	for i, agent := range []string{"flight", "hotel", "car"} {
		option, confidence := merge.OptionOf(results[agent])
		replies = append(replies, merge.Reply{Agent: agent, Option: option, Confidence: confidence, Order: i})
	}
	for _, s := range merge.Strategies() {
		d, err := merge.Decide(s, replies, voters)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%-13s option=%q resolved=%v conflict=%v\n", s, d.Option, d.Resolved, d.Conflict)
	}
	// Output:
	// priority      option="" resolved=false conflict=true
	// first         option="package-A" resolved=true conflict=true
	// hierarchy     option="package-A" resolved=true conflict=true
	// majority      option="package-B" resolved=true conflict=true
	// unanimous     option="" resolved=false conflict=true
	// weighted_vote option="package-B" resolved=true conflict=true
}

// The weighted vote: package-B's two lighter votes (0.71 + 0.56)
// outweigh package-A's single heavier one (0.82).
func ExampleDecide() {
	voters := map[string]merge.Voter{
		"flight": {Expertise: 0.9, Accuracy: 0.8},
		"hotel":  {Expertise: 0.6, Accuracy: 0.7},
		"car":    {Expertise: 0.4, Accuracy: 0.9},
	}
	d, err := merge.Decide(merge.WeightedVote, []merge.Reply{
		{Agent: "flight", Option: "package-A", Confidence: 0.7},
		{Agent: "hotel", Option: "package-B", Confidence: 0.9},
		{Agent: "car", Option: "package-B", Confidence: 0.6},
	}, voters)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s wins %.2f to %.2f\n", d.Option, d.Votes["package-B"], d.Votes["package-A"])
	fmt.Printf("weights: flight %.2f, hotel %.2f, car %.2f\n", d.Weights["flight"], d.Weights["hotel"], d.Weights["car"])
	// Output:
	// package-B wins 1.27 to 0.82
	// weights: flight 0.82, hotel 0.71, car 0.56
}

// A split the strategy cannot decide is not an error: the decision is
// unresolved, and the engine reports the outcome `conflict`.
func ExampleDecide_unresolved() {
	d, err := merge.Decide(merge.Majority, []merge.Reply{
		{Agent: "a", Option: "approve"},
		{Agent: "b", Option: "reject"},
	}, nil)
	fmt.Println(d.Resolved, d.Conflict, err)

	_, err = merge.Decide("vote", []merge.Reply{{Agent: "a", Option: "approve"}}, nil)
	fmt.Println(errors.Is(err, merge.ErrUnknownStrategy))
	// Output:
	// false true <nil>
	// true
}

func ExampleOptionOf() {
	fmt.Println(merge.OptionOf(map[string]any{"option": "refund", "confidence": 0.8}))
	fmt.Println(merge.OptionOf(map[string]any{"option": "refund"}))
	fmt.Println(merge.OptionOf(map[string]any{"option": 2, "confidence": 3}))
	fmt.Printf("%q\n", must(merge.OptionOf(map[string]any{"note": "no option"})))
	// Output:
	// refund 0.8
	// refund 1
	// 2 1
	// ""
}

func must(option string, _ float64) string { return option }

func ExampleDecision_Map() {
	d, _ := merge.Decide(merge.Unanimous, []merge.Reply{
		{Agent: "a", Option: "ship"},
		{Agent: "b", Option: "ship"},
		{Agent: "c"}, // abstains
	}, nil)
	fmt.Println(d.Map())
	// Output:
	// map[conflict:false option:ship resolved:true strategy:unanimous votes:map[ship:2]]
}

func ExampleWeight() {
	// 0.5*0.9 + 0.3*0.7 + 0.2*0.8 = 0.45 + 0.21 + 0.16
	fmt.Printf("%.2f\n", merge.Weight(merge.Voter{Expertise: 0.9, Accuracy: 0.8}, 0.7))
	// Output: 0.82
}
