package rules

import (
	"regexp"
	"strconv"

	"go.yaml.in/yaml/v3"
)

var agentKeys = keySpec{
	optional: []string{"type", "capabilities", "queue", "concurrency", "url", "secret_env", "system", "selectable", "expertise", "accuracy", "result", "a2a", "mcp", "llm"},
}

var limitKeys = keySpec{
	optional: []string{"max_steps", "max_visits", "max_tokens", "max_cost", "max_duration", "handoff_window", "handoff_repeats", "on_limit"},
}

func quote(s string) string { return strconv.Quote(s) }

// envName is the pattern of an environment variable's name.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// agents decodes the `agents` map. Every key is registered, even one with a
// bad spec, so that references to it do not cascade into more errors.
func (l *loader) agents(n *yaml.Node) {
	fs, ok := l.mapping(n, "agents")
	if !ok {
		return
	}
	l.noAgents = false
	if len(fs.ordered) == 0 {
		// An empty map is fine for a workflow whose states run no agent
		// (waits and sub-workflows only); load checks that once the states
		// are known.
		l.emptyAgents = n
		return
	}
	for _, f := range fs.ordered {
		id := deref(f.key).Value
		l.name(f.key, "agent id", identName)
		a := &Agent{ID: id, Type: id, Pos: posOf(f.key)}
		l.w.Agents = append(l.w.Agents, a)
		l.w.agents[id] = a
		l.agentNodes[id] = f.key
		spec, ok := l.mapping(f.val, "agent "+quote(id))
		if !ok {
			continue
		}
		l.checkKeys(spec, agentKeys, "")
		l.agentSpec(a, spec)
	}
}

func (l *loader) agentSpec(a *Agent, spec fieldSet) {
	if f, ok := spec.get("result"); ok {
		a.Result = l.declaration(f.val, "result")
	}
	if f, ok := spec.get("type"); ok {
		if t, ok := l.scalar(f.val, "type"); ok && t != "" {
			a.Type = t
		}
	}
	if f, ok := spec.get("capabilities"); ok {
		items, _ := l.stringList(f.val, "capabilities", true)
		for _, it := range items {
			if c, ok := l.scalar(it, "capability"); ok {
				if c == "" {
					l.errorf(it, "capability must not be empty")
					continue
				}
				a.Capabilities = append(a.Capabilities, c)
			}
		}
	}
	if f, ok := spec.get("queue"); ok {
		a.Queue, _ = l.integer(f.val, "queue", 0)
	}
	if f, ok := spec.get("concurrency"); ok {
		a.Concurrency, _ = l.integer(f.val, "concurrency", 1)
	}
	if f, ok := spec.get("system"); ok {
		a.System, _ = l.boolean(f.val, "system")
	}
	if f, ok := spec.get("selectable"); ok {
		a.Selectable, _ = l.boolean(f.val, "selectable")
	}
	if f, ok := spec.get("expertise"); ok {
		a.Expertise, _ = l.fraction(f.val, "expertise")
	}
	if f, ok := spec.get("accuracy"); ok {
		a.Accuracy, _ = l.fraction(f.val, "accuracy")
	}
	if f, ok := spec.get("url"); ok {
		a.URL = l.httpURL(f.val, "url")
	}
	l.agentKind(a, spec)
	if f, ok := spec.get("secret_env"); ok {
		if v, ok := l.scalar(f.val, "secret_env"); ok {
			if !envName.MatchString(v) {
				l.errorf(f.val, "secret_env must name an environment variable ([A-Za-z_][A-Za-z0-9_]*), got %s", quote(v))
			} else {
				a.SecretEnv = v
			}
		}
		if a.URL == "" {
			l.errorf(f.key, "secret_env signs the calls of an HTTP agent: it needs url")
		}
	}
}

// limits decodes the `limits` map onto the defaults.
func (l *loader) limits(n *yaml.Node) {
	fs, ok := l.mapping(n, "limits")
	if !ok {
		return
	}
	l.checkKeys(fs, limitKeys, "")
	lim := &l.w.Limits
	set := func(key string, dst *int) bool {
		f, ok := fs.get(key)
		if !ok {
			return false
		}
		if v, ok := l.integer(f.val, key, 1); ok {
			*dst = v
		}
		return true
	}
	steps := set("max_steps", &lim.MaxSteps)
	visits := set("max_visits", &lim.MaxVisits)
	l.explicitLimit = steps || visits
	l.budgets(fs, &lim.MaxTokens, &lim.MaxCost)
	if f, ok := fs.get("max_duration"); ok {
		lim.MaxDuration, _ = l.duration(f.val, "max_duration")
	}
	set("handoff_window", &lim.HandoffWindow)
	set("handoff_repeats", &lim.HandoffRepeats)
	if f, ok := fs.get("on_limit"); ok && !isNull(f.val) {
		if s, ok := l.scalar(f.val, "on_limit"); ok {
			lim.OnLimit = s
			l.onLimitNode = f.val
		}
	}
}
