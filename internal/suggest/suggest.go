// Package suggest finds the likely intended name behind a typo, for the
// "did you mean" hints of the loaders and the registry.
package suggest

import (
	"strings"
	"unicode/utf8"
)

// Nearest returns the candidate nearest to name, or "" when none is near
// enough to be a likely typo: at most one edit between short names, two when
// the longer of the pair has five runes or more, and any difference of case
// alone. Ties go to the alphabetically first candidate.
func Nearest(name string, candidates []string) string {
	best, bestDist := "", -1
	n := utf8.RuneCountInString(name)
	lower := strings.ToLower(name)
	for _, c := range candidates {
		if c == name {
			continue
		}
		limit := 1
		if max(n, utf8.RuneCountInString(c)) >= 5 {
			limit = 2
		}
		d := Distance(lower, strings.ToLower(c), limit)
		if d > limit {
			continue
		}
		if bestDist < 0 || d < bestDist || (d == bestDist && c < best) {
			best, bestDist = c, d
		}
	}
	return best
}

// Distance is the optimal string alignment distance (Levenshtein plus
// transposition of adjacent runes), in runes; any value above limit is
// reported as limit+1, which lets it give up early.
func Distance(a, b string, limit int) int {
	ra, rb := []rune(a), []rune(b)
	if len(ra)-len(rb) > limit || len(rb)-len(ra) > limit || len(ra) > 64 || len(rb) > 64 {
		if a == b {
			return 0
		}
		return limit + 1 // too far apart, or too long to be a typo worth a search
	}
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	prevBest := 0
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		best := cur[0]
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
			best = min(best, cur[j])
		}
		if best > limit && prevBest >= limit {
			// Every alignment already costs more than limit: later rows only
			// grow from this one, or (by a transposition) from the previous
			// one plus one.
			return limit + 1
		}
		prevBest = best
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}
