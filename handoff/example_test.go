package handoff_test

import (
	"fmt"

	"github.com/batonhq/baton/handoff"
	"github.com/batonhq/baton/registry"
)

func ExampleValidator_Validate() {
	reg, _ := registry.FromSpecs([]registry.Agent{
		{ID: "bc", Capabilities: []string{"erp"}},
		{ID: "rag", Capabilities: []string{"rag_search"}},
		{ID: "supervisor", System: true},
	})
	v, _ := handoff.NewValidator(reg)
	try := func(cmd handoff.Command, recent ...handoff.Record) {
		if err := v.Validate(cmd, recent); err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println("ok", cmd.From, "->", cmd.To)
	}
	search := handoff.Command{From: "bc", To: "rag", Reason: handoff.ReasonCapabilityMatch, Task: "search the docs", Capability: "rag_search"}
	try(search)
	try(handoff.Command{From: "bc", To: "rg", Reason: handoff.ReasonClarification, Task: "ask"})
	try(handoff.Command{From: "bc", To: "bc", Reason: handoff.ReasonClarification, Task: "ask"})
	try(handoff.Command{From: "bc", To: "supervisor", Reason: handoff.ReasonErrorRecovery, Task: "help"})
	try(search, handoff.Record{To: "rag"}, handoff.Record{To: "bc"}, handoff.Record{To: "rag"})
	// Output:
	// ok bc -> rag
	// handoff: refused bc -> rg (target_exists): target agent "rg" not found (did you mean "rag"?)
	// handoff: refused bc -> bc (not_self): cannot hand off to self
	// handoff: refused bc -> supervisor (system_agent): cannot hand off to system agent "supervisor" (only "supervisor" may)
	// handoff: refused bc -> rag (loop): potential hand-off loop: "rag" already received 2 of the last 5 hand-offs (limit 2)
}

func ExampleIsCommand() {
	fromAgent := map[string]any{"type": "handoff", "to": "rag", "reason": "capability_match"}
	fmt.Println(handoff.IsCommand(fromAgent))
	fmt.Println(handoff.IsCommand(map[string]any{"type": "message"}))
	fmt.Println(handoff.IsCommand(registry.Delegation{To: "rag"}))
	// Output:
	// true
	// false
	// true
}

func ExampleNewCommand() {
	cmd, err := handoff.NewCommand("bc", "rag", handoff.ReasonCapabilityMatch,
		"query requires document search which the BC agent cannot perform",
		handoff.WithPayload(map[string]any{"search_query": "refund policy", handoff.CapabilityKey: "rag_search"}),
		handoff.WithTask("search the refund policy"),
		handoff.WithReturnControl())
	fmt.Println(cmd.To, cmd.Reason, cmd.RequiredCapability(), cmd.ReturnControl, err)
	_, err = handoff.NewCommand("bc", "", handoff.ReasonClarification, "")
	fmt.Println(err)
	// Output:
	// rag capability_match rag_search true <nil>
	// handoff: command: to is required
}
