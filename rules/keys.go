package rules

import "slices"

// KeyTable lists the keys one section of a workflow file allows.
type KeyTable struct {
	Required []string
	Optional []string
}

// Keys returns the keys the loader allows in each section of a workflow
// file: "workflow" (the top level), "agent", "state", "retry", "backoff",
// "wait", "foreach", "join", "limits", "rule", and an agent's "a2a", "mcp",
// "llm" and "price". Any other key is a load error. The JSON Schema of the
// format is tested against these tables, so the two cannot drift apart.
func Keys() map[string]KeyTable {
	table := func(k keySpec) KeyTable {
		return KeyTable{Required: slices.Clone(k.required), Optional: slices.Clone(k.optional)}
	}
	return map[string]KeyTable{
		"workflow": table(topKeys),
		"agent":    table(agentKeys),
		"state":    table(stateKeys),
		"retry":    table(retryKeys),
		"backoff":  table(backoffKeys),
		"wait":     table(waitKeys),
		"foreach":  table(foreachKeys),
		"join":     table(joinKeys),
		"limits":   table(limitKeys),
		"rule":     table(ruleKeys),
		"a2a":      table(a2aKeys),
		"mcp":      table(mcpKeys),
		"llm":      table(llmKeys),
		"price":    table(priceKeys),
	}
}
