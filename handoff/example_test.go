package handoff_test

import (
	"context"
	"fmt"

	"github.com/batonhq/baton/bus"
	"github.com/batonhq/baton/handoff"
	"github.com/batonhq/baton/registry"
)

// The life of a hand-off: a command is validated, sent as a HANDOFF
// message, received and accepted by its target, and kept as a record.
func ExampleManager_Handoff() {
	reg, _ := registry.FromSpecs([]registry.Agent{
		{ID: "customer", Type: "support"},
		{ID: "seller", Type: "merchant", Capabilities: []string{"approve_refund"}},
	})
	b := bus.New()
	defer b.Close()
	for _, id := range reg.IDs() {
		_ = b.Register(id)
	}
	mgr, _ := handoff.NewManager(reg, b)
	defer mgr.Close()

	ctx := context.Background()
	cmd, _ := handoff.NewCommand("customer", "seller", handoff.ReasonRule, "seller must approve the refund",
		handoff.WithTask("Approve refund for order 12345"),
		handoff.WithContextData(map[string]any{"order_id": "12345", "amount": 50}),
		handoff.WithConstraints(map[string]any{"refund_method": "original_payment"}),
		handoff.WithInstance("refund", "inst-1", 2))
	if _, err := mgr.Handoff(ctx, cmd); err != nil {
		fmt.Println(err)
		return
	}

	msg, _ := b.ReceiveWait(ctx, "seller")
	d, _ := handoff.Unpack(msg)
	fmt.Println(msg.Type, d.Task.From, "->", msg.To, "step", d.Task.Step, d.Task.IdempotencyKey)
	fmt.Println(d.Task.Description, d.Task.Context["order_id"], d.Task.Constraints["refund_method"])
	_ = mgr.Accept(ctx, d.HandoffID)

	for _, r := range mgr.History("inst-1") {
		fmt.Println(r.From, "->", r.To, r.Reason, r.Status, r.ContextBytes, "bytes of context")
	}
	// Output:
	// HANDOFF customer -> seller step 2 inst-1:2
	// Approve refund for order 12345 12345 original_payment
	// customer -> seller rule accepted 32 bytes of context
}

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
