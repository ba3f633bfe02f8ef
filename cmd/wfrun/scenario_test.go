package main

import (
	"bufio"
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const approved = "../../examples/refund/scenarios/approved.yaml"

func TestRun_Table(t *testing.T) {
	out, errOut, code := wfrun(t, "run", approved)
	require.Equal(t, 0, code, out+errOut)
	golden(t, "approved.table", out)
}

func TestRun_JSONIsOneEventPerLineAndDeterministic(t *testing.T) {
	first, _, code := wfrun(t, "run", "--json", approved)
	require.Equal(t, 0, code)
	second, _, _ := wfrun(t, "run", "--json", approved)
	assert.Equal(t, first, second, "two replays print the same trace")

	sc := bufio.NewScanner(strings.NewReader(first))
	var kinds []string
	for sc.Scan() {
		var ev map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &ev), "line %q", sc.Text())
		kinds = append(kinds, ev["kind"].(string))
	}
	require.NotEmpty(t, kinds)
	assert.Equal(t, "started", kinds[0])
	assert.Equal(t, "verdict", kinds[len(kinds)-1])
	assert.Contains(t, kinds, "rule_fired")
	assert.Contains(t, kinds, "handoff")
}

func TestRun_FailingScenarioExitsOne(t *testing.T) {
	out, _, code := wfrun(t, "run", "testdata/failing/scenarios/wrong_outcome.yaml")
	assert.Equal(t, 1, code)
	assert.Contains(t, out, `outcome: got "REJECTED", want "COMPLETED"`)
	assert.Contains(t, out, "FAIL")
}

func TestRun_UsageAndMissingFile(t *testing.T) {
	_, _, code := wfrun(t, "run")
	assert.Equal(t, 2, code)
	_, errOut, code := wfrun(t, "run", "testdata/nope.yaml")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "nope.yaml")
}

func TestTest_ExamplesPass(t *testing.T) {
	junit := filepath.Join(t.TempDir(), "junit.xml")
	out, errOut, code := wfrun(t, "test", "../../examples", "--junit", junit)
	require.Equal(t, 0, code, out+errOut)
	assert.Contains(t, out, "PASS ../../examples/refund/scenarios/approved.yaml")
	assert.Regexp(t, `scenarios: \d+ passed, 0 failed`, out)

	data, err := os.ReadFile(junit)
	require.NoError(t, err)
	var suite struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
	}
	require.NoError(t, xml.Unmarshal(data, &suite))
	assert.Positive(t, suite.Tests)
	assert.Zero(t, suite.Failures)
}

func TestTest_ReportsFailures(t *testing.T) {
	junit := filepath.Join(t.TempDir(), "junit.xml")
	out, _, code := wfrun(t, "test", "testdata/failing", approved, "--junit", junit)
	assert.Equal(t, 1, code)
	assert.Contains(t, out, "FAIL testdata/failing/scenarios/wrong_outcome.yaml")
	assert.Contains(t, out, "scenarios: 1 passed, 1 failed")
	data, err := os.ReadFile(junit)
	require.NoError(t, err)
	assert.Contains(t, string(data), `failures="1"`)
	assert.Contains(t, string(data), "<failure message=")
}

func TestTest_NoScenarios(t *testing.T) {
	_, errOut, code := wfrun(t, "test", "testdata/golden")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "no scenarios")
}

func TestTest_RunPicksScenariosByPathOrName(t *testing.T) {
	out, errOut, code := wfrun(t, "test", "../../examples", "--run", "approved")
	require.Equal(t, 0, code, out+errOut)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for _, l := range lines[:len(lines)-1] {
		assert.Contains(t, l, "approved", "only scenarios whose path or name matches")
	}
	assert.Contains(t, out, "PASS ../../examples/refund/scenarios/approved.yaml")

	out, _, code = wfrun(t, "test", "testdata/cli", "--run", "holds <")
	require.Equal(t, 0, code)
	assert.Contains(t, out, "escaped.yaml", "the name matches")
	assert.Contains(t, out, "scenarios: 1 passed, 0 failed")

	_, errOut, code = wfrun(t, "test", "testdata/cli", "--run", "nothing-like-this")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, `matches --run "nothing-like-this"`)
	_, _, code = wfrun(t, "test", "testdata/cli", "--run", "(")
	assert.Equal(t, 2, code, "a bad regular expression is a usage error")
}

