package engine

import (
	"github.com/batonhq/baton/internal/jsonvalue"
	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/wire"
)

// MaxData is the largest start input or agent result, as JSON, the engine
// takes: the size every transport carries, which the wire codec holds a
// report's data to as well.
const MaxData = wire.MaxReport

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
// dynamic hand-off, its payload. A wire report's data is checked by the
// codec (wire.Report.Ending) instead, in the same way.
func checkOutcome(out registry.Outcome) *InputError {
	if err := checkData("result", out.Result); err != nil {
		return err
	}
	if out.Handoff != nil {
		return checkData("handoff.payload", out.Handoff.Payload)
	}
	return nil
}
