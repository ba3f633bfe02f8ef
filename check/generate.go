package check

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/scenario"
)

// generator draws random replies, inputs and signal data for one workflow
// (and the children its workflow states run): triggers the rules name,
// results built from the declarations and from the literals the conditions
// compare with.
type generator struct {
	agents   []string
	triggers map[string][]string // by agent: the triggers an agent may report
	schemas  map[string]*rules.Schema
	pools    map[string]map[string][]any // by root (an agent, "input", a wait state): field -> literals
	timeout  map[string]time.Duration    // by agent: past this delay every state of it has timed out
	kinds    map[string][]string         // by agent: error kinds its states' retry policies name
	rejects  map[string]bool             // agents every state of which a hand-off enters
	hasRules map[string]bool             // agents some rule reads
	lists    map[string]map[string]bool  // by agent: undeclared result fields a foreach state lists
	input    *rules.Schema
	length   int // replies drawn per agent and run
}

func newGenerator(w *rules.Workflow) *generator {
	g := &generator{triggers: map[string][]string{}, schemas: map[string]*rules.Schema{},
		pools: map[string]map[string][]any{}, timeout: map[string]time.Duration{}, kinds: map[string][]string{},
		rejects: map[string]bool{}, hasRules: map[string]bool{}, lists: map[string]map[string]bool{}, input: w.Input}
	var family []*rules.Workflow
	var walk func(w *rules.Workflow)
	walk = func(w *rules.Workflow) {
		if slices.Contains(family, w) {
			return
		}
		family = append(family, w)
		for _, s := range w.States {
			if s.Child != nil && s.Child.Target != nil {
				walk(s.Child.Target)
			}
		}
	}
	walk(w)
	maxSteps := 0
	for _, fw := range family {
		maxSteps = max(maxSteps, fw.Limits.MaxSteps)
		c := newChecker(fw)
		c.walk()
		for _, a := range fw.Agents {
			if !slices.Contains(g.agents, a.ID) {
				g.agents = append(g.agents, a.ID)
				g.schemas[a.ID] = a.Result
				g.rejects[a.ID] = true
			}
		}
		for a, ts := range agentTriggers(fw) {
			for _, t := range ts {
				if !slices.Contains(g.triggers[a], t) {
					g.triggers[a] = append(g.triggers[a], t)
				}
			}
		}
		for _, s := range fw.States {
			agent := s.Agent
			if s.Foreach != nil {
				agent = s.Foreach.Agent
			}
			for _, a := range append([]string{agent}, s.Agents...) {
				if a == "" {
					continue
				}
				if d := max(s.Timeout, s.Heartbeat); d > 0 {
					g.timeout[a] = max(g.timeout[a], d)
				}
				for _, k := range s.Retry.On {
					if !slices.Contains(g.kinds[a], k) {
						g.kinds[a] = append(g.kinds[a], k)
					}
				}
				if !c.handoffIn[s.Name] || s.Agent == "" {
					g.rejects[a] = false
				}
				if ag, ok := fw.Agent(a); ok && (ag.Kind() == rules.KindMCP || ag.Kind() == rules.KindLLM) {
					g.rejects[a] = false // a tool or a model call never refuses a hand-off
				}
			}
		}
		g.foreachLists(fw)
		for _, r := range fw.Rules {
			g.hasRules[r.From] = true
			if r.Condition == nil {
				continue
			}
			root := r.From
			for _, at := range atoms(parseCondition(r.Condition.Source).f, nil) {
				path := at.subj.path
				if len(path) != 2 {
					continue
				}
				key := ""
				switch path[0] {
				case "result":
					key = root
				case "input":
					key = "input"
				case "error":
					if path[1] == "kind" {
						for _, l := range at.lits {
							if s, ok := l.(string); ok && !slices.Contains(g.kinds[root], s) {
								g.kinds[root] = append(g.kinds[root], s)
							}
						}
					}
					continue
				default:
					continue
				}
				if g.pools[key] == nil {
					g.pools[key] = map[string][]any{}
				}
				g.pools[key][path[1]] = append(g.pools[key][path[1]], at.lits...)
				if at.subj.hasDef {
					g.pools[key][path[1]] = append(g.pools[key][path[1]], at.subj.def)
				}
			}
		}
	}
	g.length = min(maxSteps+4, 200)
	return g
}

// replies draws n of an agent's replies for one run: mostly a trigger its rules
// name with a result, and with 10% each a failure, a timeout or a
// rejection.
func (g *generator) replies(rng *rand.Rand, agent string, n int) []scenario.Reply {
	out := make([]scenario.Reply, 0, n)
	for range n {
		out = append(out, g.reply(rng, agent))
	}
	return out
}

