package server_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/boltstore"
	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/server"
)

// BenchmarkServer_ListInstances is GET /v1/instances?limit=50 on a server
// (without NATS) whose store holds 2,000 or 20,000 finished instances: the
// page costs the same.
func BenchmarkServer_ListInstances(b *testing.B) {
	for _, total := range []int{2_000, 20_000} {
		data := b.TempDir()
		st, err := boltstore.Open(filepath.Join(data, server.StoreFile), boltstore.WithNoSync(true))
		require.NoError(b, err)
		at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
		for k := range total {
			// No hash: the server needs no engine for these.
			snap := record.Snapshot{ID: fmt.Sprintf("old-%06d", k), Workflow: "echo", Version: 1, Status: record.StatusCompleted,
				State: "DONE", Step: 1, Commits: 1, Created: at, Updated: at}
			require.NoError(b, st.Commit(context.Background(), record.Step{Snapshot: snap}))
		}
		require.NoError(b, st.Close())
		s, err := server.New(context.Background(), server.Config{
			WorkflowsDir: workflowsDir(b, "", map[string]string{"echo.yaml": echoFlow}), DataDir: data, NATS: server.NoNATS,
		})
		require.NoError(b, err)
		b.Cleanup(s.Close)
		h := s.Handler()
		b.Run(fmt.Sprintf("total=%d", total), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, httptest.NewRequest("GET", "/v1/instances?limit=50", nil))
				if rec.Code != http.StatusOK {
					b.Fatalf("status %d: %s", rec.Code, rec.Body)
				}
			}
		})
	}
}
