package rules_test

import (
	"errors"
	"fmt"

	"github.com/batonhq/baton/rules"
)

func ExampleLoad() {
	w, err := rules.Load("testdata/valid/refund.yaml")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(w.Name, "starts in", w.Initial)
	for _, s := range w.States {
		fmt.Printf("%s owner=%q terminal=%v\n", s.Name, w.Owner(s.Name), s.Terminal)
	}
	// Output:
	// refund starts in VALIDATING
	// VALIDATING owner="customer" terminal=false
	// REVIEWING owner="seller" terminal=false
	// REFUNDING owner="payment" terminal=false
	// NOTIFYING owner="notification" terminal=false
	// COMPLETED owner="" terminal=true
	// REJECTED owner="" terminal=true
}

func ExampleParse_errors() {
	src := []byte(`workflow: refund
initial: START
agents:
  customer: {type: support}
states:
  START: {agent: customer}
  DONE: {terminal: true}
rules:
  - id: done
    from: customer
    trigger: validated
    condition: reslt.ok == true
    nxt: DONE
`)
	_, err := rules.Parse("refund.yaml", src)
	var le *rules.LoadError
	if errors.As(err, &le) {
		for _, d := range le.Diagnostics {
			fmt.Println(d)
		}
	}
	fmt.Println(errors.Is(err, rules.ErrInvalidWorkflow))
	// Output:
	// refund.yaml:12:16: condition: unknown name reslt (did you mean "result"?)
	// refund.yaml:13:5: unknown key "nxt" (did you mean "next"?)
	// true
}

func ExampleWorkflow_Match() {
	w, err := rules.Load("testdata/valid/refund.yaml")
	if err != nil {
		fmt.Println(err)
		return
	}
	env := &rules.Env{
		Result:  map[string]any{"approval": "REJECTED"},
		Input:   map[string]any{"order_id": "12345"},
		Context: map[string]any{},
	}
	m, err := w.Match("REVIEWING", w.Owner("REVIEWING"), "reviewed", env)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("rule %s: %s -> %s (to %s)\n", m.Rule.ID, "REVIEWING", m.Rule.Next, m.Rule.To)
	for _, ev := range m.Tried {
		fmt.Printf("  tried %s: %v\n", ev.Rule.ID, ev.Result)
	}

	_, err = w.Match("REVIEWING", "seller", "shrugged", env)
	fmt.Println(err)
	// Output:
	// rule rejected: REVIEWING -> NOTIFYING (to notification)
	//   tried approved: false
	//   tried rejected: true
	// rules: no rule matched in state REVIEWING (agent seller, trigger shrugged): no rule has this agent and trigger
}
