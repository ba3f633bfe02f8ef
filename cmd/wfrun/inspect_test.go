package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/boltstore"
	"github.com/batonhq/baton/record"
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

func TestInspect_DeadLettersAndOutbox(t *testing.T) {
	file := filepath.Join(t.TempDir(), "baton.db")
	st, err := boltstore.Open(file)
	require.NoError(t, err)
	ctx := context.Background()
	at := time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)
	snap := record.Snapshot{ID: "i-1", Workflow: "refund", Version: 1, Hash: "h", Status: record.StatusRunning, State: "PAYING", Step: 3, Created: at, Updated: at}
	require.NoError(t, st.Commit(ctx, record.Step{
		Snapshot: snap,
		Entries:  []record.Entry{{Seq: 1, Time: at, Kind: record.KindHandoff, Step: 3, State: "PAYING", From: "seller", To: "payment", HandoffID: "h-3"}},
		Outbox:   []record.Outgoing{{Key: "i-1:3", Kind: record.OutgoingHandoff, Step: 3, State: "PAYING", From: "seller", To: "payment", HandoffID: "h-3", Created: at}},
	}))
	require.NoError(t, st.AddDeadLetter(ctx, record.DeadLetter{
		MessageID: "m-1", Type: "HANDOFF", From: "seller", To: "payment", Reason: "queue_overflow",
		Instance: "i-1", Step: 3, Key: "i-1:3", At: at, Attempts: 1, LastError: "payment queue full",
	}))
	require.NoError(t, st.Close())

	out, errOut, code := wfrun(t, "inspect", "--store", file, "--dead-letters")
	require.Equal(t, 0, code, errOut)
	assert.Regexp(t, `1\s+2026-11-21T09:00:00Z\s+queue_overflow\s+HANDOFF\s+seller\s+payment\s+i-1\s+3\s+payment queue full`, out)

	out, errOut, code = wfrun(t, "inspect", "--store", file, "--dead-letters", "--json")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, `"message_id":"m-1"`)

	out, errOut, code = wfrun(t, "inspect", "--store", file, "i-1")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "outbox (sent again on resume until settled)")
	assert.Regexp(t, `i-1:3\s+handoff\s+PAYING\s+seller\s+payment\s+h-3`, out)

	_, _, code = wfrun(t, "inspect", "--store", file, "--dead-letters", "i-1")
	assert.Equal(t, 2, code, "--dead-letters takes no instance")
}
