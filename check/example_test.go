package check_test

import (
	"context"
	"fmt"

	"github.com/batonhq/baton/check"
	"github.com/batonhq/baton/rules"
)

func ExampleCheck() {
	w, err := rules.Parse("review.yaml", []byte(`
workflow: review
initial: REVIEWING
agents:
  reviewer: {result: {score: int}}
states:
  REVIEWING: {agent: reviewer, timeout: 1m}
  GOOD: {terminal: true}
  BAD: {terminal: true}
rules:
  - {id: good, from: reviewer, trigger: reviewed, condition: result.score > 7, next: GOOD}
  - {id: bad, from: reviewer, trigger: reviewed, condition: result.score < 7, next: BAD}
  - {id: failed, from: reviewer, trigger: [error, timeout], next: BAD}
`))
	if err != nil {
		panic(err)
	}
	r := check.Check(w)
	for _, f := range r.All() {
		fmt.Println(f)
	}
	fmt.Println(r.Summary)
	// Output:
	// review.yaml:11:5: error: REVIEWING: trigger reviewed with result.score == 7 matches no rule
	// states 3/3 reachable, outcomes [GOOD BAD], worst case 1 run
}

func ExampleExplore() {
	w, err := rules.Parse("review.yaml", []byte(`
workflow: review
initial: REVIEWING
agents:
  reviewer: {result: {score: int}}
states:
  REVIEWING: {agent: reviewer, timeout: 1m}
  GOOD: {terminal: true}
  BAD: {terminal: true}
rules:
  - {id: good, from: reviewer, trigger: reviewed, condition: result.score > 7, next: GOOD}
  - {id: bad, from: reviewer, trigger: reviewed, condition: result.score < 7, next: BAD}
  - {id: failed, from: reviewer, trigger: [error, timeout], next: BAD}
`))
	if err != nil {
		panic(err)
	}
	rep, err := check.Explore(context.Background(), w, check.ExploreOptions{Runs: 1000, Seed: 1})
	if err != nil {
		panic(err)
	}
	v := rep.Violation
	fmt.Println(v.Property, v.State, v.Trigger, v.Replies)
	// Output:
	// no_rule_matched REVIEWING reviewed 1
}
