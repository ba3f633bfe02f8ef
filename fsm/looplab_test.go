package fsm_test

import (
	"context"
	"path/filepath"
	"testing"

	looplab "github.com/looplab/fsm"

	"github.com/batonhq/baton/fsm"
	"github.com/batonhq/baton/rules"
)

// TestDefinition_AgreesWithLooplab builds a looplab/fsm machine over every
// edge of each example workflow and checks, for every state and every
// event, that the definition's table accepts and refuses exactly what
// looplab does, and reaches the same state.
func TestDefinition_AgreesWithLooplab(t *testing.T) {
	files, err := filepath.Glob("../examples/*/workflow*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no example workflows (%v)", err)
	}
	files = append(files, "testdata/loop.yaml")
	for _, file := range files {
		t.Run(file, func(t *testing.T) {
			w, err := rules.Load(file)
			if err != nil {
				t.Fatal(err)
			}
			d, err := fsm.Compile(w)
			if err != nil {
				t.Fatal(err)
			}
			var events looplab.Events
			names := map[string]bool{}
			for _, tr := range d.Transitions() {
				events = append(events, looplab.EventDesc{Name: tr.Event, Src: []string{tr.From}, Dst: tr.To})
				names[tr.Event] = true
			}
			names["no_such_event"] = true
			ctx := context.Background()
			for _, st := range w.States {
				for ev := range names {
					ref := looplab.NewFSM(st.Name, events, nil)
					m, err := d.Restore(st.Name)
					if err != nil {
						t.Fatal(err)
					}
					if got, want := m.Can(ev), ref.Can(ev); got != want {
						t.Fatalf("%s from %s: Can got %v, looplab %v", ev, st.Name, got, want)
					}
					got, ferr := m.Fire(ctx, ev)
					lerr := ref.Event(ctx, ev)
					var same looplab.NoTransitionError
					accepted := lerr == nil || (isNoTransition(lerr, &same) && same.Err == nil)
					if (ferr == nil) != accepted {
						t.Fatalf("%s from %s: Fire got %v, looplab %v", ev, st.Name, ferr, lerr)
					}
					if ferr == nil && got != ref.Current() {
						t.Fatalf("%s from %s: Fire reached %s, looplab %s", ev, st.Name, got, ref.Current())
					}
				}
			}
		})
	}
}

func isNoTransition(err error, target *looplab.NoTransitionError) bool {
	e, ok := err.(looplab.NoTransitionError)
	if ok {
		*target = e
	}
	return ok
}

// Firing takes no allocation.
func TestMachine_FireDoesNotAllocate(t *testing.T) {
	w, err := rules.Load("testdata/loop.yaml")
	if err != nil {
		t.Fatal(err)
	}
	d, err := fsm.Compile(w)
	if err != nil {
		t.Fatal(err)
	}
	m, err := d.Restore("REVIEW")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if n := testing.AllocsPerRun(100, func() {
		if _, err := m.Fire(ctx, "again"); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("Fire allocated %v times, want 0", n)
	}
}
