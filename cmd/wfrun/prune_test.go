package main

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/server"
)

func TestPrune(t *testing.T) {
	store := filepath.Join(t.TempDir(), "baton.db")
	if _, errOut, code := wfrun(t, "run", "--store", store, approved); code != 0 {
		t.Fatalf("run: exit %d: %s", code, errOut)
	}
	before, _, _ := wfrun(t, "inspect", "--store", store)
	if !strings.Contains(before, "completed") {
		t.Fatalf("got\n%s\nwant a completed instance to prune", before)
	}
	out, errOut, code := wfrun(t, "prune", "--store", store, "--before", "1970-01-01T00:00:00Z")
	if code != 0 || !strings.HasPrefix(out, "pruned 0 ") {
		t.Errorf("prune before 1970: got exit %d, %q %q, want 0 pruned", code, out, errOut)
	}
	out, errOut, code = wfrun(t, "prune", "--store", store, "--before", "-24h")
	if code != 2 {
		t.Errorf("negative duration: got exit %d (%s%s), want 2", code, out, errOut)
	}
	future := time.Now().Add(1000 * 24 * time.Hour).UTC().Format(time.RFC3339)
	out, errOut, code = wfrun(t, "prune", "--store", store, "--before", future)
	if code != 0 || !strings.HasPrefix(out, "pruned 1 ") {
		t.Errorf("prune before %s: got exit %d, %q %q, want 1 pruned", future, code, out, errOut)
	}
	after, _, _ := wfrun(t, "inspect", "--store", store)
	if strings.Contains(after, "completed") {
		t.Errorf("got\n%s\nafter prune, want no instance", after)
	}

	tests := []struct {
		name string
		args []string
		want int
	}{
		{"no store", []string{"prune", "--before", "1h"}, 2},
		{"no before", []string{"prune", "--store", store}, 2},
		{"bad before", []string{"prune", "--store", store, "--before", "yesterday"}, 2},
		{"missing file", []string{"prune", "--store", filepath.Join(t.TempDir(), "typo.db"), "--before", "1h"}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, errOut, code := wfrun(t, tt.args...); code != tt.want {
				t.Errorf("got exit %d (%s), want %d", code, errOut, tt.want)
			}
		})
	}
}

// TestPrune_Server prunes through a running server's API, bbolt or NATS,
// where the file cannot be opened: the server has it.
func TestPrune_Server(t *testing.T) {
	for _, mode := range []string{server.NoNATS, ""} {
		t.Run("nats="+mode, func(t *testing.T) {
			ag := newHTTPAgents(t)
			dir := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(dir, "review.yaml"), []byte(strings.ReplaceAll(reviewFlow, "AGENTS", ag.srv.URL)), 0o600))
			t.Setenv("WFRUN_TEST_SECRET", "e2e-secret")
			cfg := server.Config{WorkflowsDir: dir, DataDir: t.TempDir(), NATS: mode}
			if mode == "" {
				cfg.NATSListen = "127.0.0.1:0"
			}
			s, err := server.New(context.Background(), cfg)
			require.NoError(t, err)
			hs := httptest.NewServer(s.Handler())
			defer hs.Close()
			defer s.Close()
			ag.baton.Store(hs.URL)

			_, stderr, code := wfrun(t, "start", "review", "--server", hs.URL, "--input", `{"approve": true}`, "--id", "p-1", "--wait")
			require.Equal(t, 0, code, stderr)
			out, stderr, code := wfrun(t, "prune", "--server", hs.URL, "--before", "2000-01-01T00:00:00Z")
			require.Equal(t, 0, code, stderr)
			assert.Contains(t, out, "pruned 0 finished instances last updated before 2000-01-01T00:00:00Z")
			out, stderr, code = wfrun(t, "prune", "--server", hs.URL, "--before", "0s", "-o", "json")
			require.Equal(t, 0, code, stderr)
			assert.Contains(t, out, `"pruned": 1`)
			_, stderr, code = wfrun(t, "get", "p-1", "--server", hs.URL)
			assert.Equal(t, 1, code)
			assert.Contains(t, stderr, "404 unknown_instance")

			if mode == server.NoNATS {
				_, stderr, code = wfrun(t, "prune", "--store", filepath.Join(cfg.DataDir, server.StoreFile), "--before", "0s")
				assert.Equal(t, 1, code, "the server has the file")
				assert.Contains(t, stderr, "--server URL")
			}
			_, stderr, code = wfrun(t, "prune", "--store", "x.db", "--server", hs.URL, "--before", "0s")
			assert.Equal(t, 2, code, stderr)
		})
	}
}

func TestServe_RetainRefused(t *testing.T) {
	_, stderr, code := wfrun(t, "serve", "--workflows", t.TempDir(), "--retain", "-1h")
	assert.Equal(t, 2, code, stderr)
	assert.Contains(t, stderr, "retain")
}