func (g *generator) reply(rng *rand.Rand, agent string) scenario.Reply {
	failure := func() scenario.Reply {
		kinds := append([]string{"error"}, g.kinds[agent]...)
		return scenario.Reply{Error: "explore: failure", Kind: pick(rng, kinds), Retryable: rng.IntN(10) < 7}
	}
	// An agent whose rules name only the engine's outcomes can only fail.
	onlyFails := len(g.triggers[agent]) == 0 && g.hasRules[agent]
	usual := func() scenario.Reply {
		if onlyFails {
			return failure()
		}
		return scenario.Reply{Trigger: g.trigger(rng, agent), Result: g.result(rng, agent)}
	}
	x := rng.Float64()
	switch {
	case x < 0.1:
		return failure()
	case x < 0.2 && g.timeout[agent] > 0:
		r := usual()
		r.Delay = g.timeout[agent] + time.Second
		return r
	case x < 0.3 && g.rejects[agent]:
		return scenario.Reply{Reject: "explore: refused"}
	}
	return usual()
}

func (g *generator) trigger(rng *rand.Rand, agent string) string {
	if ts := g.triggers[agent]; len(ts) > 0 {
		return pick(rng, ts)
	}
	return "done"
}

func (g *generator) result(rng *rand.Rand, agent string) map[string]any {
	out := g.data(rng, g.schemas[agent], g.pools[agent])
	for _, f := range sortedKeys(g.lists[agent]) {
		if _, declared := g.schemas[agent].Field(f); !declared {
			out[f] = value(rng, rules.TypeList, nil)
		}
	}
	return out
}

// foreachLists finds the result fields a foreach state's items come from:
// `items: result.F` reads the result that entered the state, and `items:
// context.K` the context a rule entering it merged from `result.F`. An
// agent's result is drawn with such a field as a list of 0 to 5 items.
func (g *generator) foreachLists(w *rules.Workflow) {
	for _, s := range w.States {
		if s.Foreach == nil || s.Foreach.Items == nil {
			continue
		}
		items := exprPath(s.Foreach.Items.Source)
		if len(items) != 2 {
			continue
		}
		for _, r := range w.Rules {
			if r.Next != s.Name {
				continue
			}
			field := ""
			switch items[0] {
			case "result":
				field = items[1]
			case "context":
				for _, c := range r.Context {
					if p := exprPath(c.Expr.Source); c.Key == items[1] && len(p) == 2 && p[0] == "result" {
						field = p[1]
					}
				}
			}
			if field == "" {
				continue
			}
			if g.lists[r.From] == nil {
				g.lists[r.From] = map[string]bool{}
			}
			g.lists[r.From][field] = true
		}
	}
}

// data draws a map for a declaration, with the fields conditions read
// even when undeclared; an optional or undeclared field is missing one
// time in five.
func (g *generator) data(rng *rand.Rand, s *rules.Schema, pool map[string][]any) map[string]any {
	out := map[string]any{}
	declared := map[string]bool{}
	if s != nil {
		for _, f := range s.Fields {
			declared[f.Name] = true
			if f.Optional && rng.IntN(5) == 0 {
				continue
			}
			out[f.Name] = value(rng, f.Type, pool[f.Name])
		}
	}
	names := make([]string, 0, len(pool))
	for k := range pool {
		if !declared[k] {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	for _, k := range names {
		if rng.IntN(5) != 0 {
			out[k] = value(rng, rules.TypeAny, pool[k])
		}
	}
	return out
}

// value draws a value of a type: one of the literals, a neighbour, zero or
// empty, or a small random one.
func value(rng *rand.Rand, typ string, lits []any) any {
	var cands []any
	switch typ {
	case rules.TypeInt, rules.TypeNumber:
		for _, v := range numbers(lits, typ == rules.TypeInt) {
			cands = append(cands, v.v)
		}
		cands = append(cands, rng.IntN(100))
	case rules.TypeString:
		for _, v := range strs(lits) {
			cands = append(cands, v.v)
		}
	case rules.TypeBool:
		cands = []any{true, false}
	case rules.TypeList:
		n := rng.IntN(6)
		list := make([]any, 0, n)
		for i := range n {
			list = append(list, "item"+strconv.Itoa(i))
		}
		return list
	case rules.TypeMap:
		return map[string]any{}
	default:
		if len(lits) == 0 {
			return pick(rng, []any{"", "x", 0, 1, true, false})
		}
		for _, v := range anyValues(lits) {
			cands = append(cands, v.v)
		}
	}
	return cands[rng.IntN(len(cands))]
}

func pick[T any](rng *rand.Rand, xs []T) T { return xs[rng.IntN(len(xs))] }
