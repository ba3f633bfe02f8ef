package graph_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/batonhq/baton/internal/graph"
)

func TestComponents(t *testing.T) {
	edges := map[string][]string{
		"A": {"B"}, "B": {"C", "D"}, "C": {"B"}, "D": {"E"}, "E": {"D", "F"}, "F": nil, "X": {"A"},
	}
	got := graph.Components([]string{"A"}, func(n string) []string { return edges[n] })
	for _, c := range got {
		slices.Sort(c)
	}
	// F first (a sink), then {D E}, then {B C}, then A; X is not reachable.
	if want := "[[F] [D E] [B C] [A]]"; fmt.Sprint(got) != want {
		t.Errorf("got %v, want %s", got, want)
	}
}

func TestComponents_SelfLoopAndNoRoots(t *testing.T) {
	got := graph.Components([]string{"A", "A"}, func(n string) []string { return []string{"A"} })
	if fmt.Sprint(got) != "[[A]]" {
		t.Errorf("got %v, want [[A]]", got)
	}
	if got := graph.Components(nil, func(string) []string { return nil }); len(got) != 0 {
		t.Errorf("got %v, want none", got)
	}
}
