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
	try := func(cmd handoff.Command, recent ...string) {
		if err := v.Validate(cmd, recent); err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println("ok", cmd.From, "->", cmd.To)
	}
	search := handoff.Command{From: "bc", To: "rag", Reason: handoff.ReasonCapabilityMatch, Task: "search the docs", Payload: map[string]any{handoff.CapabilityKey: "rag_search"}}
	try(search)
	try(handoff.Command{From: "bc", To: "rg", Reason: handoff.ReasonClarification, Task: "ask"})
	try(handoff.Command{From: "bc", To: "bc", Reason: handoff.ReasonClarification, Task: "ask"})
	try(handoff.Command{From: "bc", To: "supervisor", Reason: handoff.ReasonErrorRecovery, Task: "help"})
	try(search, "rag", "bc", "rag")
	// Output:
	// ok bc -> rag
	// handoff: refused bc -> rg (target_exists): target agent "rg" not found (did you mean "rag"?)
	// handoff: refused bc -> bc (not_self): cannot hand off to self
	// handoff: refused bc -> supervisor (system_agent): cannot hand off to system agent "supervisor" (only "supervisor" may)
	// handoff: refused bc -> rag (loop): potential hand-off loop: "rag" already received 2 of the last 5 hand-offs (limit 2)
}
