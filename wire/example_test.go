package wire_test

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/transport"
	"github.com/batonhq/baton/wire"
)

// An agent's side of the protocol: read the work from the transport, do it,
// and send back the report ReportOf builds.
func ExampleDecode() {
	work := []byte(`{
		"message_id": "6f1c1f3e-8d4a-4c52-9a57-2d1f0b6f1a10",
		"message_type": "HANDOFF",
		"from_agent": "customer",
		"to_agent": "seller",
		"priority": "NORMAL",
		"content": {
			"action": "run",
			"task_description": "review the refund request",
			"input": {"order": "1234"},
			"context": {"amount": 120},
			"previous_result": {"reason": "damaged"},
			"constraints": {},
			"reason": "rule",
			"explanation": "refunds need the seller's approval"
		},
		"metadata": {
			"workflow": "refund", "version": 1, "instance_id": "inst-42", "step": 3, "attempt": 1,
			"state": "review", "handoff_id": "ho-3", "idempotency_key": "inst-42:3",
			"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
		},
		"requires_ack": true,
		"timestamp": "2026-11-24T05:00:00Z"
	}`)
	var m transport.Message
	if err := json.Unmarshal(work, &m); err != nil {
		fmt.Println(err)
		return
	}
	task, err := wire.Decode(&m)
	if err != nil {
		fmt.Println(err) // a *wire.FieldError naming the field
		return
	}
	fmt.Printf("%s runs step %d of %s for %s (%s: %s)\n",
		task.Agent, task.Step, task.InstanceID, task.From, task.Kind, task.Reason)

	var (
		out    registry.Outcome
		runErr error
	)
	if task.Context["amount"].(float64) > 500 { // numbers arrive as float64
		runErr = registry.Reject("amount above my approval limit")
	} else {
		out = registry.Outcome{Trigger: "reviewed", Result: map[string]any{"approval": "APPROVED"}}
	}
	report, err := json.Marshal(wire.ReportOf(task, out, runErr))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(string(report))
	// Output:
	// seller runs step 3 of inst-42 for customer (rule: refunds need the seller's approval)
	// {"instance_id":"inst-42","step":3,"agent":"seller","trigger":"reviewed","result":{"approval":"APPROVED"}}
}

// The engine's side: read a report, turn it into what a Go handler would
// have returned, and answer.
func ExampleDecodeReport() {
	for _, body := range []string{
		`{"instance_id": "inst-42", "step": 3, "agent": "seller", "error": {"message": "rate limited", "retryable": true, "kind": "rate_limited"}}`,
		`{"instance_id": "inst-42", "step": 3, "agent": "seller", "trigger": "reviewed", "reject": "queue busy"}`,
	} {
		r, err := wire.DecodeReport([]byte(body))
		var fe *wire.FieldError
		if errors.As(err, &fe) {
			answer, _ := json.Marshal(wire.Answer{Code: wire.CodeInvalid, Message: err.Error()})
			fmt.Printf("%s (field %q)\n", answer, fe.Field)
			continue
		}
		_, runErr := r.Outcome()
		fmt.Println(runErr, registry.IsRetryable(runErr), registry.KindOf(runErr))
	}
	// Output:
	// rate limited true rate_limited
	// {"ok":false,"code":"invalid","message":"wire: report has more than one of trigger, error, reject and handoff"} (field "report")
}
