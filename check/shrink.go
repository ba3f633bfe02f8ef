package check

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/scenario"
)

// maxShrinkRuns bounds the runs one shrink makes.
const maxShrinkRuns = 500

// shrink makes the violating plan minimal: fewer runs, first triggers,
// smaller numbers, shorter strings and lists, each change kept only when
// the run still breaks the same property.
func (x *explorer) shrink(ctx context.Context, r runResult, index int) *Violation {
	best, rep := x.truncate(r.plan, r.rep), r.rep
	budget := maxShrinkRuns
	try := func(p *plan) bool {
		if budget <= 0 || ctx.Err() != nil {
			return false
		}
		budget--
		got, err := x.exec(ctx, p)
		if err != nil {
			return false
		}
		if prop, _ := x.violation(got); prop != r.prop {
			return false
		}
		best, rep = x.truncate(p, got), got
		return true
	}
	for changed := true; changed && budget > 0; {
		changed = false
		for _, a := range sortedKeys(best.replies) {
			for i := 0; i < len(best.replies[a]); i++ {
				c := best.clone()
				c.replies[a] = slices.Delete(c.replies[a], i, i+1)
				if try(c) {
					changed = true
					i--
				}
			}
		}
		for _, a := range sortedKeys(best.replies) {
			first := x.gen.triggers[a]
			if len(first) == 0 {
				continue
			}
			for i := 0; i < len(best.replies[a]); i++ {
				rp := best.replies[a][i]
				if rp.Trigger == first[0] && rp.Delay == 0 {
					continue
				}
				c := best.clone()
				res := rp.Result
				if rp.Trigger == "" {
					res = map[string]any{}
					fill(res, x.gen.schemas[a])
				}
				c.replies[a][i] = scenario.Reply{Trigger: first[0], Result: cloneMap(res)}
				changed = try(c) || changed
			}
		}
		for _, a := range sortedKeys(best.replies) {
			for i := 0; i < len(best.replies[a]); i++ {
				result := func(p *plan) map[string]any {
					if rs := p.replies[a]; i < len(rs) {
						return rs[i].Result
					}
					return nil
				}
				changed = x.shrinkMap(&best, result, try) || changed
			}
		}
		changed = x.shrinkMap(&best, func(p *plan) map[string]any { return p.input }, try) || changed
	}
	prop, msg := x.violation(rep)
	if prop == "" {
		prop, msg = r.prop, r.msg
	}
	v := &Violation{Property: prop, Message: msg, Run: index, Replies: best.replyCount(), States: rep.States, plan: best,
		status: string(rep.Result.Status)}
	var nm *rules.NoMatchError
	if prop == PropNoRuleMatched && errors.As(rep.Result.Err, &nm) {
		v.State, v.Trigger = nm.State, nm.Trigger
	}
	return v
}

// shrinkMap tries smaller values for each key of the map at picks in the
// best plan so far, keeping each change that still breaks the property
// (try replaces *best).
func (x *explorer) shrinkMap(best **plan, at func(*plan) map[string]any, try func(*plan) bool) bool {
	changed := false
	m := at(*best)
	if m == nil {
		return false
	}
	for _, k := range sortedKeys(m) {
		cur := at(*best)
		if cur == nil {
			return changed
		}
		v, ok := cur[k]
		if !ok {
			continue
		}
		for _, small := range smaller(v) {
			c := (*best).clone()
			if target := at(c); target != nil {
				target[k] = small
				if try(c) {
					changed = true
					break
				}
			}
		}
	}
	return changed
}

// smaller lists values simpler than v, simplest first.
func smaller(v any) []any {
	switch x := v.(type) {
	case int:
		if x == 0 {
			return nil
		}
		if x/2 == 0 {
			return []any{0}
		}
		return []any{0, x / 2}
	case float64:
		if x == 0 {
			return nil
		}
		return []any{0, numberValue(math.Trunc(x)), x / 2}
	case string:
		if x == "" {
			return nil
		}
		return []any{"", x[:len(x)/2]}
	case []any:
		if len(x) == 0 {
			return nil
		}
		return []any{[]any{}, slices.Clone(x[:len(x)/2])}
	case bool:
		if x {
			return []any{false}
		}
	}
	return nil
}

