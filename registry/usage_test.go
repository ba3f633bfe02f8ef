package registry_test

import (
	"errors"
	"math"
	"testing"

	"github.com/batonhq/baton/registry"
)

func TestUsage_Validate(t *testing.T) {
	tests := []struct {
		u     registry.Usage
		field string // "" when valid
	}{
		{registry.Usage{}, ""},
		{registry.Usage{InputTokens: 10, OutputTokens: 5, Cost: 0.01, Model: "m"}, ""},
		{registry.Usage{InputTokens: -1}, "input_tokens"},
		{registry.Usage{OutputTokens: -1}, "output_tokens"},
		{registry.Usage{Cost: -0.01}, "cost"},
		{registry.Usage{Cost: math.NaN()}, "cost"},
		{registry.Usage{Cost: math.Inf(1)}, "cost"},
	}
	for _, tt := range tests {
		err := tt.u.Validate()
		var ue *registry.UsageError
		switch {
		case tt.field == "" && err != nil:
			t.Errorf("%+v: got %v, want nil", tt.u, err)
		case tt.field != "" && (!errors.As(err, &ue) || ue.Field != tt.field || !errors.Is(err, registry.ErrInvalidUsage)):
			t.Errorf("%+v: got %v, want a *UsageError naming %s", tt.u, err, tt.field)
		}
	}
}

func TestTotals_Add(t *testing.T) {
	got := registry.Totals{}.Add(registry.Usage{InputTokens: 100, OutputTokens: 20, Cost: 0.5}).Add(registry.Usage{OutputTokens: 5, Cost: 0.25})
	want := registry.Totals{InputTokens: 100, OutputTokens: 25, Tokens: 125, Cost: 0.75}
	if got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
	huge := registry.Totals{}.Add(registry.Usage{InputTokens: math.MaxInt64}).Add(registry.Usage{InputTokens: 1, OutputTokens: 1})
	if huge.InputTokens != math.MaxInt64 || huge.Tokens != math.MaxInt64 {
		t.Errorf("got %+v, want the token counts to saturate at MaxInt64", huge)
	}
}

func TestLedger_AddLeavesEarlierLedgersAlone(t *testing.T) {
	a := registry.Ledger{}.Add("writer", registry.Usage{InputTokens: 10, Cost: 1})
	b := a.Add("critic", registry.Usage{OutputTokens: 4, Cost: 0.5}).Add("writer", registry.Usage{InputTokens: 1})
	if len(a.Agents) != 1 || a.Agents["writer"].InputTokens != 10 {
		t.Errorf("got earlier ledger agents %+v, want writer's 10 tokens only", a.Agents)
	}
	if b.Tokens != 15 || b.Cost != 1.5 || b.Agents["writer"].Tokens != 11 || b.Agents["critic"].Cost != 0.5 || b.Visit.Tokens != 15 {
		t.Errorf("got %+v, want 15 tokens, cost 1.5, writer 11 tokens, critic 0.5", b)
	}
	if c := b.Add("x", registry.Usage{}); len(c.Agents) != 2 {
		t.Errorf("got agents %v after an empty usage, want no new agent", c.Agents)
	}
	m := registry.Ledger{}.Add("a", registry.Usage{Cost: 1}).Merge(b)
	if m.Cost != 2.5 || m.Agents["writer"].Tokens != 11 || m.Agents["a"].Cost != 1 {
		t.Errorf("got merged %+v, want cost 2.5 and both ledgers' agents", m)
	}
}
