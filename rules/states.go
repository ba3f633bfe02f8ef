package rules

import (
	"slices"

	"go.yaml.in/yaml/v3"
)

var stateKeys = keySpec{
	optional: []string{"agent", "agents", "wait", "foreach", "workflow", "input", "terminal", "timeout", "heartbeat", "retry", "max_visits", "max_tokens", "max_cost", "join", "merge"},
}

var retryKeys = keySpec{required: []string{"max"}, optional: []string{"backoff", "on", "except"}}

var joinKeys = keySpec{optional: []string{"strategy", "quorum", "timeout", "on_partial"}}

var (
	joinStrategies  = []string{JoinAll, JoinAny, JoinMajority, JoinQuorum}
	onPartials      = []string{OnPartialProceed, OnPartialFail}
	mergeStrategies = []string{"priority", "first", "hierarchy", "majority", "unanimous", "weighted_vote"}
)

// states decodes the `states` map. Every key is registered, even one with a
// bad spec, so that references to it do not cascade into more errors.
func (l *loader) states(n *yaml.Node) {
	fs, ok := l.mapping(n, "states")
	if !ok {
		return
	}
	if len(fs.ordered) == 0 {
		l.errorf(n, "states must declare at least one state")
		return
	}
	if len(fs.ordered) > MaxStates {
		l.errorf(fs.ordered[MaxStates].key, "too many states: %d, the limit is %d", len(fs.ordered), MaxStates)
		l.overLimit = true
		return
	}
	l.noStates = false
	for _, f := range fs.ordered {
		name := deref(f.key).Value
		l.name(f.key, "state name", identName)
		s := &State{Name: name, Pos: posOf(f.key)}
		l.w.States = append(l.w.States, s)
		l.w.states[name] = s
		l.stateNodes[name] = f.key
		spec, ok := l.mapping(f.val, "state "+quote(name))
		if !ok {
			continue
		}
		l.checkKeys(spec, stateKeys, "")
		l.stateSpec(s, f.key, spec)
	}
}

func (l *loader) stateSpec(s *State, key *yaml.Node, spec fieldSet) {
	q := quote(s.Name)
	if f, ok := spec.get("terminal"); ok {
		s.Terminal, _ = l.boolean(f.val, "terminal")
	}
	agent, hasAgent := spec.get("agent")
	agents, hasAgents := spec.get("agents")
	wait, hasWait := spec.get("wait")
	each, hasForeach := spec.get("foreach")
	wf, hasWorkflow := spec.get("workflow")
	if s.Terminal {
		for _, k := range []struct{ key, what string }{
			{"agent", "an agent"}, {"agents", "agents"}, {"wait", "a wait"}, {"foreach", "a foreach"}, {"workflow", "a workflow"}, {"input", "an input"}, {"timeout", "a timeout"},
			{"heartbeat", "a heartbeat"}, {"retry", "a retry"}, {"join", "a join"}, {"merge", "a merge"},
			{"max_tokens", "a max_tokens"}, {"max_cost", "a max_cost"},
		} {
			if f, ok := spec.get(k.key); ok {
				l.errorf(f.key, "terminal state %s has %s", q, k.what)
			}
		}
	} else if !hasAgent && !hasAgents && !hasWait && !hasForeach && !hasWorkflow {
		l.errorf(key, "state %s has none of agent, agents, wait, foreach, workflow or terminal", q)
	}
	if in, ok := spec.get("input"); ok && !hasWorkflow && !s.Terminal {
		l.errorf(in.key, "state %s has an input but no workflow: only a workflow state starts a child with an input", q)
	}
	if hasWorkflow && !s.Terminal {
		l.childSpec(s, q, spec, wf)
		for _, k := range []string{"retry", "heartbeat"} {
			if f, ok := spec.get(k); ok {
				l.errorf(f.key, "workflow state %s has a %s: it runs no agent (its child's states retry their own runs)", q, k)
			}
		}
	}
	if hasAgent && hasAgents && !s.Terminal {
		l.errorf(agents.key, "state %s has both agent and agents", q)
	}
	if hasWait && !s.Terminal {
		if hasAgent || hasAgents {
			l.errorf(wait.key, "state %s has both wait and an agent: a wait state runs no agent", q)
		} else {
			l.wait(s, wait.val)
			for _, k := range []string{"retry", "heartbeat"} {
				if f, ok := spec.get(k); ok {
					l.errorf(f.key, "wait state %s has a %s: it runs no agent", q, k)
				}
			}
		}
	}
	if hasForeach && !s.Terminal {
		l.foreachSpec(s, q, spec, each)
	}
	if hasAgent {
		s.Agent, _ = l.name(agent.val, "agent id", identName)
		l.stateAgent[s] = agent.val
	}
	if hasAgents {
		l.parallelAgents(s, agents)
	}
	if f, ok := spec.get("timeout"); ok {
		s.Timeout, _ = l.duration(f.val, "timeout")
	}
	if f, ok := spec.get("heartbeat"); ok {
		s.Heartbeat, _ = l.duration(f.val, "heartbeat")
	}
	if f, ok := spec.get("retry"); ok {
		s.Retry = l.retry(f.val)
	}
	if !s.Terminal {
		l.budgets(spec, &s.MaxTokens, &s.MaxCost)
	}
	if f, ok := spec.get("max_visits"); ok {
		if v, ok := l.integer(f.val, "max_visits", 1); ok {
			s.MaxVisits = v
			s.explicitMaxVisits = true
		}
	}
	join, hasJoin := spec.get("join")
	merge, hasMerge := spec.get("merge")
	if !hasAgents && !s.Terminal {
		if hasJoin {
			l.errorf(join.key, "state %s has a join but no agents: only a parallel state joins", q)
		}
		if hasMerge {
			l.errorf(merge.key, "state %s has a merge but no agents: only a parallel state merges", q)
		}
	}
	if hasAgents && !s.Terminal {
		s.Join = &Join{Strategy: JoinAll, OnPartial: OnPartialFail}
		if hasJoin {
			l.join(s, join.val)
		}
		if hasMerge {
			if m, ok := l.scalar(merge.val, "merge"); ok {
				if !slices.Contains(mergeStrategies, m) {
					l.errorf(merge.val, "unknown merge strategy %q%s", m, didYouMean(m, mergeStrategies))
				} else {
					s.Merge = m
				}
			}
		}
	}
}

