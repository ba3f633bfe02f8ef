package rules_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/rules"
)

const linkCaller = `workflow: caller
initial: CALL
states:
  CALL: {workflow: callee}
  OK: {terminal: true}
  FAILED: {terminal: true}
rules:
  - {id: ok, from: CALL, trigger: DONE, next: OK}
  - {id: failed, from: CALL, trigger: [error, timeout], next: FAILED}
`

func TestLink(t *testing.T) {
	parse := func(src string) *rules.Workflow {
		w, err := rules.Parse("caller.yaml", []byte(src))
		require.NoError(t, err)
		return w
	}
	callee := func(terminal string) *rules.Workflow {
		w, err := rules.Parse("callee.yaml", []byte("workflow: callee\ninitial: "+terminal+"\nstates:\n  "+terminal+": {terminal: true}\n"))
		require.NoError(t, err)
		return w
	}
	t.Run("linked", func(t *testing.T) {
		w, c := parse(linkCaller), callee("DONE")
		require.NoError(t, rules.Link(w, func(name string) (*rules.Workflow, bool) { return c, name == "callee" }))
		st, _ := w.State("CALL")
		assert.Same(t, c, st.Child.Target)
	})
	for _, tt := range []struct {
		name   string
		lookup func(*rules.Workflow) func(string) (*rules.Workflow, bool)
		want   string
	}{
		{"unknown child", func(*rules.Workflow) func(string) (*rules.Workflow, bool) {
			return func(string) (*rules.Workflow, bool) { return nil, false }
		}, `caller.yaml:4:20: state "CALL" calls unknown workflow "callee"`},
		{"a trigger the child never ends in", func(*rules.Workflow) func(string) (*rules.Workflow, bool) {
			c := callee("FINISHED")
			return func(string) (*rules.Workflow, bool) { return c, true }
		}, `never ends in "DONE"`},
		{"a cycle", func(w *rules.Workflow) func(string) (*rules.Workflow, bool) {
			return func(string) (*rules.Workflow, bool) { return w, true }
		}, `reach itself through its children`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := parse(linkCaller)
			err := rules.Link(w, tt.lookup(w))
			var le *rules.LoadError
			require.ErrorAs(t, err, &le)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}
