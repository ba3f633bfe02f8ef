package merge

// Decision is the merge result, exposed to rules as result.decision.
type Decision struct {
	// Strategy is the strategy that decided.
	Strategy Strategy
	// Option is the winning option, "" when unresolved.
	Option string
	// Votes maps each option chosen by at least one reply to its number of
	// replies, or for weighted_vote to its total weight. Abstentions are
	// not in it.
	Votes map[string]float64
	// Conflict reports that the replies did not all choose the same option.
	// A conflict may still be resolved by the strategy.
	Conflict bool
	// Resolved is false when the strategy could not decide; the engine then
	// reports the outcome `conflict`. Resolved implies Option != "".
	Resolved bool
	// Weights maps every replying agent, abstainers included, to its
	// each voter's weight (weighted_vote only, nil otherwise).
	Weights map[string]float64
}

// Map returns the decision as the plain map rules see as result.decision:
// "strategy", "option" (strings), "votes" (option -> float64), "conflict"
// and "resolved" (bools), and for weighted_vote "weights" (agent ->
// float64). Every value is a JSON-friendly type, maps are never nil, and the
// result shares nothing with d.
func (d Decision) Map() map[string]any {
	n := 5
	if d.Strategy == WeightedVote {
		n++
	}
	m := make(map[string]any, n)
	m["strategy"] = string(d.Strategy)
	m["option"] = d.Option
	m["votes"] = anyMap(d.Votes)
	m["conflict"] = d.Conflict
	m["resolved"] = d.Resolved
	if d.Strategy == WeightedVote {
		m["weights"] = anyMap(d.Weights)
	}
	return m
}

// anyMap copies a float map into the map[string]any shape that expression
// environments and JSON encoders expect.
func anyMap(src map[string]float64) map[string]any {
	out := make(map[string]any, len(src))
	for k, v := range src {
		out[k] = v
	}
	return out
}
