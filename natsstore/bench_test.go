package natsstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/batonhq/baton/natsserver"
	"github.com/batonhq/baton/natsstore"
	"github.com/batonhq/baton/record"
)

// BenchmarkNATSStoreCommit commits steps of one instance after another,
// each a snapshot, two history entries and an outbox item settling the
// previous one: as a refund step writes. The server syncs to disk on every
// write, or every 100ms with SyncInterval.
func BenchmarkNATSStoreCommit(b *testing.B) {
	for _, bc := range []struct {
		name string
		sync time.Duration
	}{{"SyncEveryWrite", 0}, {"SyncInterval100ms", 100 * time.Millisecond}} {
		b.Run(bc.name, func(b *testing.B) {
			srv := startServer(b, natsserver.Config{SyncInterval: bc.sync})
			s := openStore(b, srv, natsstore.Config{})
			ctx := context.Background()
			now := time.Now().UTC()
			snap := record.Snapshot{
				ID: "bench", Workflow: "refund", Version: 1, Hash: "sha256:x", Status: record.StatusRunning,
				State: "REVIEWING", Visits: map[string]int{"REVIEWING": 1},
				Input: map[string]any{"order_id": "1", "amount": 50}, Context: map[string]any{"order_id": "1"},
				Created: now, Updated: now,
			}
			entries := []record.Entry{
				{Kind: record.KindAgentRun, Agent: "seller", Result: map[string]any{"approval": "APPROVED"}, Time: now},
				{Kind: record.KindRuleFired, Rule: "approved", To: "payment", Time: now},
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				snap.Step, snap.Commits = i+1, i+1
				entries[0].Seq, entries[1].Seq = 2*i+1, 2*i+2
				key := fmt.Sprintf("bench:%d", i+1)
				rec := record.Step{
					Snapshot: snap, Entries: entries,
					Outbox:  []record.Outgoing{{Key: key, Kind: record.OutgoingDispatch, Step: i + 1, State: "REVIEWING", To: "seller", Created: now}},
					Settled: []string{fmt.Sprintf("bench:%d", i)},
				}
				if err := s.Commit(ctx, rec); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "commits/s")
		})
	}
}
