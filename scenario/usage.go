package scenario

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/batonhq/baton/registry"
)

// usage reads a reply's `usage: {input_tokens, output_tokens, cost, model}`.
func (p *parser) usage(n *yaml.Node, agent string) registry.Usage {
	f := p.mapping(n, "usage of "+agent, usageKeys)
	var u registry.Usage
	if v := f["input_tokens"]; v != nil {
		u.InputTokens, _ = p.count(v, "input_tokens")
	}
	if v := f["output_tokens"]; v != nil {
		u.OutputTokens, _ = p.count(v, "output_tokens")
	}
	if v := f["cost"]; v != nil {
		u.Cost, _ = p.amount(v, "cost")
	}
	if v := f["model"]; v != nil {
		u.Model = p.str(v, "model")
	}
	return u
}

// expectUsage reads `expect.usage: {tokens, cost}`.
func (p *parser) expectUsage(n *yaml.Node) *ExpectUsage {
	f := p.mapping(n, "expect.usage", expectUsageKeys)
	e := &ExpectUsage{}
	if v := f["tokens"]; v != nil {
		if t, ok := p.count(v, "tokens"); ok {
			e.Tokens = &t
		}
	}
	if v := f["cost"]; v != nil {
		if c, ok := p.amount(v, "cost"); ok {
			e.Cost = &c
		}
	}
	return e
}

// count reads a token count: an integer, 0 or more.
func (p *parser) count(v *yaml.Node, what string) (int64, bool) {
	n, err := strconv.ParseInt(strings.ReplaceAll(v.Value, "_", ""), 0, 64)
	if v.Kind != yaml.ScalarNode || v.Tag != "!!int" || err != nil || n < 0 {
		p.errorf(v, "%s must be a count of tokens (an integer, 0 or more), got %q", what, v.Value)
		return 0, false
	}
	return n, true
}

// amount reads a cost: a finite number, 0 or more.
func (p *parser) amount(v *yaml.Node, what string) (float64, bool) {
	f, err := strconv.ParseFloat(strings.ReplaceAll(v.Value, "_", ""), 64)
	if v.Kind != yaml.ScalarNode || (v.Tag != "!!int" && v.Tag != "!!float") || err != nil || math.IsInf(f, 0) || math.IsNaN(f) || f < 0 {
		p.errorf(v, "%s must be a number, 0 or more, got %q", what, v.Value)
		return 0, false
	}
	return f, true
}

// checkUsage compares the instance's usage totals with expect.usage.
func (r *Report) checkUsage() {
	want := r.Scenario.Expect.Usage
	if want == nil {
		return
	}
	got := r.Result.Usage.Totals
	if want.Tokens != nil && got.Tokens != *want.Tokens {
		r.Failures = append(r.Failures, fmt.Sprintf("usage.tokens: got %d, want %d", got.Tokens, *want.Tokens))
	}
	if want.Cost != nil && math.Abs(got.Cost-*want.Cost) > CostTolerance {
		r.Failures = append(r.Failures, fmt.Sprintf("usage.cost: got %s, want %s", strconv.FormatFloat(got.Cost, 'g', -1, 64), strconv.FormatFloat(*want.Cost, 'g', -1, 64)))
	}
}
