package rules

import (
	"slices"
	"strings"

	"github.com/batonhq/baton/transport"
	"go.yaml.in/yaml/v3"
)

var ruleKeys = keySpec{
	required: []string{"id", "from", "trigger", "next"},
	optional: []string{"condition", "priority", "to", "reason", "task", "context", "constraints"},
}

// Priorities, most urgent first: the ranks of package transport's levels.
const (
	PriorityCritical = transport.RankCritical
	PriorityHigh     = transport.RankHigh
	PriorityNormal   = transport.RankNormal
	PriorityLow      = transport.RankLow
)

// PriorityRank returns the rank of a priority name (critical, urgent, high,
// normal, medium, low; any case) on the priority scale.
func PriorityRank(name string) (int, bool) {
	p, err := transport.ParsePriority(name)
	if err != nil {
		return 0, false
	}
	return p.Rank(), true
}

// PriorityName returns the canonical name of a priority value on the
// priority scale: critical (1), high (2-4), normal (5-9) or low (10 and up).
func PriorityName(p int) string { return strings.ToLower(transport.PriorityFromRank(p).String()) }

// Reserved outcomes come only from the engine; rules may match them.
var (
	reservedAny      = []string{"error", "timeout", "rejected"}
	reservedParallel = []string{"joined", "partial", "conflict"}
)

// ruleNodes keeps a rule's nodes for the checks that need every state.
type ruleNodes struct {
	id, from, to, next *yaml.Node
	triggers           []*yaml.Node
}

// rules decodes the `rules` list and compiles each rule's expressions.
func (l *loader) rules(n *yaml.Node) {
	if isNull(n) {
		return
	}
	d := deref(n)
	if d.Kind != yaml.SequenceNode {
		l.errorf(n, "rules must be a list, got %s", kindName(d))
		return
	}
	if len(d.Content) > MaxRules {
		l.errorf(d.Content[MaxRules], "too many rules: %d, the limit is %d", len(d.Content), MaxRules)
		l.overLimit = true
		return
	}
	for i, item := range d.Content {
		fs, ok := l.mapping(item, "rule")
		if !ok {
			continue
		}
		r := &Rule{Index: i, Priority: PriorityNormal, Pos: posOf(fs.node)}
		if isNull(item) {
			r.Pos = posOf(item)
		}
		l.w.Rules = append(l.w.Rules, r)
		l.rule(r, fs)
	}
}

func (l *loader) rule(r *Rule, fs fieldSet) {
	rn := &ruleNodes{}
	l.ruleNodes[r] = rn
	where := ""
	if f, ok := fs.get("id"); ok {
		if id, ok := l.name(f.val, "rule id", ruleIDName); ok {
			r.ID = id
			rn.id = f.val
			where = " in rule " + quote(id)
		}
	}
	l.checkKeys(fs, ruleKeys, where)
	if f, ok := fs.get("from"); ok {
		if s, ok := l.scalar(f.val, "from"); ok {
			r.From, rn.from = s, f.val
		} else {
			l.brokenFrom = true
		}
	} else {
		l.brokenFrom = true
	}
	if f, ok := fs.get("trigger"); ok {
		items, _ := l.stringList(f.val, "trigger", true)
		for _, it := range items {
			t, ok := l.name(it, "trigger", triggerName)
			if !ok {
				continue
			}
			if slices.Contains(r.Triggers, t) {
				l.errorf(it, "trigger %q is listed twice", t)
				continue
			}
			r.Triggers = append(r.Triggers, t)
			rn.triggers = append(rn.triggers, it)
		}
	}
	if f, ok := fs.get("next"); ok {
		if s, ok := l.scalar(f.val, "next"); ok {
			r.Next, rn.next = s, f.val
		}
	}
	if f, ok := fs.get("to"); ok && !isNull(f.val) {
		if s, ok := l.scalar(f.val, "to"); ok {
			r.To, rn.to = s, f.val
		}
	}
	if f, ok := fs.get("priority"); ok {
		r.Priority = l.priority(f.val)
	}
	if f, ok := fs.get("reason"); ok && !isNull(f.val) {
		r.Reason, _ = l.scalar(f.val, "reason")
	}
	if f, ok := fs.get("condition"); ok {
		if _, ok := l.scalar(f.val, "condition"); ok {
			r.Condition = l.compileRuleExpr(r.From, deref(f.val), kindCondition, "condition")
		}
	}
	if f, ok := fs.get("task"); ok {
		if _, ok := l.scalar(f.val, "task"); ok {
			r.Task = l.compileRuleExpr(r.From, deref(f.val), kindTask, "task")
		}
	}
	if f, ok := fs.get("context"); ok {
		l.ruleContext(r, f.val)
	}
	if f, ok := fs.get("constraints"); ok {
		l.constraints(r, f.val)
	}
}

// priority decodes a priority name or a positive integer.
func (l *loader) priority(n *yaml.Node) int {
	d := deref(n)
	if d != nil && d.Kind == yaml.ScalarNode && d.Tag == "!!int" {
		if v, ok := l.integer(n, "priority", 1); ok {
			return v
		}
		return PriorityNormal
	}
	if d != nil && d.Kind == yaml.ScalarNode && d.Tag == "!!float" {
		l.errorf(n, "priority must be a name or an integer, got %s", d.Value)
		return PriorityNormal
	}
	s, ok := l.scalar(n, "priority")
	if !ok {
		return PriorityNormal
	}
	// The file spells names in lower case, exactly.
	if v, ok := PriorityRank(s); ok && s == strings.ToLower(strings.TrimSpace(s)) {
		return v
	}
	names := []string{"critical", "urgent", "high", "normal", "medium", "low"}
	if hint := didYouMean(s, names); hint != "" {
		l.errorf(n, "unknown priority %q%s", s, hint)
	} else {
		l.errorf(n, "unknown priority %q: want critical, urgent, high, normal, medium, low or an integer >= 1", s)
	}
	return PriorityNormal
}

func (l *loader) ruleContext(r *Rule, n *yaml.Node) {
	fs, ok := l.mapping(n, "context")
	if !ok {
		return
	}
	for _, f := range fs.ordered {
		key, ok := l.name(f.key, "context key", identName)
		if !ok {
			continue
		}
		if _, ok := l.scalar(f.val, "context value "+quote(key)); !ok {
			continue
		}
		if e := l.compileRuleExpr(r.From, deref(f.val), kindValue, "context "+quote(key)); e != nil {
			r.Context = append(r.Context, ContextEntry{Key: key, Expr: e})
		}
	}
}

func (l *loader) constraints(r *Rule, n *yaml.Node) {
	if isNull(n) {
		return
	}
	if d := deref(n); d == nil || d.Kind != yaml.MappingNode {
		l.errorf(n, "constraints must be a mapping, got %s", kindName(d))
		return
	}
	v, ok := l.plain(n, 0, &l.literalBudget)
	if m, isMap := v.(map[string]any); ok && isMap {
		r.Constraints = m
	}
}
