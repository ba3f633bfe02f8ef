package natsstore_test

import (
	"testing"

	"github.com/batonhq/baton/natsserver"
	"github.com/batonhq/baton/natsstore"
	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/record/storetest"
)

// TestStore_Conformance runs the store conformance suite, each subtest on a
// store of its own prefix on one server. The server flushes every 100ms
// rather than on every write: the suite checks what the store does, not the
// disk, and commits thousands of steps.
func TestStore_Conformance(t *testing.T) {
	srv := startServer(t, natsserver.Config{SyncInterval: lazySync})
	storetest.Run(t, func(t *testing.T) record.Store { return openStore(t, srv, natsstore.Config{Timeout: testTimeout}) })
}
