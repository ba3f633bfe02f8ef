package natsstore_test

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/batonhq/baton/internal/clustertest"
	"github.com/batonhq/baton/natsserver"
	"github.com/batonhq/baton/natsstore"
)

func TestMain(m *testing.M) {
	// A test on a replicated stream runs this binary again as its servers.
	if code, ok := clustertest.RunChild(); ok {
		os.Exit(code)
	}
	goleak.VerifyTestMain(m)
}

// startServer starts an in-process server in the test's temporary directory
// (or listening on loopback with listen) and stops it when the test ends.
func startServer(t testing.TB, cfg natsserver.Config) *natsserver.Server {
	t.Helper()
	if cfg.Dir == "" {
		cfg.Dir = t.TempDir()
	}
	srv, err := natsserver.Start(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, srv.Close()) })
	return srv
}

func connect(t testing.TB, srv *natsserver.Server) *nats.Conn {
	t.Helper()
	nc, err := srv.Connect()
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	return nc
}

// testTimeout is the store's request timeout in tests: generous, since the
// race detector slows the server too, and a test must not fail on a timing.
const testTimeout = time.Minute

var prefixes atomic.Int64

// openStore opens a store under a prefix of its own on srv, over a
// connection of its own, and closes both when the test ends.
func openStore(t testing.TB, srv *natsserver.Server, cfg natsstore.Config) *natsstore.Store {
	t.Helper()
	if cfg.Prefix == "" {
		cfg.Prefix = fmt.Sprintf("t%d", prefixes.Add(1))
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = testTimeout
	}
	s, err := natsstore.Open(context.Background(), connect(t, srv), cfg)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s
}

// lazySync is the sync interval of the tests that do not need every write
// on disk: long enough that the server's sync timer never fires during a
// test (nats-server 2.15 starts that timer without its lock, which the race
// detector reports when the timer fires early on a loaded machine).
const lazySync = time.Minute
