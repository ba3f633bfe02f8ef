package merge

import "math"

// tieTolerance is the relative difference below which two weighted totals
// are a tie: sums of the same weights in another grouping may differ in the
// last bits, and such a difference must not decide a vote.
const tieTolerance = 1e-9

// tally is one option's score: its number of votes, or its total weight.
type tally struct {
	option string
	score  float64
}

// addVote counts a vote of weight w for option in ts, which keeps the
// options in the order their first vote was counted. A handful of options is
// found by a linear scan, which beats hashing; index, when not nil, takes
// over for larger reply sets.
func addVote(ts []tally, index map[string]int, option string, w float64) []tally {
	if index != nil {
		if i, ok := index[option]; ok {
			ts[i].score += w
			return ts
		}
		index[option] = len(ts)
	} else {
		for i := range ts {
			if ts[i].option == option {
				ts[i].score += w
				return ts
			}
		}
	}
	return append(ts, tally{option: option, score: w})
}

// voteMap returns the tallies as Decision.Votes.
func voteMap(ts []tally) map[string]float64 {
	m := make(map[string]float64, len(ts))
	for _, v := range ts {
		m[v.option] = v.score
	}
	return m
}

// leader returns the option with the greatest score, and whether another
// option's score equals it up to rounding. Every option is compared with the
// maximum itself, so the tolerance cannot hide a tie behind a chain of
// near-equal scores. ts must not be empty.
func leader(ts []tally) (top tally, tie bool) {
	top = ts[0]
	for _, v := range ts[1:] {
		if v.score > top.score {
			top = v
		}
	}
	for _, v := range ts {
		if v.option != top.option && near(v.score, top.score) {
			return top, true
		}
	}
	return top, false
}

// near reports whether two totals are equal up to rounding.
func near(a, b float64) bool {
	scale := math.Max(1, math.Max(math.Abs(a), math.Abs(b)))
	return math.Abs(a-b) <= tieTolerance*scale
}
