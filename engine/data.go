package engine

import (
	"github.com/batonhq/baton/internal/jsonvalue"
	"github.com/batonhq/baton/registry"
)

// MaxData is the largest start input or agent result, as JSON, the engine
// takes: the size every transport carries.
const MaxData = 1 << 20

// checkData is the door every piece of data passes once, where it enters
// the engine (a start input, an agent's result): it must be what every
// store and transport can encode — JSON values with finite numbers and
// valid UTF-8, nesting at most jsonvalue.MaxDepth deep — and at most
// MaxData bytes. The error names the field.
func checkData(root string, m map[string]any) *InputError {
	if err := jsonvalue.Check(m, MaxData); err != nil {
		return &InputError{Field: root + err.Field, Reason: err.Reason}
	}
	return nil
}

// checkOutcome checks the data of an agent's outcome: its result and, for a
// dynamic hand-off, its payload.
func checkOutcome(out registry.Outcome) *InputError {
	if err := checkData("result", out.Result); err != nil {
		return err
	}
	if out.Handoff != nil {
		return checkData("handoff.payload", out.Handoff.Payload)
	}
	return nil
}
