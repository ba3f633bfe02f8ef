package boltstore

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"
)

// TestGroupFailureIsolated runs writes of which some fail or panic in shared
// transactions: each caller gets its own result, the failing writes leave
// nothing behind, and the others all land.
func TestGroupFailureIsolated(t *testing.T) {
	db, err := bolt.Open(filepath.Join(t.TempDir(), "g.db"), 0o600, &bolt.Options{NoSync: true})
	require.NoError(t, err)
	defer db.Close()
	require.NoError(t, db.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucket([]byte("b")); return err }))
	g := &group{db: db, max: 8}

	errBad := errors.New("bad write")
	const callers = 200
	results := make([]error, callers)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() {
			results[i] = g.do(func(tx *bolt.Tx) error {
				if err := tx.Bucket([]byte("b")).Put(fmt.Appendf(nil, "k%03d", i), []byte("v")); err != nil {
					return err
				}
				switch i % 10 {
				case 3:
					return errBad
				case 7:
					panic("damaged page")
				}
				return nil
			})
		})
	}
	wg.Wait()
	require.NoError(t, db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("b"))
		for i, err := range results {
			v := b.Get(fmt.Appendf(nil, "k%03d", i))
			switch i % 10 {
			case 3:
				require.ErrorIs(t, err, errBad, "caller %d", i)
				require.Nil(t, v, "caller %d failed but its write landed", i)
			case 7:
				require.ErrorContains(t, err, "damaged page", "caller %d", i)
				require.Nil(t, v, "caller %d panicked but its write landed", i)
			default:
				require.NoError(t, err, "caller %d", i)
				require.Equal(t, "v", string(v), "caller %d", i)
			}
		}
		return nil
	}))
	require.False(t, g.busy, "the last leader must hand back")
	require.Empty(t, g.queue)
}

// TestGroupSharesTransactions checks that concurrent callers do share
// transactions, and that no group exceeds its size. The first transaction
// holds its leader until every other caller has queued behind it, so that
// callers do meet however the scheduler runs them (on a loaded machine they
// may otherwise never overlap).
func TestGroupSharesTransactions(t *testing.T) {
	db, err := bolt.Open(filepath.Join(t.TempDir(), "g.db"), 0o600, &bolt.Options{NoSync: true})
	require.NoError(t, err)
	defer db.Close()
	g := &group{db: db, max: 4}
	var mu sync.Mutex
	perTx := map[*bolt.Tx]int{}
	start := make(chan struct{})
	var first sync.Once
	var wg sync.WaitGroup
	for range 64 {
		wg.Go(func() {
			<-start
			require.NoError(t, g.do(func(tx *bolt.Tx) error {
				first.Do(func() {
					for {
						g.mu.Lock()
						queued := len(g.queue)
						g.mu.Unlock()
						if queued >= 63-g.max {
							return
						}
						time.Sleep(time.Millisecond)
					}
				})
				mu.Lock()
				perTx[tx]++
				mu.Unlock()
				return nil
			}))
		})
	}
	close(start)
	wg.Wait()
	total := 0
	for _, n := range perTx {
		require.LessOrEqual(t, n, 4, "group size")
		total += n
	}
	require.Equal(t, 64, total)
	require.Less(t, len(perTx), 64, "no two of 64 concurrent callers shared a transaction")
}
