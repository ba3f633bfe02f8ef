package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

const escaped = "testdata/cli/scenarios/escaped.yaml"

func TestRun_OutputJSONIsTheJSONFlag(t *testing.T) {
	viaFlag, _, code := wfrun(t, "run", "--json", approved)
	require.Equal(t, 0, code)
	viaO, _, code := wfrun(t, "run", "-o", "json", approved)
	require.Equal(t, 0, code)
	assert.Equal(t, viaFlag, viaO)
	long, _, _ := wfrun(t, "run", "--output=json", approved)
	assert.Equal(t, viaFlag, long)
}

func TestRun_OutputYAMLIsOneDocumentPerEvent(t *testing.T) {
	out, errOut, code := wfrun(t, "run", "-o", "yaml", approved)
	require.Equal(t, 0, code, errOut)
	dec := yaml.NewDecoder(strings.NewReader(out))
	var kinds []string
	for {
		var doc map[string]any
		err := dec.Decode(&doc)
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		kinds = append(kinds, doc["kind"].(string))
	}
	require.NotEmpty(t, kinds)
	assert.Equal(t, "started", kinds[0])
	assert.Equal(t, "verdict", kinds[len(kinds)-1])
	jsonOut, _, _ := wfrun(t, "run", "--json", approved)
	assert.Equal(t, strings.Count(jsonOut, "\n"), len(kinds), "the same events as -o json")
}

func TestOutput_UnknownOrConflictingFormatIsAUsageError(t *testing.T) {
	for _, args := range [][]string{
		{"run", "-o", "xml", approved},
		{"run", "--json", "-o", "yaml", approved},
		{"inspect", "--store", "x.db", "-o", "csv"},
		{"replay", "-o", "toml", "a", "b"},
	} {
		_, errOut, code := wfrun(t, args...)
		assert.Equal(t, 2, code, "%v: %s", args, errOut)
	}
}

func TestRun_JSONDoesNotEscapeHTML(t *testing.T) {
	out, errOut, code := wfrun(t, "run", "--json", escaped)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, `score < 1 && score > 10`)
	for _, esc := range []string{`\u003c`, `\u003e`, `\u0026`} {
		assert.NotContains(t, out, esc)
	}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var v map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &v), "each line is JSON: %s", sc.Text())
	}
}

func TestPlural(t *testing.T) {
	tests := []struct {
		n    int
		want string
	}{{0, "0 steps"}, {1, "1 step"}, {2, "2 steps"}}
	for _, tt := range tests {
		assert.Equal(t, tt.want, plural(tt.n, "step", "steps"))
	}
}

func TestPlurals_InEveryReport(t *testing.T) {
	out, _, _ := wfrun(t, "test", "testdata/cli")
	assert.Contains(t, out, "(one step, 1 step)")
	assert.Contains(t, out, "(an error that holds <, > and &&, 2 steps)")
	out, _, _ = wfrun(t, "validate", "../../rules/testdata/invalid/lint_cycle_self.yaml")
	assert.Contains(t, out, "ok (1 warning)")
	out, _, _ = wfrun(t, "validate", "--strict", "../../rules/testdata/invalid/lint_cycle_self.yaml")
	assert.Contains(t, out, "invalid with --strict (1 warning)")
	out, _, _ = wfrun(t, "validate", "testdata/broken/workflow.yaml")
	assert.Contains(t, out, "invalid (1 error)")
	out, _, _ = wfrun(t, "run", "testdata/cli/scenarios/one_step.yaml")
	assert.Contains(t, out, "status completed, outcome DONE, 1 step,")
}

// terminal makes the CLI believe its output is a terminal for one test.
func terminal(t *testing.T) {
	t.Helper()
	was := isTerminal
	isTerminal = func(io.Writer) bool { return true }
	t.Cleanup(func() { isTerminal = was })
}

func TestColour_OnlyOnATerminalAndNeverWithNoColor(t *testing.T) {
	const green, red = "\x1b[32m", "\x1b[31m"
	t.Setenv("NO_COLOR", "")

	out, _, _ := wfrun(t, "test", "testdata/cli", "testdata/broken")
	assert.NotContains(t, out, "\x1b[", "no colour when the output is not a terminal")

	terminal(t)
	out, _, _ = wfrun(t, "test", "testdata/cli", "testdata/broken")
	assert.Contains(t, out, green+"PASS\x1b[0m testdata/cli/scenarios/one_step.yaml")
	assert.Contains(t, out, red+"FAIL\x1b[0m testdata/broken/scenarios/agent_typo.yaml")
	out, _, _ = wfrun(t, "validate", "testdata/cli/workflow.yaml", "testdata/broken/workflow.yaml")
	assert.Contains(t, out, green+"ok")
	assert.Contains(t, out, red+"invalid")
	out, _, _ = wfrun(t, "run", approved)
	assert.Contains(t, out, green+"PASS")

	t.Setenv("NO_COLOR", "1")
	out, _, _ = wfrun(t, "test", "testdata/cli", "testdata/broken")
	assert.NotContains(t, out, "\x1b[", "NO_COLOR turns colour off, even on a terminal")
}

func TestMarshalJSON_KeepsHTMLCharacters(t *testing.T) {
	data, err := marshalJSON(map[string]string{"condition": "a > 1 && b < 2"})
	require.NoError(t, err)
	assert.Equal(t, `{"condition":"a > 1 && b < 2"}`+"\n", string(data))
	assert.True(t, bytes.HasSuffix(data, []byte("\n")))
}

