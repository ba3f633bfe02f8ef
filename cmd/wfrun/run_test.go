package main

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// wfrun runs the CLI in process and returns its output and exit code.
func wfrun(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return wfrunIn(t, "", args...)
}

// wfrunIn is wfrun with stdin as the command's standard input.
func wfrunIn(t *testing.T, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := run(context.Background(), args, strings.NewReader(stdin), &out, &errOut)
	if err != nil && !isReported(err) {
		errOut.WriteString(err.Error())
	}
	return out.String(), errOut.String(), exitCode(err)
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run `go test ./cmd/wfrun -update` to create %s", path)
	assert.Equal(t, string(want), got, "golden file %s is stale; run with -update after checking the diff", path)
}

func TestGraph_Golden(t *testing.T) {
	for _, ex := range []string{"refund", "jetvision", "travel", "approval"} {
		for _, format := range []string{"mermaid", "dot"} {
			t.Run(ex+"/"+format, func(t *testing.T) {
				out, errOut, code := wfrun(t, "graph", "../../examples/"+ex+"/workflow.yaml", "--format", format)
				require.Equal(t, 0, code, errOut)
				golden(t, ex+"."+format, out)
			})
		}
	}
}

func TestValidate_Examples(t *testing.T) {
	out, errOut, code := wfrun(t, "validate", "--strict", "../../examples/refund/workflow.yaml", "../../examples/jetvision/workflow.yaml")
	assert.Equal(t, 0, code, out+errOut)
	assert.Contains(t, out, "refund/workflow.yaml: ok")
	assert.Contains(t, out, "jetvision/workflow.yaml: ok")
}

func TestValidate_BrokenWorkflowPrintsEveryProblem(t *testing.T) {
	out, _, code := wfrun(t, "validate", "testdata/broken.yaml")
	assert.Equal(t, 1, code)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.GreaterOrEqual(t, len(lines), 3, out)
	assert.Contains(t, out, "testdata/broken.yaml:1:11: ", "the bad workflow name is reported at its value")
	assert.Contains(t, out, `testdata/broken.yaml:12:5: unknown key "nxt" (did you mean "next"?)`)
	assert.Contains(t, out, "testdata/broken.yaml: invalid")
}

func TestExitCodes(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want int
	}{
		{"valid", []string{"validate", "../../examples/refund/workflow.yaml"}, 0},
		{"invalid workflow", []string{"validate", "testdata/broken.yaml"}, 1},
		{"missing file", []string{"validate", "testdata/nope.yaml"}, 1},
		{"no files", []string{"validate"}, 2},
		{"unknown command", []string{"frobnicate"}, 2},
		{"unknown flag", []string{"validate", "--nope", "x.yaml"}, 2},
		{"bad graph format", []string{"graph", "--format", "png", "../../examples/refund/workflow.yaml"}, 2},
		{"graph of an invalid workflow", []string{"graph", "testdata/broken.yaml"}, 1},
		{"graph needs one file", []string{"graph"}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := wfrun(t, tt.args...)
			assert.Equal(t, tt.want, code, "stdout: %s\nstderr: %s", out, errOut)
		})
	}
}
