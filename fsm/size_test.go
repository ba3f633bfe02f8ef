package fsm_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/batonhq/baton/fsm"
	"github.com/batonhq/baton/rules"
)

// chain returns a workflow of n states, S0 … S(n-2) owned by one agent and
// the terminal DONE, with one rule per step: every rule's sources are all
// n-1 working states.
func chain(n int) []byte {
	var b strings.Builder
	b.WriteString("workflow: chain\ninitial: S0\nagents: {a: {}}\nstates:\n")
	for i := range n - 1 {
		fmt.Fprintf(&b, "  S%d: {agent: a}\n", i)
	}
	b.WriteString("  DONE: {terminal: true}\nrules:\n")
	for i := range n - 1 {
		next := fmt.Sprintf("S%d", i+1)
		if i == n-2 {
			next = "DONE"
		}
		fmt.Fprintf(&b, "  - {id: r%d, from: a, trigger: t%d, next: %s}\n", i, i, next)
	}
	return []byte(b.String())
}

// TestCompile_ChainIsLinear loads and compiles a 2 000-state chain whose
// rules all leave every state of one agent (4 million (rule, source) pairs)
// and walks it to the end. Building a table entry per pair allocated about
// 2 GB; a linear compile stays far below the bound checked here.
func TestCompile_ChainIsLinear(t *testing.T) {
	const n, budget = 2000, 200 << 20
	src := chain(n)
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	w, err := rules.Parse("chain.yaml", src)
	if err != nil {
		t.Fatalf("got %v, want the chain to load", err)
	}
	d, err := fsm.Compile(w)
	if err != nil {
		t.Fatalf("got %v, want the chain to compile", err)
	}
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got > budget {
		t.Errorf("got %d MB allocated to load and compile %d states, want at most %d MB", got>>20, n, budget>>20)
	}
	ctx := context.Background()
	m := d.New()
	for i := range n - 1 {
		if _, err := m.Fire(ctx, fmt.Sprintf("r%d", i)); err != nil {
			t.Fatalf("in %s: got %v firing r%d, want the transition", m.Current(), err, i)
		}
	}
	if got := m.Current(); got != "DONE" {
		t.Errorf("got %s at the end of the chain, want DONE", got)
	}
	if _, err := m.Fire(ctx, "r0"); !errors.Is(err, fsm.ErrInvalidTransition) {
		t.Errorf("got %v firing r0 in DONE, want ErrInvalidTransition", err)
	}
	if _, err := m.Fire(ctx, "nope"); !errors.Is(err, fsm.ErrUnknownEvent) {
		t.Errorf("got %v firing an unknown event, want ErrUnknownEvent", err)
	}
}

// TestCompile_ChainOverLimit refuses a 10 000-state chain at load with a
// positioned error instead of compiling it.
func TestCompile_ChainOverLimit(t *testing.T) {
	_, err := rules.Parse("chain.yaml", chain(10_000))
	var le *rules.LoadError
	if !errors.As(err, &le) {
		t.Fatalf("got %v, want a *LoadError", err)
	}
	want := fmt.Sprintf("chain.yaml:%d:3: too many states: 10000, the limit is %d", rules.MaxStates+5, rules.MaxStates)
	if len(le.Diagnostics) != 1 || le.Diagnostics[0].String() != want {
		t.Errorf("got %v, want the one diagnostic %q", err, want)
	}
}

// BenchmarkCompile_Chain2000 measures loading and compiling a 2 000-state chain.
func BenchmarkCompile_Chain2000(b *testing.B) {
	src := chain(2000)
	b.ReportAllocs()
	for b.Loop() {
		w, err := rules.Parse("chain.yaml", src)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := fsm.Compile(w); err != nil {
			b.Fatal(err)
		}
	}
}
