// Package graph holds the graph algorithms that the workflow linter and the
// checker both need, written once.
package graph

// Components returns the strongly connected components (Tarjan's
// algorithm) of the part of a graph reachable from roots, visited in the
// order of roots; succ gives a node's successors. Each component lists its
// nodes in the order they left the stack; the components come in the order
// they were completed (a component after every component it leads to).
func Components(roots []string, succ func(string) []string) [][]string {
	index, low := map[string]int{}, map[string]int{}
	onStack := map[string]bool{}
	var stack []string
	var out [][]string
	next := 0
	var visit func(v string)
	visit = func(v string) {
		index[v], low[v] = next, next
		next++
		stack = append(stack, v)
		onStack[v] = true
		for _, u := range succ(v) {
			if _, seen := index[u]; !seen {
				visit(u)
				low[v] = min(low[v], low[u])
			} else if onStack[u] {
				low[v] = min(low[v], index[u])
			}
		}
		if low[v] == index[v] {
			var comp []string
			for {
				u := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				onStack[u] = false
				comp = append(comp, u)
				if u == v {
					break
				}
			}
			out = append(out, comp)
		}
	}
	for _, r := range roots {
		if _, seen := index[r]; !seen {
			visit(r)
		}
	}
	return out
}
