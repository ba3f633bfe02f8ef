package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

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

// listStore writes five instances of two workflows, created in an order
// their ids do not follow, and returns the store file.
func listStore(t *testing.T) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "baton.db")
	st, err := boltstore.Open(file)
	require.NoError(t, err)
	ctx := context.Background()
	at := time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)
	for _, s := range []struct {
		id, workflow, state string
		status              record.Status
		minute              int
	}{
		{"a0496f21-1111", "refund", "COMPLETED", record.StatusCompleted, 0},
		{"a0496f22-2222", "refund", "REVIEWING", record.StatusRunning, 5},
		{"b1000000-3333", "travel", "SEARCHING", record.StatusRunning, 10},
		{"b2000000-4444", "travel", "FAILED", record.StatusFailed, 2},
		{"c3000000-5555", "refund", "REJECTED", record.StatusCompleted, 20},
	} {
		created := at.Add(time.Duration(s.minute) * time.Minute)
		snap := record.Snapshot{ID: s.id, Workflow: s.workflow, Version: 1, Hash: "h", Status: s.status, State: s.state, Step: 1, Created: created, Updated: created}
		require.NoError(t, st.Commit(ctx, record.Step{
			Snapshot: snap,
			Entries:  []record.Entry{{Seq: 1, Time: created, Kind: record.KindStarted, Step: 1, State: s.state}},
		}))
	}
	require.NoError(t, st.Close())
	return file
}

// ids returns the first column of a table's rows.
func ids(out string) []string {
	var got []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n")[1:] {
		if f := strings.Fields(l); len(f) > 0 && strings.Contains(f[0], "-") {
			got = append(got, f[0])
		}
	}
	return got
}

func TestInspect_ListsNewestFirstWithTimes(t *testing.T) {
	store := listStore(t)
	out, errOut, code := wfrun(t, "inspect", "--store", store)
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, []string{"c3000000-5555", "b1000000-3333", "a0496f22-2222", "b2000000-4444", "a0496f21-1111"}, ids(out))
	assert.Contains(t, out, "CREATED")
	assert.Regexp(t, `c3000000-5555\s+refund\s+1\s+REJECTED\s+completed\s+1\s+2026-11-21T09:20:00Z`, out)
}

func TestInspect_Filters(t *testing.T) {
	store := listStore(t)
	tests := []struct {
		flags []string
		want  []string
	}{
		{[]string{"--status", "running"}, []string{"b1000000-3333", "a0496f22-2222"}},
		{[]string{"--workflow", "travel"}, []string{"b1000000-3333", "b2000000-4444"}},
		{[]string{"--state", "REVIEWING"}, []string{"a0496f22-2222"}},
		{[]string{"--workflow", "refund", "--status", "completed"}, []string{"c3000000-5555", "a0496f21-1111"}},
		{[]string{"--workflow", "nope"}, nil},
	}
	for _, tt := range tests {
		out, errOut, code := wfrun(t, append([]string{"inspect", "--store", store}, tt.flags...)...)
		require.Equal(t, 0, code, errOut)
		assert.Equal(t, tt.want, ids(out), "%v", tt.flags)
	}
	_, errOut, code := wfrun(t, "inspect", "--store", store, "--status", "done")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, `unknown --status "done"`)
}

func TestInspect_Pages(t *testing.T) {
	store := listStore(t)
	out, errOut, code := wfrun(t, "inspect", "--store", store, "--limit", "2")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, []string{"c3000000-5555", "b1000000-3333"}, ids(out))
	assert.Contains(t, out, "3 more; next page: --after b1000000-3333")

	out, _, code = wfrun(t, "inspect", "--store", store, "--limit", "2", "--after", "b1000000-3333")
	require.Equal(t, 0, code)
	assert.Equal(t, []string{"a0496f22-2222", "b2000000-4444"}, ids(out))
	assert.Contains(t, out, "1 more; next page: --after b2000000-4444")

	out, _, code = wfrun(t, "inspect", "--store", store, "--limit", "2", "--after", "b2000000-4444")
	require.Equal(t, 0, code)
	assert.Equal(t, []string{"a0496f21-1111"}, ids(out))
	assert.NotContains(t, out, "next page")

	out, errOut, code = wfrun(t, "inspect", "--store", store, "--limit", "1", "-o", "json")
	require.Equal(t, 0, code)
	var list []map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &list))
	require.Len(t, list, 1)
	assert.Contains(t, errOut, "4 more; next page: --after c3000000-5555", "the hint goes to stderr beside JSON")

	_, _, code = wfrun(t, "inspect", "--store", store, "--after", "nope")
	assert.Equal(t, 2, code)
	_, _, code = wfrun(t, "inspect", "--store", store, "--limit", "-1")
	assert.Equal(t, 2, code)
}

