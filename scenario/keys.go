package scenario

import "slices"

// KeyTable lists the keys one section of a scenario file allows.
type KeyTable struct {
	Required []string
	Optional []string
}

// "$schema" names the JSON Schema an editor checks the file against; the
// loader ignores its value.
var (
	scenarioKeys    = KeyTable{Required: []string{"scenario", "workflow"}, Optional: []string{"$schema", "input", "agents", "signals", "expect"}}
	replyKeys       = KeyTable{Optional: []string{"trigger", "result", "error", "retryable", "kind", "reject", "handoff", "select", "delay", "usage"}}
	usageKeys       = KeyTable{Optional: []string{"input_tokens", "output_tokens", "cost", "model"}}
	handoffKeys     = KeyTable{Required: []string{"to"}, Optional: []string{"reason", "explanation", "task", "payload", "return_control"}}
	signalKeys      = KeyTable{Required: []string{"signal"}, Optional: []string{"data", "delay"}}
	expectKeys      = KeyTable{Optional: []string{"status", "outcome", "states", "handoffs", "error", "context", "steps", "condition_errors", "property", "usage"}}
	expectUsageKeys = KeyTable{Optional: []string{"tokens", "cost"}}
)

// Keys returns the keys the loader allows in each section of a scenario
// file: "scenario" (the top level), "reply", "usage" (a reply's usage),
// "handoff" (a reply's dynamic hand-off), "signal", "expect" and
// "expect_usage" (expect.usage). Any other key is an error. The JSON Schema of the
// format is tested against these tables.
func Keys() map[string]KeyTable {
	table := func(k KeyTable) KeyTable {
		return KeyTable{Required: slices.Clone(k.Required), Optional: slices.Clone(k.Optional)}
	}
	return map[string]KeyTable{
		"scenario":     table(scenarioKeys),
		"reply":        table(replyKeys),
		"handoff":      table(handoffKeys),
		"signal":       table(signalKeys),
		"expect":       table(expectKeys),
		"usage":        table(usageKeys),
		"expect_usage": table(expectUsageKeys),
	}
}
