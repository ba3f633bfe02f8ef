package engine_test

import (
	"path/filepath"
	"testing"

	"github.com/batonhq/baton/fsm"
	"github.com/batonhq/baton/rules"
)

// The engine takes the transition of the rule Decide picks without asking
// the state machine, because Decide can only pick a rule the machine
// allows: in a state, the candidates of the state's owner, each of which
// fsm compiles as an edge from every state that owner owns. This holds the
// claim on every workflow the engine's tests and the examples use: for
// each state and each trigger, every candidate Decide may fire is an event
// the machine, placed in that state, can fire; so is the on_limit event
// from every state limitHit leaves for on_limit.
func TestDecide_PicksOnlyTransitionsOfTheMachine(t *testing.T) {
	var paths []string
	for _, pattern := range []string{"testdata/*.yaml", "testdata/*/*.yaml", "../examples/*/workflow.yaml"} {
		found, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		paths = append(paths, found...)
	}
	checked := 0
	for _, path := range paths {
		w, err := rules.Load(path)
		if err != nil {
			continue // a workflow the tests load to see it refused
		}
		def, err := fsm.Compile(w)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		triggers := map[string]bool{}
		for _, r := range w.Rules {
			for _, trigger := range r.Triggers {
				triggers[trigger] = true
			}
		}
		for _, st := range w.States {
			if st.Terminal {
				continue
			}
			m, err := def.Restore(st.Name)
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			for trigger := range triggers {
				for _, c := range w.Candidates(st.Name, w.Owner(st.Name), trigger) {
					checked++
					if !m.Can(c.ID) {
						t.Errorf("%s: Decide may fire rule %s in state %s, which the state machine does not allow", path, c.ID, st.Name)
					}
				}
			}
			if on := w.Limits.OnLimit; on != "" && on != st.Name && !m.Can(fsm.LimitEvent) {
				t.Errorf("%s: the state machine does not allow on_limit from state %s", path, st.Name)
			}
		}
	}
	if checked == 0 {
		t.Fatal("got no candidate rules checked, want the workflows of testdata and examples")
	}
}
