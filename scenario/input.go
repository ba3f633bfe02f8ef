package scenario

import (
	"fmt"

	"go.yaml.in/yaml/v3"

	"github.com/batonhq/baton/internal/suggest"
	"github.com/batonhq/baton/rules"
)

// valuePositions returns where each key's value of mapping n starts.
func valuePositions(n *yaml.Node) map[string]Pos {
	out := map[string]Pos{}
	if n.Kind != yaml.MappingNode {
		return out
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		out[k.Value] = Pos{v.Line, v.Column}
	}
	return out
}

// checkInput holds the scenario's input to the workflow's `input`
// declaration, as the engine does at Start, but positioned in the
// scenario: a field of the wrong type at its value, a missing one at the
// input (or at the near miss the author typed instead).
func (c *checker) checkInput() {
	if c.w.Input == nil {
		return
	}
	var undeclared []string
	for k := range c.s.Input {
		if _, ok := c.w.Input.Field(k); !ok {
			undeclared = append(undeclared, k)
		}
	}
	for _, f := range c.w.Input.Fields {
		bad := (&rules.Schema{Fields: []rules.Field{f}}).Check(c.s.Input)
		_, present := c.s.Input[f.Name]
		switch {
		case bad == nil:
		case present:
			c.add(c.s.fieldAt[f.Name], fmt.Sprintf("input field %q %s: workflow %s declares %s: %s", f.Name, bad.Reason, c.w.Name, f.Name, f.Declared()))
		case suggest.Nearest(f.Name, undeclared) != "":
			near := suggest.Nearest(f.Name, undeclared)
			c.add(c.s.fieldAt[near], fmt.Sprintf("input field %q is not declared by workflow %s (did you mean %q?)", near, c.w.Name, f.Name))
		default:
			c.add(c.s.inputAt, fmt.Sprintf("input misses field %q, which workflow %s declares as %s", f.Name, c.w.Name, f.Declared()))
		}
	}
}
