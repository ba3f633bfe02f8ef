package registry_test

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
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
	if len(a.Agents) != 1 || a.Agents.Of("writer").InputTokens != 10 {
		t.Errorf("got earlier ledger agents %+v, want writer's 10 tokens only", a.Agents)
	}
	if b.Tokens != 15 || b.Cost != 1.5 || b.Agents.Of("writer").Tokens != 11 || b.Agents.Of("critic").Cost != 0.5 || b.Visit.Tokens != 15 {
		t.Errorf("got %+v, want 15 tokens, cost 1.5, writer 11 tokens, critic 0.5", b)
	}
	if c := b.Add("x", registry.Usage{}); len(c.Agents) != 2 {
		t.Errorf("got agents %v after an empty usage, want no new agent", c.Agents)
	}
	m := registry.Ledger{}.Add("a", registry.Usage{Cost: 1}).Merge(b)
	if m.Cost != 2.5 || m.Agents.Of("writer").Tokens != 11 || m.Agents.Of("a").Cost != 1 {
		t.Errorf("got merged %+v, want cost 2.5 and both ledgers' agents", m)
	}
}

func TestAgentTotals_JSON(t *testing.T) {
	l := registry.Ledger{}.Add("writer", registry.Usage{InputTokens: 3, Cost: 0.5}).Add("critic", registry.Usage{OutputTokens: 2})
	data, err := json.Marshal(l)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"input_tokens":3,"output_tokens":2,"tokens":5,"cost":0.5,"agents":{"critic":{"input_tokens":0,"output_tokens":2,"tokens":2,"cost":0},"writer":{"input_tokens":3,"output_tokens":0,"tokens":3,"cost":0.5}},"visit":{"input_tokens":3,"output_tokens":2,"tokens":5,"cost":0.5}}`
	if string(data) != want {
		t.Errorf("got %s, want %s", data, want)
	}
	var back registry.Ledger
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, l) {
		t.Errorf("got %+v back, want %+v", back, l)
	}
	if got := back.Agents.Of("nobody"); got != (registry.Totals{}) {
		t.Errorf("got %+v for an agent that reported nothing, want zero", got)
	}
	if err := json.Unmarshal([]byte(`{"agents":[1]}`), &back); err == nil {
		t.Error("got no error for agents as a list, want one")
	}
}

// Ledgers built in one spare never share their agents' totals: each keeps
// what it had when it was handed out, however many came after it.
func TestLedger_AddSpareKeepsEveryLedger(t *testing.T) {
	var (
		spare  registry.AgentTotals
		l      registry.Ledger
		kept   []registry.Ledger
		agents = []string{"c", "a", "b", "a", "d", "c", "a", "e", "b", "a", "a", "f"}
	)
	for k, a := range agents {
		l = l.AddSpare(a, registry.Usage{InputTokens: int64(k + 1)}, &spare)
		kept = append(kept, l)
	}
	for n, got := range kept {
		var want registry.Ledger
		for k, a := range agents[:n+1] {
			want = want.Add(a, registry.Usage{InputTokens: int64(k + 1)})
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("ledger %d: got %+v, want %+v", n, got, want)
		}
	}
}
