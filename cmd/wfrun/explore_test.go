package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestExplore_ExitCodes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "scenarios")
	tests := []struct {
		name string
		args []string
		want int
	}{
		{"no violation", []string{"explore", "--runs", "50", corpus + "clean_total/workflow.yaml"}, 0},
		{"a value gap", []string{"explore", "--runs", "200", "--scenarios", dir, corpus + "score_gap/workflow.yaml"}, 1},
		{"a broken property", []string{"explore", "--runs", "50", "--scenarios", dir, "--property", `outcome == "GOOD"`, corpus + "clean_total/workflow.yaml"}, 1},
		{"a limit hit", []string{"explore", "--runs", "50", "--scenarios", dir, corpus + "trap/workflow.yaml"}, 1},
		{"a property that does not compile", []string{"explore", "--property", "outcome +", corpus + "clean_total/workflow.yaml"}, 2},
		{"no runs", []string{"explore", "--runs", "0", corpus + "clean_total/workflow.yaml"}, 2},
		{"invalid workflow", []string{"explore", "testdata/broken.yaml"}, 1},
		{"two files", []string{"explore", "a.yaml", "b.yaml"}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := wfrun(t, tt.args...)
			assert.Equal(t, tt.want, code, "stdout: %s\nstderr: %s", out, errOut)
		})
	}
}

// TestExplore_WritesAScenarioThatWfrunTestFails: the first line names the
// property and the file; `wfrun test` fails that file on the same no rule
// matched.
func TestExplore_WritesAScenarioThatWfrunTestFails(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "scenarios")
	out, _, code := wfrun(t, "explore", "--runs", "500", "--seed", "4", "--scenarios", dir, corpus+"string_set/workflow.yaml")
	require.Equal(t, 1, code, out)
	first, _, _ := strings.Cut(out, "\n")
	require.True(t, strings.HasPrefix(first, "violation of no_rule_matched: "+dir+string(filepath.Separator)), first)
	file := strings.TrimPrefix(first, "violation of no_rule_matched: ")
	_, err := os.Stat(file)
	require.NoError(t, err)
	assert.Contains(t, out, "shrunk to 1 reply: REVIEWING\n")
	assert.Contains(t, out, "coverage: rules ")
	out, _, code = wfrun(t, "test", file)
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, "FAIL "+file)
	assert.Contains(t, out, "no rule matched")
}

// TestExplore_PropertyScenarioFailsNamingTheProperty: the scenario of a
// broken --property expects it, so `wfrun test` fails naming it.
func TestExplore_PropertyScenarioFailsNamingTheProperty(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "scenarios")
	out, _, code := wfrun(t, "explore", "--runs", "100", "--scenarios", dir, "--property", `outcome == "GOOD"`, corpus+"clean_total/workflow.yaml")
	require.Equal(t, 1, code, out)
	first, _, _ := strings.Cut(out, "\n")
	file := strings.TrimPrefix(first, `violation of outcome == "GOOD": `)
	require.NotEqual(t, first, file, first)
	out, _, code = wfrun(t, "test", file)
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, `property "outcome == \"GOOD\"" is false`)
}
