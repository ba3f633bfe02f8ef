package record_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/cputime"
	"github.com/batonhq/baton/record"
)

// refundCommits are the commits of a refund instance as the engine makes
// them: five steps of four or five entries, the agents' results in them.
func refundCommits(id string, at time.Time) []record.Step {
	agents := []string{"customer", "seller", "payment", "notification"}
	results := []map[string]any{{"refund_eligible": true, "order_id": "1"}, {"approval": "APPROVED", "approver": "seller"},
		{"transaction_id": "TX-1", "amount": 50}, {"sent": true}}
	snap := record.Snapshot{ID: id, Workflow: "refund", Version: 1, Status: record.StatusRunning, State: "VALIDATING",
		Input: map[string]any{"order_id": "1", "amount": 50}, Context: map[string]any{}, Created: at, Updated: at}
	steps := []record.Step{{Snapshot: snap, Entries: []record.Entry{
		{Seq: 1, Time: at, Kind: record.KindStarted, State: "VALIDATING", Result: snap.Input},
		{Seq: 2, Time: at, Kind: record.KindDispatch, Step: 1, Attempt: 1, State: "VALIDATING", Agent: "customer", HandoffID: id + ":1"},
	}}}
	seq := 2
	for k, agent := range agents {
		snap.Step = k + 1
		next := []string{"REVIEWING", "REFUNDING", "NOTIFYING", "COMPLETED"}[k]
		entries := []record.Entry{
			{Time: at, Kind: record.KindAgentRun, Step: k + 1, Attempt: 1, State: snap.State, Agent: agent, Trigger: "done", Result: results[k]},
			{Time: at, Kind: record.KindOutcome, Step: k + 1, State: snap.State, Agent: agent, Trigger: "done", Result: results[k]},
			{Time: at, Kind: record.KindRuleFired, State: snap.State, Agent: agent, Trigger: "done", Rule: "rule_" + agent, Condition: "result.x == true", Next: next},
			{Time: at, Kind: record.KindTransition, State: snap.State, Next: next},
			{Time: at, Kind: record.KindHandoff, Step: k + 2, State: next, From: agent, To: "next", HandoffID: fmt.Sprintf("%s:%d", id, k+2), Reason: "Seller must approve the refund"},
		}
		for j := range entries {
			seq++
			entries[j].Seq = seq
		}
		snap.State = next
		if k == len(agents)-1 {
			snap.Status, snap.Outcome = record.StatusCompleted, next
		}
		steps = append(steps, record.Step{Snapshot: snap, Entries: entries})
	}
	return steps
}

// BenchmarkMemStoreCommit commits whole refund instances to a MemStore
// that keeps the default number of finished ones, and reports the CPU time
// per commit (the garbage collector's included: on a shared machine wall
// time measures the neighbours too) and the heap it retains per finished
// instance (the snapshots' maps and the results, shared by every instance
// here, not counted).
func BenchmarkMemStoreCommit(b *testing.B) {
	ctx := context.Background()
	s := record.NewMemStore()
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	steps := refundCommits("i", at) // a store copies the entries: they are reused
	b.ReportAllocs()
	cpu0 := cputime.Process()
	for n := 0; b.Loop(); n++ {
		id := fmt.Sprintf("i%d", n)
		for _, st := range steps {
			st.Snapshot.ID = id
			if err := s.Commit(ctx, st); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(cputime.Process()-cpu0)/float64(b.N*len(steps)), "cpu-ns/commit")
	runtime.GC()
	runtime.ReadMemStats(&after)
	kept := min(b.N, record.MemRetention)
	b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/float64(kept), "retained-B/instance")
	runtime.KeepAlive(s)
}
