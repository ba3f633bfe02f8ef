package scenario_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/scenario"
)

func TestRun_ExpectProperty(t *testing.T) {
	const checked = "agents:\n  checker:\n    - {trigger: checked, result: {number: 7}}\n"
	rep := play(t, checked+"expect: {outcome: EXPIRED, property: 'outcome == \"EXPIRED\" && steps == 1 && context.number == 7 && visits.WAIT == 1 && visits.CHECK == 1'}\n")
	assert.Empty(t, rep.Failures)
	rep = play(t, checked+"expect: {outcome: EXPIRED, property: 'outcome != \"EXPIRED\" || steps > 1'}\n")
	require.Len(t, rep.Failures, 1)
	assert.Contains(t, rep.Failures[0], `property "outcome != \"EXPIRED\" || steps > 1" is false (status completed, outcome "EXPIRED", steps 1)`)
}

func TestParse_PropertyThatDoesNotCompileIsPositioned(t *testing.T) {
	_, err := scenario.Parse("s.yaml", []byte("scenario: s\nworkflow: w.yaml\nexpect:\n  property: outcome +\n"))
	require.Error(t, err)
	assert.True(t, strings.HasPrefix(err.Error(), "s.yaml:4:13: property \"outcome +\" does not compile"), err.Error())
}
