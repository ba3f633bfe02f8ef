package check_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/batonhq/baton/check"
	"github.com/batonhq/baton/rules"
)

// bytesource draws choices from fuzz input; past its end every choice is 0.
type bytesource struct {
	data []byte
	i    int
}

func (b *bytesource) pick(n int) int {
	if b.i >= len(b.data) {
		return 0
	}
	v := int(b.data[b.i]) % n
	b.i++
	return v
}

var ops = []string{"==", "!=", "<", "<=", ">", ">="}

// condition builds a random condition over the typed fields of
// fuzzWorkflow: comparisons with literals, in, ??, !, &&, ||, and a few
// forms the analysis cannot read.
func condition(b *bytesource, depth int) string {
	if depth > 0 {
		switch b.pick(6) {
		case 0:
			return condition(b, depth-1) + " && " + condition(b, depth-1)
		case 1:
			return condition(b, depth-1) + " || " + condition(b, depth-1)
		case 2:
			return "!(" + condition(b, depth-1) + ")"
		}
	}
	op := ops[b.pick(len(ops))]
	switch b.pick(11) {
	case 0:
		return fmt.Sprintf("result.a %s %d", op, b.pick(12)-3)
	case 1:
		return fmt.Sprintf("result.b %s %g", op, float64(b.pick(20))/4-1)
	case 2:
		return fmt.Sprintf("result.s %s %q", []string{"==", "!="}[b.pick(2)], []string{"p", "q", "r", ""}[b.pick(4)])
	case 3:
		return fmt.Sprintf("result.s in [%q, %q]", []string{"p", "q"}[b.pick(2)], []string{"r", ""}[b.pick(2)])
	case 4:
		return []string{"result.f", "!result.f", "result.f == true", "result.f != false"}[b.pick(4)]
	case 5:
		return fmt.Sprintf("(result.o ?? %d) %s %d", b.pick(8), op, b.pick(8))
	case 6:
		return fmt.Sprintf("(result.t ?? %q) == %q", []string{"p", "q"}[b.pick(2)], []string{"p", "q", "r"}[b.pick(3)])
	case 7:
		return fmt.Sprintf("input.x %s %d", op, b.pick(10))
	case 8:
		return fmt.Sprintf("attempt %s %d", op, b.pick(4))
	case 9:
		return fmt.Sprintf("%d %s result.a", b.pick(10), op)
	}
	return []string{"len(result.s) > 1", "result.a + result.b > 3", "result.a > result.b"}[b.pick(3)]
}

// fuzzWorkflow is a workflow whose state R has one to five rules on the
// trigger done, some conditional.
func fuzzWorkflow(data []byte) string {
	b := &bytesource{data: data}
	var sb strings.Builder
	sb.WriteString(`workflow: fuzz
initial: R
input: {x: int}
agents:
  r:
    result: {a: int, b: number, s: string, f: bool, o: "int?", t: "string?"}
states:
  R: {agent: r, timeout: 1m, retry: {max: 2}}
  DONE: {terminal: true}
rules:
  - {id: failed, from: r, trigger: [error, timeout, rejected], next: DONE}
`)
	n := 1 + b.pick(5)
	for i := range n {
		if b.pick(8) == 0 {
			fmt.Fprintf(&sb, "  - {id: r%d, from: r, trigger: done, next: DONE}\n", i)
			continue
		}
		fmt.Fprintf(&sb, "  - id: r%d\n    from: r\n    trigger: done\n    condition: '%s'\n    next: DONE\n", i, strings.ReplaceAll(condition(b, 2), "'", "''"))
	}
	return sb.String()
}

// sample draws an environment for R's outcome done.
func sample(rng *rand.Rand) *rules.Env {
	result := map[string]any{
		"a": rng.IntN(20) - 5,
		"b": float64(rng.IntN(40))/4 - 2,
		"s": []string{"p", "q", "r", "", "zz"}[rng.IntN(5)],
		"f": rng.IntN(2) == 0,
	}
	if rng.IntN(2) == 0 {
		result["o"] = rng.IntN(10)
	}
	if rng.IntN(2) == 0 {
		result["t"] = []string{"p", "q", "r", "zz"}[rng.IntN(4)]
	}
	return &rules.Env{Result: result, Input: map[string]any{"x": rng.IntN(12)}, Context: map[string]any{},
		State: "R", Agent: "r", Trigger: "done", Step: 1, Visits: map[string]int{"R": 1}, Attempt: 1 + rng.IntN(3)}
}

// checkConditions checks the analysis of one generated workflow: each
// witness it reports must match no rule when the rules' own Match evaluates
// it, and when it says the outcome is covered, no sampled environment may
// fall through every rule.
func checkConditions(t *testing.T, data []byte) {
	src := fuzzWorkflow(data)
	w, err := rules.Parse("fuzz.yaml", []byte(src))
	if err != nil {
		t.Fatalf("generated workflow does not load: %v\n%s", err, src)
	}
	r := check.Check(w)
	coverage := check.Undecided
	for _, o := range r.Produces[0].Outcomes {
		if o.Trigger == "done" {
			coverage = o.Coverage
		}
	}
	found := false
	for _, f := range r.All() {
		if f.Kind == check.KindUncovered && f.Trigger == "done" {
			found = true
			confirm(t, w, f)
		}
	}
	if found != (coverage == check.Uncovered) {
		t.Fatalf("coverage %s but finding %v\n%s", coverage, found, src)
	}
	if coverage != check.Covered {
		return
	}
	rng := rand.New(rand.NewPCG(uint64(len(data)), 7))
	for range 300 {
		env := sample(rng)
		_, err := w.Match("R", "r", "done", env)
		var nm *rules.NoMatchError
		if errors.As(err, &nm) && !condErrors(nm) {
			t.Fatalf("check proved done covered, but %v matches no rule\n%s", env.Result, src)
		}
	}
}

func condErrors(nm *rules.NoMatchError) bool {
	for _, e := range nm.Tried {
		if e.Err != nil {
			return true
		}
	}
	return false
}

func FuzzCheck_Conditions(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{1, 3, 0, 4, 2, 1, 0, 0, 5, 1, 7, 3, 2})
	f.Add([]byte{4, 1, 0, 1, 1, 0, 0, 3, 1, 2, 9, 0, 0, 2, 6, 5})
	f.Fuzz(checkConditions)
}

// TestCheck_RandomConditions runs the fuzz body over a fixed set of random
// inputs, so that every `go test` exercises it.
func TestCheck_RandomConditions(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 400 {
		data := make([]byte, 40)
		for j := range data {
			data[j] = byte(rng.IntN(256))
		}
		t.Run(fmt.Sprint(i), func(t *testing.T) { checkConditions(t, data) })
	}
}

// FuzzCheck_Workflow checks any workflow the loader accepts: Check never
// panics, and each witness it reports matches no rule.
func FuzzCheck_Workflow(f *testing.F) {
	paths, _ := filepath.Glob("testdata/corpus/*/*.yaml")
	examples, _ := filepath.Glob("../examples/*/workflow*.yaml")
	for _, p := range append(paths, examples...) {
		src, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(src)
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		w, err := rules.Parse("fuzz.yaml", src)
		if err != nil {
			return
		}
		r := check.Check(w)
		for _, fd := range r.Findings {
			if fd.Kind == check.KindUncovered {
				confirm(t, w, fd)
			}
		}
		_ = r.Summary
	})
}
