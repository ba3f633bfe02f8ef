package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestInspectAndReplay_RoundTrip(t *testing.T) {
	dir := t.TempDir()
	store := filepath.Join(dir, "baton.db")
	_, errOut, code := wfrun(t, "run", "--store", store, "../../examples/refund/scenarios/payment_fails.yaml")
	require.Equal(t, 0, code, errOut)
	_, errOut, code = wfrun(t, "run", "--store", store, approved)
	require.Equal(t, 0, code, errOut)

	out, errOut, code := wfrun(t, "inspect", "--store", store)
	require.Equal(t, 0, code, errOut)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 3, "a header and one line per instance kept: %s", out)
	assert.Regexp(t, `refund\s+1\s+REJECTED\s+completed\s+6`, out)
	assert.Regexp(t, `refund\s+1\s+COMPLETED\s+completed\s+4`, out)

	id := strings.Fields(lines[1])[0]
	out, errOut, code = wfrun(t, "inspect", "--store", store, id)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "STEP  STATE")

	history, errOut, code := wfrun(t, "inspect", "--store", store, "--json", id)
	require.Equal(t, 0, code, errOut)
	file := filepath.Join(dir, "history.jsonl")
	require.NoError(t, os.WriteFile(file, []byte(history), 0o644))

	out, errOut, code = wfrun(t, "replay", file, "../../examples/refund/workflow.yaml")
	assert.Equal(t, 0, code, out+errOut)
	assert.Contains(t, out, "no divergence")

	_, _, code = wfrun(t, "inspect", "--store", store, "no-such-instance")
	assert.Equal(t, 1, code)
	_, _, code = wfrun(t, "inspect")
	assert.Equal(t, 2, code, "--store is required")
}

func TestReplay_DivergenceExitsOne(t *testing.T) {
	dir := t.TempDir()
	trace, errOut, code := wfrun(t, "run", "--json", approved)
	require.Equal(t, 0, code, errOut)
	file := filepath.Join(dir, "approved.jsonl")
	require.NoError(t, os.WriteFile(file, []byte(trace), 0o644))

	src, err := os.ReadFile("../../examples/refund/workflow.yaml")
	require.NoError(t, err)
	changed := strings.Replace(string(src), `condition: result.approval == "APPROVED"`, `condition: result.approval == "YES"`, 1)
	wf := filepath.Join(dir, "workflow.yaml")
	require.NoError(t, os.WriteFile(wf, []byte(changed), 0o644))

	out, _, code := wfrun(t, "replay", file, wf)
	assert.Equal(t, 1, code)
	assert.Contains(t, out, "divergence at step 2 (state REVIEWING, trigger reviewed): the rule differs: recorded rule approved -> REFUNDING (hand-off to payment), now rule undecided -> ESCALATED (hand-off to supervisor)")

	_, _, code = wfrun(t, "replay", file)
	assert.Equal(t, 2, code)
	_, _, code = wfrun(t, "replay", filepath.Join(dir, "missing.jsonl"), wf)
	assert.Equal(t, 1, code)
}
