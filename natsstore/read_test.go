package natsstore_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/natsserver"
	"github.com/batonhq/baton/natsstore"
)

// TestStore_Instances_WhileCommitting lists the instances while steps of
// them are committed: every instance that existed before a listing began
// is in it. (A listing that bounded its scan by the stream's last message
// read before its consumer existed lost the instances committed between the
// two.)
func TestStore_Instances_WhileCommitting(t *testing.T) {
	srv := startServer(t, natsserver.Config{SyncInterval: lazySync})
	s := openStore(t, srv, natsstore.Config{Timeout: testTimeout})
	other := openStore(t, srv, natsstore.Config{Prefix: s.Prefix(), Timeout: testTimeout}) // its listings do not move s's fences
	ctx := context.Background()
	const n = 40
	for i := range n {
		require.NoError(t, s.Commit(ctx, step(fmt.Sprintf("i%02d", i), "a", 1)))
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	errs := make(chan error, 1)
	wg.Go(func() {
		for k := 2; !stop.Load() && k < 10_000; k++ {
			for i := range n {
				if err := s.Commit(ctx, step(fmt.Sprintf("i%02d", i), "a", k)); err != nil {
					errs <- err
					return
				}
			}
		}
	})
	for round := range 100 {
		all, err := other.Instances(ctx)
		require.NoError(t, err)
		require.Len(t, all, n, "listing %d", round)
		for i, snap := range all {
			require.Equal(t, fmt.Sprintf("i%02d", i), snap.ID)
		}
	}
	stop.Store(true)
	wg.Wait()
	close(errs)
	require.NoError(t, <-errs)
}