func (l *loader) parallelAgents(s *State, f field) {
	items, _ := l.stringList(f.val, "agents", false)
	seen := map[string]*yaml.Node{}
	for _, it := range items {
		id, ok := l.name(it, "agent id", identName)
		if !ok {
			continue
		}
		if prev, dup := seen[id]; dup {
			l.errorf(it, "agent %q is listed twice in state %q (first at %s)", id, s.Name, posOf(prev))
			continue
		}
		seen[id] = it
		s.Agents = append(s.Agents, id)
	}
	l.parallelNodes = append(l.parallelNodes, parallelRef{state: s, nodes: items})
}

// parallelRef keeps the nodes of a parallel state's agents for resolve.
type parallelRef struct {
	state *State
	nodes []*yaml.Node
}

func (l *loader) retry(n *yaml.Node) Retry {
	var r Retry
	fs, ok := l.mapping(n, "retry")
	if !ok {
		return r
	}
	l.checkKeys(fs, retryKeys, " in retry")
	if f, ok := fs.get("max"); ok {
		r.Max, _ = l.integer(f.val, "retry.max", 0)
	}
	l.retryPolicy(&r, fs)
	return r
}

func (l *loader) join(s *State, n *yaml.Node) {
	fs, ok := l.mapping(n, "join")
	if !ok {
		return
	}
	l.checkKeys(fs, joinKeys, "")
	j := s.Join
	if f, ok := fs.get("strategy"); ok {
		if v, ok := l.scalar(f.val, "join strategy"); ok {
			if slices.Contains(joinStrategies, v) {
				j.Strategy = v
			} else {
				l.errorf(f.val, "unknown join strategy %q%s", v, didYouMean(v, joinStrategies))
			}
		}
	}
	quorum, hasQuorum := fs.get("quorum")
	if hasQuorum {
		if v, ok := l.integer(quorum.val, "quorum", 1); ok {
			j.Quorum = v
			if j.Strategy != JoinQuorum {
				l.errorf(quorum.key, "quorum is only allowed with strategy quorum")
			} else if len(s.Agents) > 0 && v > len(s.Agents) {
				l.errorf(quorum.val, "quorum %d exceeds the %d agents of state %q", v, len(s.Agents), s.Name)
			}
		}
	} else if j.Strategy == JoinQuorum {
		l.errorf(fs.node, "strategy quorum requires a quorum")
	}
	if f, ok := fs.get("timeout"); ok {
		j.Timeout, _ = l.duration(f.val, "join timeout")
	}
	if f, ok := fs.get("on_partial"); ok {
		if v, ok := l.scalar(f.val, "on_partial"); ok {
			if slices.Contains(onPartials, v) {
				j.OnPartial = v
			} else {
				l.errorf(f.val, "unknown on_partial %q%s: want proceed or fail", v, didYouMean(v, onPartials))
			}
		}
	}
}
