package rules_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/batonhq/baton/rules"
)

const hostileHead = "workflow: w\ninitial: A\nagents: {a: {}}\nstates: {A: {agent: a}, Z: {terminal: true}}\n"

// TestParse_HostileInputs feeds inputs built to blow up a naive loader:
// alias bombs, self-references, merge-key fan-out, huge expressions and
// deep nesting. Each must end quickly in a positioned error.
func TestParse_HostileInputs(t *testing.T) {
	aliasBomb := hostileHead + "rules:\n  - id: r\n    from: a\n    trigger: t\n    next: Z\n    constraints:\n      l0: &l0 [x, x, x, x, x, x, x, x, x, x]\n"
	for i := 1; i <= 9; i++ {
		aliasBomb += fmt.Sprintf("      l%d: &l%d [*l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d]\n", i, i, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1)
	}
	mergeBomb := "workflow: w\ninitial: A\nagents:\n  a0: &m0 {type: t}\n"
	for i := 1; i <= 8; i++ {
		mergeBomb += fmt.Sprintf("  a%d: &m%d {<<: [*m%d, *m%d, *m%d, *m%d, *m%d, *m%d, *m%d, *m%d, *m%d, *m%d]}\n", i, i, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1)
	}
	mergeBomb += "states: {A: {agent: a0}, Z: {terminal: true}}\nrules: [{id: r, from: a0, trigger: t, next: Z}]\n"
	tooManyRules := hostileHead + "rules:\n" + strings.Repeat("  - {id: r, from: a, trigger: t, next: Z}\n", rules.MaxRules+1)
	tests := []struct {
		name string
		src  string
		want string // a piece of the first diagnostic
	}{
		{"file over the size limit", "# " + strings.Repeat("x", rules.MaxFileSize), "hostile.yaml:1:1: workflow file is too large"},
		{"too many rules", tooManyRules, fmt.Sprintf("hostile.yaml:%d:5: too many rules: %d, the limit is %d", rules.MaxRules+6, rules.MaxRules+1, rules.MaxRules)},
		{"alias bomb in constraints", aliasBomb, "constraints are too large"},
		{"self-referencing constraints", hostileHead + "rules:\n  - id: r\n    from: a\n    trigger: t\n    next: Z\n    constraints: &c {self: *c}\n", "nested too deeply"},
		{"merge-key fan-out", mergeBomb, "merge keys expand to too many values"},
		{"self merge", "workflow: w\ninitial: A\nagents:\n  a: &m {<<: *m}\nstates: {A: {agent: a}, Z: {terminal: true}}\nrules: [{id: r, from: a, trigger: t, next: Z}]\n", "cannot merge itself"},
		{"huge expression", hostileHead + "rules: [{id: r, from: a, trigger: t, next: Z, condition: '" + strings.Repeat("1 + ", 20000) + "1 > 0'}]\n", "condition:"},
		{"deep nesting", "workflow: " + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + "\n", "malformed yaml"},
		{"integer overflow", hostileHead + "rules: [{id: r, from: a, trigger: t, next: Z, priority: 99999999999999999999}]\n", "priority must be a name or an integer, got 99999999999999999999"},
		{"overflowing typed constant", hostileHead + "rules: [{id: r, from: a, trigger: t, next: Z, condition: 'step > 99999999999999999999'}]\n", "condition:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := rules.Parse("hostile.yaml", []byte(tt.src))
			var le *rules.LoadError
			if !errors.As(err, &le) {
				t.Fatalf("got %v, want a *LoadError", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got\n%v\nwant a diagnostic containing %q", err, tt.want)
			}
			for _, d := range le.Diagnostics {
				if d.Line < 1 || d.Col < 1 {
					t.Errorf("got unpositioned %v", d)
				}
			}
		})
	}
}
