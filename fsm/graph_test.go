package fsm_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/fsm"
	"github.com/batonhq/baton/rules"
)

// Mermaid draws a state's description in place of its name when given as
// "NAME : text": every described state must carry its name in the label.
func TestMermaid_StateNamesStayVisible(t *testing.T) {
	out := fsm.Mermaid(load(t, "testdata/loop.yaml"))
	for _, want := range []string{
		`state "DRAFT (agent writer)" as DRAFT`,
		`state "REVIEW (agent editor)" as REVIEW`,
		`state "ESCALATE (agent boss)" as ESCALATE`,
	} {
		assert.Contains(t, out, want)
	}
	assert.NotRegexp(t, `(?m)^    [A-Z]+ : `, out, "a description line hides the state's name")
}

// Labels built from the file (conditions, wait signals) cannot end the
// quoted label or inject markup.
func TestMermaid_LabelsAreEscaped(t *testing.T) {
	src := `workflow: hostile
initial: ASK
agents:
  asker: {}
states:
  ASK: {agent: asker}
  HOLD: {wait: {signals: [go]}, timeout: 1h}
  DONE: {terminal: true}
rules:
  - {id: odd, from: asker, trigger: asked, condition: 'result.x == "\"<script>alert(1)</script>;#"', next: HOLD}
  - {id: held, from: HOLD, trigger: go, next: DONE}
`
	w, err := rules.Parse("hostile.yaml", []byte(src))
	require.NoError(t, err)
	out := fsm.Mermaid(w)
	assert.Contains(t, out, `state "HOLD (wait for go, timeout 1h0m0s)" as HOLD`)
	found := false
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "ASK --> HOLD") {
			found = true
			assert.NotContains(t, line, "<")
			assert.NotContains(t, line, `"`)
			assert.Contains(t, line, "#lt;script#gt;")
		}
	}
	assert.True(t, found, "no edge ASK --> HOLD in\n%s", out)
}
