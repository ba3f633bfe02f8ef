package merge

// Strategy names a merge strategy as written in a workflow's `merge:` key.
type Strategy string

// The merge strategies; the package comment describes each.
const (
	// Priority: the reply with the highest priority wins (rank 1 critical... 10 low; 0 means normal, 5); equal top priorities with different
	// options cannot be decided.
	Priority Strategy = "priority"
	// First: the earliest reply (lowest Order) wins; it always decides.
	First Strategy = "first"
	// Hierarchy: the reply of the highest-level agent (lowest Voter.Level,
	// the state's `agents` order) wins.
	Hierarchy Strategy = "hierarchy"
	// Majority: the option chosen by more than half of the votes cast wins;
	// otherwise the strategy cannot decide.
	Majority Strategy = "majority"
	// Unanimous: every vote cast chooses the same option, or the strategy
	// cannot decide.
	Unanimous Strategy = "unanimous"
	// WeightedVote: the weighted vote; each reply weighs 0.5*expertise
	// + 0.3*confidence + 0.2*accuracy and the option with the greatest
	// total wins; a tie at the top cannot be decided.
	WeightedVote Strategy = "weighted_vote"
)

// strategies is the canonical order, shared by Strategies and error texts.
var strategies = [...]Strategy{Priority, First, Hierarchy, Majority, Unanimous, WeightedVote}

// Valid reports whether s is one of the strategies Decide knows.
func (s Strategy) Valid() bool {
	switch s {
	case Priority, First, Hierarchy, Majority, Unanimous, WeightedVote:
		return true
	}
	return false
}

// Strategies returns every valid strategy, in documentation order. The
// slice is the caller's to keep or modify.
func Strategies() []Strategy {
	out := make([]Strategy, len(strategies))
	copy(out, strategies[:])
	return out
}