func TestInspect_IDPrefixes(t *testing.T) {
	store := listStore(t)
	out, errOut, code := wfrun(t, "inspect", "--store", store, "a0496f22")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "instance a0496f22-2222 of refund v1: running in REVIEWING after 1 step")
	assert.Contains(t, out, "created 2026-11-21T09:05:00Z")

	_, errOut, code = wfrun(t, "inspect", "--store", store, "a0496f2")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, `instance prefix "a0496f2" is ambiguous; it matches 2 instances:`)
	assert.Contains(t, errOut, "a0496f22-2222  refund  REVIEWING  running")
	assert.Contains(t, errOut, "a0496f21-1111  refund  COMPLETED  completed")

	_, errOut, code = wfrun(t, "inspect", "--store", store, "zz")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "unknown instance: zz")

	history, _, code := wfrun(t, "inspect", "--store", store, "-o", "json", "c3")
	require.Equal(t, 0, code)
	assert.Contains(t, history, `"kind":"started"`)
}

func TestInspect_OutputYAML(t *testing.T) {
	store := listStore(t)
	out, errOut, code := wfrun(t, "inspect", "--store", store, "-o", "yaml", "--workflow", "travel")
	require.Equal(t, 0, code, errOut)
	var list []map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(out), &list))
	require.Len(t, list, 2)
	assert.Equal(t, "b1000000-3333", list[0]["id"])
	assert.Equal(t, "travel", list[0]["workflow"])
}

func TestInspect_CompletesIDsWorkflowsAndStates(t *testing.T) {
	store := listStore(t)
	out, errOut, code := wfrun(t, "__complete", "inspect", "--store", store, "a04")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "a0496f22-2222\trefund REVIEWING running")
	assert.Contains(t, out, "a0496f21-1111\trefund COMPLETED completed")
	assert.NotContains(t, out, "b1000000")

	out, _, _ = wfrun(t, "__complete", "inspect", "--store", store, "--workflow", "")
	assert.Equal(t, []string{"refund", "travel"}, strings.Split(strings.TrimSpace(out), "\n")[:2])

	out, _, _ = wfrun(t, "__complete", "inspect", "--store", store, "--state", "RE")
	assert.Contains(t, out, "REJECTED\n")
	assert.Contains(t, out, "REVIEWING\n")
	assert.NotContains(t, out, "FAILED")

	out, _, _ = wfrun(t, "__complete", "inspect", "--store", store, "--status", "")
	assert.Contains(t, out, "running\n")

	out, _, _ = wfrun(t, "__complete", "inspect", "--store", filepath.Join(t.TempDir(), "none.db"), "")
	assert.NotContains(t, out, "-", "no store, no ids")

	out, _, _ = wfrun(t, "completion", "bash")
	assert.Contains(t, out, "bash completion", "cobra's completion scripts are there")
}

func TestRun_StoreKeepsWallClockTimes(t *testing.T) {
	store := filepath.Join(t.TempDir(), "baton.db")
	before := time.Now().Add(-time.Second)
	_, errOut, code := wfrun(t, "run", "--store", store, approved)
	require.Equal(t, 0, code, errOut)
	after := time.Now()
	out, errOut, code := wfrun(t, "inspect", "--store", store, "-o", "json")
	require.Equal(t, 0, code, errOut)
	var list []record.Snapshot
	require.NoError(t, json.Unmarshal([]byte(out), &list))
	require.Len(t, list, 1)
	created := list[0].Created
	assert.False(t, created.Before(before) || created.After(after), "created %s, want between %s and %s (not the scenario clock's 2025)", created, before, after)
	assert.False(t, list[0].Updated.Before(created))
}

func TestInspect_ListFlagsWithAnInstanceAreAUsageError(t *testing.T) {
	store := listStore(t)
	_, errOut, code := wfrun(t, "inspect", "--store", store, "--status", "running", "a0496f22")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "--status applies to the instance list")
	_, _, code = wfrun(t, "inspect", "--store", store, "--dead-letters", "--limit", "3")
	assert.Equal(t, 2, code)
}

func TestInspect_ShowsTheLinkBetweenParentAndChild(t *testing.T) {
	store := filepath.Join(t.TempDir(), "baton.db")
	_, errOut, code := wfrun(t, "run", "--store", store, "../../examples/document-review/scenarios/approved.yaml")
	require.Equal(t, 0, code, errOut)
	st, err := boltstore.OpenReadOnly(store)
	require.NoError(t, err)
	snaps, err := st.Instances(context.Background())
	require.NoError(t, err)
	require.NoError(t, st.Close())
	require.Len(t, snaps, 2, "the parent and its kyc child")
	var parent, child string
	for _, s := range snaps {
		if s.Workflow == "kyc" {
			child = s.ID
		} else {
			parent = s.ID
		}
	}
	require.Equal(t, parent+"/KYC/1", child)

	out, errOut, code := wfrun(t, "inspect", "--store", store, parent)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "children:\n  "+child+"  workflow kyc, from state KYC: completed in VERIFIED after 2 steps")
	out, errOut, code = wfrun(t, "inspect", "--store", store, child)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "child of "+parent+" (workflow document-review), started by its state KYC")
}
