package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const corpus = "../../check/testdata/corpus/"

func TestCheck_ExitCodes(t *testing.T) {
	examples, err := filepath.Glob("../../examples/*/workflow*.yaml")
	require.NoError(t, err)
	tests := []struct {
		name string
		args []string
		want int
	}{
		{"every example", append([]string{"check"}, examples...), 0},
		{"warnings only", []string{"check", corpus + "hang_wait/workflow.yaml"}, 0},
		{"an uncovered trigger", []string{"check", corpus + "score_gap/workflow.yaml"}, 1},
		{"a trap", []string{"check", corpus + "trap/workflow.yaml"}, 1},
		{"an error in a child", []string{"check", corpus + "nested/workflow.yaml"}, 1},
		{"invalid workflow", []string{"check", "testdata/broken.yaml"}, 1},
		{"missing file", []string{"check", "testdata/nope.yaml"}, 1},
		{"no files", []string{"check"}, 2},
		{"unknown flag", []string{"check", "--nope", corpus + "score_gap/workflow.yaml"}, 2},
		{"scenarios where no folder can be made", []string{"check", "--scenarios", "check_test.go/scenarios", corpus + "clean_total/workflow.yaml"}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := wfrun(t, tt.args...)
			assert.Equal(t, tt.want, code, "stdout: %s\nstderr: %s", out, errOut)
		})
	}
}

func TestCheck_PrintsFindingsWithPositionsAndTheSummary(t *testing.T) {
	out, _, code := wfrun(t, "check", corpus+"score_gap/workflow.yaml")
	assert.Equal(t, 1, code)
	assert.Contains(t, out, corpus+"score_gap/workflow.yaml:11:5: error: REVIEWING: trigger reviewed with result.score == 7 matches no rule\n")
	assert.Contains(t, out, "  states 3/3 reachable, outcomes [GOOD BAD], worst case 1 run\n")
}

func TestCheck_JSON(t *testing.T) {
	out, _, code := wfrun(t, "check", "--json", corpus+"trap/workflow.yaml")
	assert.Equal(t, 1, code)
	var results []struct {
		File   string `json:"file"`
		Report struct {
			Summary  string `json:"summary"`
			Findings []struct {
				Kind     string   `json:"kind"`
				Severity string   `json:"severity"`
				Line     int      `json:"line"`
				Col      int      `json:"col"`
				Path     []string `json:"path"`
			} `json:"findings"`
		} `json:"report"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &results), out)
	require.Len(t, results, 1)
	fs := results[0].Report.Findings
	require.Len(t, fs, 2, out)
	assert.Equal(t, "trap", fs[0].Kind)
	assert.Equal(t, "error", fs[0].Severity)
	assert.Equal(t, 11, fs[0].Line)
	assert.Equal(t, []string{"START", "DRAFTING"}, fs[0].Path)
	assert.True(t, strings.HasPrefix(results[0].Report.Summary, "states 4/4 reachable"))
}

// TestCheck_ScenariosPassWfrunTest writes the scenarios of the corpus with
// `wfrun check --scenarios`, then runs `wfrun test` on them: each one passes
// because it reproduces its finding.
func TestCheck_ScenariosPassWfrunTest(t *testing.T) {
	// wfrun test finds scenarios in directories named scenarios.
	dir := filepath.Join(t.TempDir(), "scenarios")
	files, err := filepath.Glob(corpus + "*/workflow.yaml")
	require.NoError(t, err)
	out, _, code := wfrun(t, append([]string{"check", "--scenarios", dir}, files...)...)
	assert.Equal(t, 1, code)
	written := strings.Count(out, "\nwrote ")
	require.GreaterOrEqual(t, written, 13, out)
	out, errOut, code := wfrun(t, "test", dir)
	assert.Equal(t, 0, code, out+errOut)
	assert.Contains(t, out, "scenarios: ")
	assert.NotContains(t, out, "FAIL")
	assert.Equal(t, written, strings.Count(out, "PASS "), out)
}