func TestTest_EveryLineHasADuration(t *testing.T) {
	out, _, _ := wfrun(t, "test", "testdata/cli", "testdata/broken")
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if strings.HasPrefix(l, "PASS ") || strings.HasPrefix(l, "FAIL ") {
			assert.Regexp(t, `\) \d+\.\d\ds$`, l)
		}
	}
}

func TestTest_FailLinesSayWhy(t *testing.T) {
	out, _, code := wfrun(t, "test", "testdata/broken", "testdata/failing")
	assert.Equal(t, 1, code)
	for _, want := range []string{
		"FAIL testdata/broken/scenarios/agent_typo.yaml (the scenario does not load: 1 error) ",
		`     testdata/broken/scenarios/agent_typo.yaml:4:3: agent "chekcer" is not in workflow cli (did you mean "checker"?)`,
		"FAIL testdata/broken/scenarios/bad_workflow.yaml (its workflow does not load: 1 error) ",
		`     testdata/broken/workflow.yaml:9:37: unknown key "nxt" (did you mean "next"?)`,
		"FAIL testdata/broken/scenarios/malformed.yaml (the scenario does not load: 1 error) ",
		"     testdata/broken/scenarios/malformed.yaml:5:1: malformed yaml: a tab indents this line",
		`FAIL testdata/failing/scenarios/wrong_outcome.yaml (outcome: got "REJECTED", want "COMPLETED") `,
		"FAIL testdata/broken/scenarios/two_failures.yaml (2 failures) ",
		`     outcome: got "FAILED", want "DONE"`,
		"scenarios: 0 passed, 5 failed",
	} {
		assert.Contains(t, out, want)
	}
	assert.NotContains(t, out, "()", "no empty reason")
}

func TestValidate_AScenarioIsToldItIsAScenario(t *testing.T) {
	out, _, code := wfrun(t, "validate", "testdata/cli/scenarios/one_step.yaml")
	assert.Equal(t, 1, code)
	assert.Contains(t, out, "testdata/cli/scenarios/one_step.yaml:1:1: this file is a scenario, not a workflow")
	assert.Contains(t, out, "invalid (1 error)")
	assert.Equal(t, 2, strings.Count(out, "\n"), "one error, not one per workflow key: %s", out)
}

func TestRun_AWorkflowIsToldItIsAWorkflow(t *testing.T) {
	_, errOut, code := wfrun(t, "run", "testdata/cli/workflow.yaml")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "testdata/cli/workflow.yaml:1:1: this file is a workflow, not a scenario")
}

func TestRun_LoadProblemsStartTheirLines(t *testing.T) {
	_, errOut, code := wfrun(t, "run", "testdata/broken/scenarios/agent_typo.yaml")
	assert.Equal(t, 1, code)
	assert.Equal(t, `testdata/broken/scenarios/agent_typo.yaml:4:3: agent "chekcer" is not in workflow cli (did you mean "checker"?)`+"\n"+
		"wfrun: the scenario does not load: 1 error\n", errOut)
	_, errOut, code = wfrun(t, "run", "testdata/broken/scenarios/bad_workflow.yaml")
	assert.Equal(t, 1, code)
	assert.True(t, strings.HasPrefix(errOut, `testdata/broken/workflow.yaml:9:37: unknown key "nxt" (did you mean "next"?)`), errOut)
}

// TestTest_FailuresGolden keeps the whole report of failing scenarios in a
// golden file; durations, the one thing that varies, read "T".
func TestTest_FailuresGolden(t *testing.T) {
	out, _, code := wfrun(t, "test", "testdata/broken", "testdata/failing", "testdata/cli")
	assert.Equal(t, 1, code)
	golden(t, "test_failures.txt", regexp.MustCompile(`(?m) \d+\.\d\ds$`).ReplaceAllString(out, " T"))
}

func TestGraph_LoadProblemsStartTheirLines(t *testing.T) {
	_, errOut, code := wfrun(t, "graph", "testdata/broken/workflow.yaml")
	assert.Equal(t, 1, code)
	assert.Equal(t, `testdata/broken/workflow.yaml:9:37: unknown key "nxt" (did you mean "next"?)`+"\n"+
		"wfrun: the workflow does not load: 1 error\n", errOut)
}