func TestCompletion_FixedValues(t *testing.T) {
	out, _, code := wfrun(t, "__complete", "run", "-o", "")
	require.Equal(t, 0, code)
	assert.Equal(t, []string{"table", "json", "yaml"}, strings.Split(strings.TrimSpace(out), "\n")[:3])
	out, _, _ = wfrun(t, "__complete", "graph", "--format", "")
	assert.Equal(t, []string{"mermaid", "dot"}, strings.Split(strings.TrimSpace(out), "\n")[:2])
	out, _, _ = wfrun(t, "__complete", "schema", "")
	assert.Equal(t, []string{"workflow", "scenario"}, strings.Split(strings.TrimSpace(out), "\n")[:2])
}

func TestValidate_OutputJSONAndYAML(t *testing.T) {
	files := []string{"testdata/cli/workflow.yaml", "testdata/broken/workflow.yaml", "../../rules/testdata/invalid/lint_cycle_self.yaml", "testdata/nope.yaml"}
	out, _, code := wfrun(t, append([]string{"validate", "-o", "json"}, files...)...)
	assert.Equal(t, 1, code)
	var got []struct {
		File   string `json:"file"`
		Valid  bool   `json:"valid"`
		Error  string `json:"error"`
		Errors []struct {
			Line, Col int
			Message   string
		} `json:"errors"`
		Warnings []struct{ Message string } `json:"warnings"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &got), out)
	require.Len(t, got, 4)
	assert.True(t, got[0].Valid)
	assert.False(t, got[1].Valid)
	require.Len(t, got[1].Errors, 1)
	assert.Equal(t, 9, got[1].Errors[0].Line)
	assert.Equal(t, 37, got[1].Errors[0].Col)
	assert.Equal(t, `unknown key "nxt" (did you mean "next"?)`, got[1].Errors[0].Message)
	assert.True(t, got[2].Valid, "warnings do not make a file invalid without --strict")
	assert.Len(t, got[2].Warnings, 1)
	assert.Contains(t, got[3].Error, "no such file")

	out, _, _ = wfrun(t, "validate", "--strict", "-o", "yaml", "../../rules/testdata/invalid/lint_cycle_self.yaml")
	var list []map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(out), &list))
	require.Len(t, list, 1)
	assert.Equal(t, false, list[0]["valid"], "--strict: a warning makes it invalid")
}

func TestTest_OutputJSON(t *testing.T) {
	out, _, code := wfrun(t, "test", "-o", "json", "testdata/cli", "testdata/failing")
	assert.Equal(t, 1, code)
	var sum struct {
		Scenarios []struct {
			File     string   `json:"file"`
			Name     string   `json:"name"`
			Passed   bool     `json:"passed"`
			Steps    int      `json:"steps"`
			Seconds  float64  `json:"seconds"`
			Reason   string   `json:"reason"`
			Failures []string `json:"failures"`
		} `json:"scenarios"`
		Passed int `json:"passed"`
		Failed int `json:"failed"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &sum), out)
	assert.Equal(t, 2, sum.Passed)
	assert.Equal(t, 1, sum.Failed)
	require.Len(t, sum.Scenarios, 3)
	assert.Equal(t, "testdata/cli/scenarios/escaped.yaml", sum.Scenarios[0].File)
	assert.Equal(t, "an error that holds <, > and &&", sum.Scenarios[0].Name)
	assert.True(t, sum.Scenarios[0].Passed)
	assert.Equal(t, 2, sum.Scenarios[0].Steps)
	assert.GreaterOrEqual(t, sum.Scenarios[0].Seconds, 0.0)
	assert.False(t, sum.Scenarios[2].Passed)
	assert.Equal(t, `outcome: got "REJECTED", want "COMPLETED"`, sum.Scenarios[2].Reason)
	assert.NotContains(t, out, "PASS ", "no table lines in JSON")
}

func TestCompletion_FilesAreYAML(t *testing.T) {
	for _, args := range [][]string{{"validate", ""}, {"graph", ""}, {"run", ""}, {"test", ""}, {"replay", "h.jsonl", ""}} {
		out, _, code := wfrun(t, append([]string{"__complete"}, args...)...)
		require.Equal(t, 0, code)
		assert.Contains(t, out, "yaml\nyml\n", "%v", args)
		assert.Contains(t, out, ":8\n", "%v: filter files by extension", args)
	}
}

func TestReplay_OutputJSONAndYAML(t *testing.T) {
	trace, errOut, code := wfrun(t, "run", "--json", approved)
	require.Equal(t, 0, code, errOut)
	file := filepath.Join(t.TempDir(), "approved.jsonl")
	require.NoError(t, os.WriteFile(file, []byte(trace), 0o644))
	const wf = "../../examples/refund/workflow.yaml"

	out, errOut, code := wfrun(t, "replay", "-o", "json", file, wf)
	require.Equal(t, 0, code, errOut)
	var rep struct {
		Workflow   string           `json:"workflow"`
		Steps      []map[string]any `json:"steps"`
		Divergence map[string]any   `json:"divergence"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &rep), "stdout holds only the report: %s", out)
	assert.Contains(t, errOut, "no divergence: 4 decisions replayed against refund", "the verdict goes to stderr")
	assert.Equal(t, "refund", rep.Workflow)
	assert.NotEmpty(t, rep.Steps)
	assert.Nil(t, rep.Divergence)
	viaFlag, _, _ := wfrun(t, "replay", "--json", file, wf)
	assert.Equal(t, out, viaFlag)

	out, errOut, code = wfrun(t, "replay", "-o", "yaml", file, wf)
	require.Equal(t, 0, code, errOut)
	var doc map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(out), &doc))
	assert.Equal(t, "refund", doc["workflow"])
	assert.Len(t, doc["steps"], len(rep.Steps))
}
