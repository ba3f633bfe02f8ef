package engine_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/batonhq/baton/boltstore"
	"github.com/batonhq/baton/natsserver"
	"github.com/batonhq/baton/natsstore"
	"github.com/batonhq/baton/record"
)

// storeNames are the stores the resume tests run on, in order.
var storeNames = []string{"memstore", "boltstore", "natsstore"}

// openStore returns a new, empty store of the kind name, closed when the
// test ends. A store kept across two engines of one test plays a process
// that died and started again.
func openStore(t *testing.T, name string) record.Store {
	t.Helper()
	switch name {
	case "memstore":
		return record.NewMemStore()
	case "boltstore":
		st, err := boltstore.Open(filepath.Join(t.TempDir(), "baton.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.Close() })
		return st
	case "natsstore":
		// A long sync interval: the server's sync timer (racy in
		// nats-server 2.15) never fires during a test.
		srv, err := natsserver.Start(natsserver.Config{Dir: t.TempDir(), SyncInterval: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = srv.Close() })
		nc, err := srv.Connect()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		st, err := natsstore.Open(context.Background(), nc, natsstore.Config{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.Close() })
		return st
	}
	t.Fatalf("unknown store %q", name)
	return nil
}
