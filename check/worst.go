package check

import (
	"slices"

	"github.com/batonhq/baton/internal/graph"
)

// worstCase bounds the agent runs of an instance. Within a strongly
// connected part of the graph every state may be entered up to its
// max_visits; a state on no cycle is entered once. The largest sum over a
// path of these parts, each visit running its agent 1 + retry.max times, is
// the bound, unless max_steps is lower: then max_steps is the bound, plus
// the one run the on_limit state makes after the hit.
func (c *checker) worstCase() WorstCase {
	w := c.w
	comps, compOf := c.components()
	weight := make([]int, len(comps))
	cyclic := make([]bool, len(comps))
	perItem := 0
	for i, comp := range comps {
		cyclic[i] = len(comp) > 1 || c.selfLoop(comp[0])
		for _, name := range comp {
			s, _ := w.State(name)
			visits := 1
			if cyclic[i] {
				visits = s.MaxVisits
			}
			weight[i] += visits * runsPerVisit(s)
			if s.Iterates() {
				perItem += visits * runsPerVisit(s)
			}
		}
	}
	// Longest path over the components, which form a DAG.
	best := make([]int, len(comps))
	done := make([]bool, len(comps))
	var longest func(i int) int
	longest = func(i int) int {
		if done[i] {
			return best[i]
		}
		done[i] = true
		m := 0
		for _, name := range comps[i] {
			for _, e := range c.succ[name] {
				if j := compOf[e.to]; j != i {
					m = max(m, longest(j))
				}
			}
		}
		best[i] = weight[i] + m
		return best[i]
	}
	wc := WorstCase{Runs: longest(compOf[w.Initial]), PerItem: perItem}
	if wc.Runs > w.Limits.MaxSteps {
		wc.Capped = true
		wc.Runs = w.Limits.MaxSteps + c.onLimitRuns()
		heaviest := -1
		for i := range comps {
			if cyclic[i] && (heaviest < 0 || weight[i] > weight[heaviest]) {
				heaviest = i
			}
		}
		if heaviest >= 0 {
			wc.Cycle = c.cycle(comps[heaviest])
		}
	}
	return wc
}

// onLimitRuns is how many runs the on_limit state makes once max_steps has
// been hit: its first run (a retry would hit the limit again).
func (c *checker) onLimitRuns() int {
	s, ok := c.w.State(c.w.Limits.OnLimit)
	if !ok {
		return 0
	}
	switch {
	case s.Parallel():
		return len(s.Agents)
	case runsPerVisit(s) > 0:
		return 1
	}
	return 0
}

func (c *checker) selfLoop(name string) bool {
	for _, e := range c.succ[name] {
		if e.to == name {
			return true
		}
	}
	return false
}

// components returns the strongly connected components of the reachable
// graph, each in file order, and the component of each state.
func (c *checker) components() ([][]string, map[string]int) {
	order := map[string]int{}
	var roots []string
	for i, s := range c.w.States {
		order[s.Name] = i
		if c.reached[s.Name] {
			roots = append(roots, s.Name)
		}
	}
	comps := graph.Components(roots, func(v string) []string {
		out := make([]string, len(c.succ[v]))
		for k, e := range c.succ[v] {
			out[k] = e.to
		}
		return out
	})
	compOf := map[string]int{}
	for k, comp := range comps {
		slices.SortFunc(comp, func(a, b string) int { return order[a] - order[b] })
		for _, u := range comp {
			compOf[u] = k
		}
	}
	return comps, compOf
}

// cycle returns a shortest cycle through the first state of comp, inside
// comp: A -> B -> A.
func (c *checker) cycle(comp []string) []string {
	in := map[string]bool{}
	for _, s := range comp {
		in[s] = true
	}
	start := comp[0]
	prev := map[string]string{}
	queue := []string{start}
	for len(queue) > 0 {
		v := queue[0]
		queue = queue[1:]
		for _, e := range c.succ[v] {
			u := e.to
			if !in[u] {
				continue
			}
			if u == start {
				path := []string{start}
				for x := v; x != start; x = prev[x] {
					path = append(path, x)
				}
				slices.Reverse(path[1:])
				return append(path, start)
			}
			if _, seen := prev[u]; !seen {
				prev[u] = v
				queue = append(queue, u)
			}
		}
	}
	return nil
}
