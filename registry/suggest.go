package registry

import "strings"

// nearest returns the candidate closest to name by edit distance, or "" when
// even the closest one differs too much to be a likely typo: more than a
// third of the longer name's length, and never more than 3 edits. A
// candidate equal to name apart from letter case always wins. Ties go to the
// earlier candidate.
func nearest(name string, candidates []string) string {
	best, bestDist := "", -1
	for _, c := range candidates {
		if c == name {
			continue
		}
		if strings.EqualFold(c, name) {
			return c
		}
		d := distance(name, c)
		if d > maxEdits(name, c) {
			continue
		}
		if bestDist < 0 || d < bestDist {
			best, bestDist = c, d
		}
	}
	return best
}

func maxEdits(a, b string) int {
	n := max(len([]rune(a)), len([]rune(b)))
	return min(3, max(1, n/3))
}

// distance is the optimal-string-alignment edit distance between a and b,
// counted in runes: insertions, deletions, substitutions and transpositions
// of neighbours each cost one edit.
func distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}
