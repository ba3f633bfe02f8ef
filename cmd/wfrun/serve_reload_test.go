//go:build unix

package main

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// SIGHUP makes `wfrun serve` reload its workflows: with the watching off,
// a changed file becomes current only on the signal.
func TestServe_SIGHUPReloadsTheWorkflows(t *testing.T) {
	dir := t.TempDir()
	flow := "workflow: hup\ninitial: WAITING\nstates:\n  WAITING: {wait: {signals: [go]}}\n  DONE: {terminal: true}\nrules:\n  - {id: go, from: WAITING, trigger: go, next: DONE}\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "hup.yaml"), []byte(flow), 0o600))
	srv := startServe(t, "--workflows", dir, "--data", t.TempDir(), "--watch-every", "0")
	current := func() int {
		resp, err := http.Get(srv.url + "/v1/workflows/hup")
		require.NoError(t, err)
		defer resp.Body.Close()
		var w struct{ Version int }
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&w))
		return w.Version
	}
	require.Equal(t, 1, current())
	require.NoError(t, os.WriteFile(filepath.Join(dir, "hup.yaml"), []byte(strings.Replace(flow, "initial:", "version: 2\ninitial:", 1)), 0o600))
	require.NoError(t, srv.cmd.Process.Signal(syscall.SIGHUP))
	deadline := time.Now().Add(time.Minute) // a bound, not a timing assertion
	for current() != 2 {
		require.True(t, time.Now().Before(deadline), "version 2 never became current")
		time.Sleep(5 * time.Millisecond)
	}
}
