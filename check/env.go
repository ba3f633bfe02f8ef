package check

import (
	"maps"

	"github.com/batonhq/baton/rules"
)

// env builds the environment of the current assignment on top of base.
// It fails when the values break the result or input declaration: such a
// result is an invalid_result failure, not an outcome.
func (s *solver) env() (rules.Env, bool) {
	p := s.p
	env := p.base
	env.Result = cloneMap(env.Result)
	env.Input = cloneMap(env.Input)
	env.Context = cloneMap(env.Context)
	env.Visits = maps.Clone(env.Visits)
	if p.free["result"] {
		fill(env.Result, p.result)
	}
	if p.free["input"] {
		fill(env.Input, p.input)
	}
	for _, v := range s.vars {
		x, ok := s.a[v.subj.key]
		if !ok {
			continue
		}
		path := v.subj.path
		switch path[0] {
		case "result":
			setPath(env.Result, path[1:], x)
		case "input":
			setPath(env.Input, path[1:], x)
		case "context":
			setPath(env.Context, path[1:], x)
		case "error":
			switch path[1] {
			case "kind":
				env.Error.Kind, _ = x.v.(string)
			case "message":
				env.Error.Message, _ = x.v.(string)
			case "retryable":
				env.Error.Retryable, _ = x.v.(bool)
			}
		case "attempt":
			env.Attempt, _ = x.v.(int)
		case "step":
			env.Step, _ = x.v.(int)
		case "visits":
			if env.Visits == nil {
				env.Visits = map[string]int{}
			}
			env.Visits[path[1]], _ = x.v.(int)
		}
	}
	if p.result.Check(env.Result) != nil || p.input.Check(env.Input) != nil {
		return env, false
	}
	return env, true
}

// fill gives each required declared field missing from m a value of its type.
func fill(m map[string]any, s *rules.Schema) {
	if s == nil {
		return
	}
	for _, f := range s.Fields {
		if _, ok := m[f.Name]; ok || f.Optional {
			continue
		}
		m[f.Name] = zero(f.Type)
	}
}

func zero(typ string) any {
	switch typ {
	case rules.TypeString:
		return ""
	case rules.TypeNumber, rules.TypeInt:
		return 0
	case rules.TypeBool:
		return false
	case rules.TypeList:
		return []any{}
	case rules.TypeMap:
		return map[string]any{}
	}
	return nil
}

func setPath(m map[string]any, path []string, x val) {
	for _, k := range path[:len(path)-1] {
		next, ok := m[k].(map[string]any)
		if !ok {
			if x.missing {
				return
			}
			next = map[string]any{}
			m[k] = next
		}
		m = next
	}
	last := path[len(path)-1]
	if x.missing {
		delete(m, last)
		return
	}
	m[last] = x.v
}

// cloneMap copies m deeply enough for setPath: nested maps are copied.
func cloneMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		if sub, ok := v.(map[string]any); ok {
			v = cloneMap(sub)
		}
		out[k] = v
	}
	return out
}
