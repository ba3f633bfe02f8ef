package main

import (
	"bufio"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const conditionError = "testdata/conditions/scenarios/condition_error.yaml"

func TestRun_ConditionErrorIsMarkedAndFails(t *testing.T) {
	out, _, code := wfrun(t, "run", conditionError)
	assert.Equal(t, 1, code, "a condition error fails the scenario unless it allows them")
	golden(t, "condition_error.table", out)
}

func TestRun_ConditionErrorInJSON(t *testing.T) {
	out, _, code := wfrun(t, "run", "--json", conditionError)
	assert.Equal(t, 1, code)
	var kinds []string
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var ev map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &ev))
		kinds = append(kinds, ev["kind"].(string))
		if ev["kind"] == "condition" {
			assert.Equal(t, "big", ev["rule"])
			assert.NotEmpty(t, ev["error"])
		}
	}
	assert.Contains(t, kinds, "condition")
	assert.Contains(t, kinds, "waiting")
	assert.Contains(t, kinds, "signal")
}

func TestTest_ConditionErrorFails(t *testing.T) {
	out, _, code := wfrun(t, "test", conditionError)
	assert.Equal(t, 1, code)
	assert.Contains(t, out, "FAIL "+conditionError)
	assert.Contains(t, out, "condition_errors: true")
}
