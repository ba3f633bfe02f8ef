package main

import (
	"bufio"
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
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