// truncate drops the replies the run left unconsumed and the wait choices
// it never reached: what remains is what the run used.
func (x *explorer) truncate(p *plan, rep *scenario.Report) *plan {
	c := p.clone()
	left := map[string]int{}
	for _, f := range rep.Failures {
		if a, ok := strings.CutPrefix(f, "agent "); ok {
			if name, rest, ok := strings.Cut(a, ": reply at line"); ok && strings.HasSuffix(rest, "left unconsumed") {
				left[name]++
			}
		}
	}
	for a, rs := range c.replies {
		c.replies[a] = rs[:len(rs)-min(left[a], len(rs))]
		if len(c.replies[a]) == 0 {
			delete(c.replies, a)
		}
	}
	if n := len(waitsOf(rep.History)); n < len(c.waits) {
		c.waits = c.waits[:n]
	}
	return c
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// exploreReply is a reply of a written explore scenario.
type exploreReply struct {
	Trigger   string         `yaml:"trigger,omitempty"`
	Result    map[string]any `yaml:"result,omitempty"`
	Error     string         `yaml:"error,omitempty"`
	Retryable *bool          `yaml:"retryable,omitempty"`
	Kind      string         `yaml:"kind,omitempty"`
	Reject    string         `yaml:"reject,omitempty"`
	Delay     string         `yaml:"delay,omitempty"`
}

type exploreScenario struct {
	Scenario string                    `yaml:"scenario"`
	Workflow string                    `yaml:"workflow"`
	Input    map[string]any            `yaml:"input,omitempty"`
	Agents   map[string][]exploreReply `yaml:"agents,omitempty"`
	Signals  []signal                  `yaml:"signals,omitempty"`
	Expect   *propertyExpect           `yaml:"expect,omitempty"`
}

type propertyExpect struct {
	Status   string `yaml:"status"`
	Property string `yaml:"property"`
}

// WriteViolation writes the shrunk run of v as a scenario in dir and returns
// its path. For a built-in property the scenario has no expectations: its
// replay fails the way the run did (the condition error, the no rule
// matched, the invalid result, or a limit that fails the instance). For a
// --property expression it expects the property (and the status the run
// ended with), so that the replay fails naming the property.
func WriteViolation(v *Violation, workflow *Report, seed uint64, dir string) (string, error) {
	if v == nil || v.plan == nil {
		return "", fmt.Errorf("check: explore: no violation to write")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("check: explore: %w", err)
	}
	slug := v.Property
	var expect *propertyExpect
	if !slices.Contains([]string{PropConditionError, PropNoRuleMatched, PropInvalidResult, PropLimitHit, PropWorstCase}, slug) {
		slug = "property"
		expect = &propertyExpect{Status: v.status, Property: v.Property}
	}
	path := filepath.Join(dir, fmt.Sprintf("%s-%s-seed%d-run%d.yaml", workflow.Workflow, slug, seed, v.Run))
	wf, err := relativePath(dir, workflow.File)
	if err != nil {
		return "", err
	}
	sc := exploreScenario{Scenario: fmt.Sprintf("explore: %s (--seed %d, run %d)", v.Property, seed, v.Run), Workflow: wf,
		Input: nonEmpty(v.plan.input), Agents: map[string][]exploreReply{}, Expect: expect}
	for a, rs := range v.plan.replies {
		for _, r := range rs {
			er := exploreReply{Trigger: r.Trigger, Result: nonEmpty(r.Result), Error: r.Error, Kind: r.Kind, Reject: r.Reject}
			if r.Error != "" && !r.Retryable {
				no := false
				er.Retryable = &no
			}
			if r.Delay > 0 {
				er.Delay = r.Delay.String()
			}
			sc.Agents[a] = append(sc.Agents[a], er)
		}
	}
	if len(sc.Agents) == 0 {
		sc.Agents = nil
	}
	for _, s := range v.plan.signals() {
		sc.Signals = append(sc.Signals, signal{Signal: s.Name, Data: nonEmpty(s.Data)})
	}
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "# Written by wfrun explore: breaks %s\n# %s\n", v.Property, strings.ReplaceAll(v.Message, "\n", " "))
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(sc); err != nil {
		return "", fmt.Errorf("check: explore: %w", err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return "", fmt.Errorf("check: explore: %w", err)
	}
	return path, nil
}
