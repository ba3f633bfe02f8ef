package rules

import (
	"fmt"
	"testing"
)

// TestFastEq_AgreesWithVM checks that the shortcut for `ROOT.key == literal`
// decides exactly as the expr virtual machine does, for every pairing of
// literal and value kinds.
func TestFastEq_AgreesWithVM(t *testing.T) {
	conds := []string{
		`result.v == 1`, `result.v == 1.0`, `result.v == 1.5`, `result.v == "1"`, `result.v == true`,
		`result.v == false`, `result.v == nil`, `result.v != 1`, `result.v != "x"`, `1 == result.v`,
		`input.v == "x"`, `context.v == "x"`, `nil != context.v`,
	}
	values := []any{nil, 0, 1, int64(1), int32(1), uint8(1), 1.0, 1.5, float32(1), "1", "x", true, false,
		[]any{1}, map[string]any{"a": 1}}
	for _, cond := range conds {
		src := fmt.Sprintf("workflow: w\ninitial: A\nagents: {a: {}}\nstates: {A: {agent: a}, B: {terminal: true}}\n"+
			"rules:\n  - {id: r, from: a, trigger: t, next: B, condition: '%s'}\n  - {id: f, from: a, trigger: t, next: B, priority: low}\n", cond)
		w, err := Parse("fast.yaml", []byte(src))
		if err != nil {
			t.Fatalf("%s: %v", cond, err)
		}
		e := w.Rules[0].Condition
		if e.fast == nil {
			t.Fatalf("%s: got no fast path, want one", cond)
		}
		slow := *e
		slow.fast = nil
		for _, v := range values {
			for _, absent := range []bool{false, true} {
				env := &Env{Result: map[string]any{}, Input: map[string]any{}, Context: map[string]any{}}
				if !absent {
					env.Result["v"], env.Input["v"], env.Context["v"] = v, v, v
				}
				want, werr := slow.evalBool(env)
				got, gerr := e.evalBool(env)
				if (werr != nil) != (gerr != nil) || got != want {
					t.Errorf("%s with v=%#v (absent %v): got %v, %v, want %v, %v", cond, v, absent, got, gerr, want, werr)
				}
			}
		}
	}
}

func TestFastEq_NotForOtherShapes(t *testing.T) {
	for _, cond := range []string{`result.v > 1`, `result.a.b == 1`, `state == "A"`, `result.v == input.v`, `result.v == 1 && input.w == 2`, `result?.v == 1 || false == result.w`} {
		src := fmt.Sprintf("workflow: w\ninitial: A\nagents: {a: {}}\nstates: {A: {agent: a}, B: {terminal: true}}\n"+
			"rules:\n  - {id: r, from: a, trigger: t, next: B, condition: '%s'}\n  - {id: f, from: a, trigger: t, next: B, priority: low}\n", cond)
		w, err := Parse("fast.yaml", []byte(src))
		if err != nil {
			t.Fatalf("%s: %v", cond, err)
		}
		if w.Rules[0].Condition.fast != nil {
			t.Errorf("%s: got a fast path, want the VM", cond)
		}
	}
}
