package boltstore_test

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"
)

// recordBuckets are the buckets whose records FuzzRecord damages.
var recordBuckets = []string{"instances", "history", "outbox", "deadletters", "workflows"}

var (
	templateOnce sync.Once
	template     []byte
)

// FuzzRecord replaces the first record of one bucket of a good store with
// arbitrary bytes, then reads everything back as Resume and inspect do, and
// commits: a damaged record is a typed error, never a panic.
func FuzzRecord(f *testing.F) {
	f.Add(uint8(0), []byte(`{"id":"inst-000","status":"running"}`))
	f.Add(uint8(1), []byte(`[{"seq":1,"kind":"started"}]`))
	f.Add(uint8(2), []byte(`{"key":"other","step":-1}`))
	f.Add(uint8(3), []byte(`{"seq":"x"}`))
	f.Add(uint8(4), []byte{0xff, 0x00})
	f.Fuzz(func(t *testing.T, bucket uint8, value []byte) {
		templateOnce.Do(func() {
			b, err := os.ReadFile(storeFile(t, 2, 2))
			require.NoError(t, err)
			template = b
		})
		path := filepath.Join(t.TempDir(), "damaged.db")
		require.NoError(t, os.WriteFile(path, template, 0o600))
		damage(t, path, recordBuckets[int(bucket)%len(recordBuckets)], value)
		useDamaged(t, path)
	})
}

// damage overwrites the first record of bucket with value.
func damage(t *testing.T, path, bucket string, value []byte) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{NoSync: true})
	require.NoError(t, err)
	defer db.Close()
	require.NoError(t, db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte(bucket))
		k, _ := b.Cursor().First()
		if k == nil {
			k = []byte("inst-000")
		}
		return b.Put(append([]byte(nil), k...), append([]byte(nil), value...))
	}))
}
