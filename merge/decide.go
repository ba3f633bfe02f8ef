package merge

import (
	"math"
	"slices"
	"strings"
)

// Reply is one branch agent's answer.
type Reply struct {
	// Agent names the branch agent; each agent replies at most once.
	Agent string
	// Option is the option the agent chose; "" abstains: the reply counts
	// for nothing, though weighted_vote still lists its weight.
	Option string
	// Confidence is how sure the agent is, in [0, 1]; Weight clamps values
	// outside that range (NaN counts as 0). Only weighted_vote reads it.
	Confidence float64
	// Priority is the reply's rank on the workflow's priority scale (1
	// critical, 2 high, 5 normal, 10 low; lower wins); 0, like any value
	// below 1, means normal. Only the priority strategy reads it.
	Priority int
	// Order is the reply's arrival order, 0 first. Only the first strategy
	// reads it; equal orders fall back to agent name order.
	Order int
}

// Voter is what the workflow declares about a branch agent.
type Voter struct {
	// Level is the agent's rank for the hierarchy strategy, 0 the highest
	// (its position in the state's agents list); negative levels count as 0.
	Level int
	// Expertise is the agent's expertise in [0, 1].
	Expertise float64
	// Accuracy is the agent's historical accuracy in [0, 1] (weight 0.2).
	Accuracy float64
}

// normalRank is the workflow scale's `normal`, the rank of a reply that
// states no priority.
const normalRank = 5

// stackReplies is how many replies, and distinct options, Decide handles
// without allocating beyond its result.
const stackReplies = 8

// Decide merges the replies with strategy s. voters describes the branch
// agents (a missing agent has the zero Voter's expertise and accuracy and
// ranks below every declared agent in a hierarchy).
//
// It returns a *StrategyError (ErrUnknownStrategy) for an unknown strategy,
// ErrNoReplies for an empty slice, and a *ReplyError (ErrInvalidReply) for a
// reply without an agent or a second reply from the same agent. A strategy
// that cannot decide is not an error: the Decision is then unresolved.
//
// Decide does not modify its arguments, is safe for concurrent use and gives
// the same Decision for any order of the same replies.
func Decide(s Strategy, replies []Reply, voters map[string]Voter) (Decision, error) {
	if !s.Valid() {
		return Decision{}, &StrategyError{Strategy: s}
	}
	if len(replies) == 0 {
		return Decision{}, ErrNoReplies
	}
	var buf [stackReplies]Reply
	rs := buf[:0]
	if len(replies) > len(buf) {
		rs = make([]Reply, 0, len(replies))
	}
	rs = append(rs, replies...)
	// Sorting by agent makes every later step, float sums included,
	// independent of the order the replies came in.
	slices.SortFunc(rs, func(a, b Reply) int { return strings.Compare(a.Agent, b.Agent) })
	if err := checkAgents(rs, replies); err != nil {
		return Decision{}, err
	}

	d := Decision{Strategy: s}
	var tbuf [stackReplies]tally
	ts := tbuf[:0]
	var index map[string]int
	if len(rs) > stackReplies {
		index = make(map[string]int, len(rs))
	}
	if s == WeightedVote {
		d.Weights = make(map[string]float64, len(rs))
	}
	cast := 0
	for _, r := range rs {
		w := 1.0
		if s == WeightedVote {
			w = Weight(voters[r.Agent], r.Confidence)
			d.Weights[r.Agent] = w
		}
		if r.Option != "" {
			ts = addVote(ts, index, r.Option, w)
			cast++
		}
	}
	d.Votes = voteMap(ts)
	d.Conflict = len(ts) > 1
	if cast == 0 {
		return d, nil
	}

	d.Option = choose(s, rs, ts, cast, voters)
	d.Resolved = d.Option != ""
	return d, nil
}

// choose applies strategy s to the replies rs, sorted by agent, whose cast
// votes are tallied in ts; it returns "" when the strategy cannot decide.
func choose(s Strategy, rs []Reply, ts []tally, cast int, voters map[string]Voter) string {
	switch s {
	case Priority:
		return topAgreement(rs, func(r Reply) int { return rank(r.Priority) })
	case Hierarchy:
		return topAgreement(rs, func(r Reply) int { return level(voters, r.Agent) })
	case First:
		return earliest(rs)
	case Majority:
		if top, _ := leader(ts); 2*top.score > float64(cast) {
			return top.option
		}
	case Unanimous:
		if len(ts) == 1 {
			return ts[0].option
		}
	case WeightedVote:
		if top, tie := leader(ts); !tie {
			return top.option
		}
	}
	return ""
}

// checkAgents rejects a reply without an agent and a second reply from the
// same agent; sorted holds the replies sorted by agent, so duplicates are
// adjacent. The error indexes the offending reply in the caller's slice.
func checkAgents(sorted, given []Reply) error {
	if sorted[0].Agent == "" {
		for i, r := range given {
			if r.Agent == "" {
				return &ReplyError{Index: i, Field: "agent", Reason: "is required"}
			}
		}
	}
	for i := 1; i < len(sorted); i++ {
		if a := sorted[i].Agent; a == sorted[i-1].Agent {
			seen := false
			for j, r := range given {
				if r.Agent != a {
					continue
				}
				if seen {
					return &ReplyError{Index: j, Agent: a, Field: "agent", Reason: "already replied"}
				}
				seen = true
			}
		}
	}
	return nil
}

// rank places a reply's priority on the workflow scale, lower first.
func rank(p int) int {
	if p < 1 {
		return normalRank
	}
	return p
}

// level is an agent's hierarchy rank, lower first; undeclared agents come
// after every declared one.
func level(voters map[string]Voter, agent string) int {
	v, ok := voters[agent]
	switch {
	case !ok:
		return math.MaxInt
	case v.Level < 0:
		return 0
	case v.Level == math.MaxInt:
		return math.MaxInt - 1
	}
	return v.Level
}

// topAgreement returns the option of the votes with the lowest key when they
// all agree, and "" when they disagree.
func topAgreement(rs []Reply, key func(Reply) int) string {
	best, option, split := 0, "", false
	for _, r := range rs {
		if r.Option == "" {
			continue
		}
		switch k := key(r); {
		case option == "" || k < best:
			best, option, split = k, r.Option, false
		case k == best && r.Option != option:
			split = true
		}
	}
	if split {
		return ""
	}
	return option
}

// earliest returns the option of the first vote to arrive; rs is sorted by
// agent, so equal orders fall back to agent names.
func earliest(rs []Reply) string {
	var first *Reply
	for i := range rs {
		r := &rs[i]
		if r.Option != "" && (first == nil || r.Order < first.Order) {
			first = r
		}
	}
	return first.Option
}
