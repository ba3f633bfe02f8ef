package boltstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"

	"github.com/batonhq/baton/boltstore"
	"github.com/batonhq/baton/record"
)

// writeFile returns the path of a new file holding b.
func writeFile(t *testing.T, b []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "file.db")
	require.NoError(t, os.WriteFile(path, b, 0o600))
	return path
}

// boltFile returns the path of a bbolt file that edit has written.
func boltFile(t *testing.T, edit func(*bolt.Tx) error) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "file.db")
	db, err := bolt.Open(path, 0o600, nil)
	require.NoError(t, err)
	require.NoError(t, db.Update(edit))
	require.NoError(t, db.Close())
	return path
}

// storeFile returns the path of a closed store holding instances of steps,
// each instance with its last step's outbox item, a dead letter and a
// workflow source.
func storeFile(t testing.TB, instances, steps int) string {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "store.db")
	s, err := boltstore.Open(path, boltstore.WithNoSync(true))
	require.NoError(t, err)
	for i := range instances {
		for n := 1; n <= steps; n++ {
			require.NoError(t, s.Commit(ctx, withOutbox(fmt.Sprintf("inst-%03d", i), n)))
		}
	}
	require.NoError(t, s.AddDeadLetter(ctx, deadLetter(1)))
	require.NoError(t, s.SaveWorkflow(ctx, workflowSource))
	require.NoError(t, s.Close())
	return path
}

func TestOpenErrors(t *testing.T) {
	random := make([]byte, 64<<10)
	for i := range random {
		random[i] = byte(rand.N(256))
	}
	tests := []struct {
		name string
		path func(t *testing.T) string
		want func(t *testing.T, err error)
	}{
		{"empty path", func(*testing.T) string { return "" }, isOpenError},
		{"directory", func(t *testing.T) string { return t.TempDir() }, isOpenError},
		{"missing directory", func(t *testing.T) string { return filepath.Join(t.TempDir(), "no", "such.db") }, isOpenError},
		{"random bytes", func(t *testing.T) string { return writeFile(t, random) }, isCorrupt},
		{"text file", func(t *testing.T) string { return writeFile(t, []byte("workflow: refund\n")) }, isCorrupt},
		{"zeroes", func(t *testing.T) string { return writeFile(t, make([]byte, 32<<10)) }, isCorrupt},
		{"truncated store", func(t *testing.T) string {
			b, err := os.ReadFile(storeFile(t, 1, 1))
			require.NoError(t, err)
			return writeFile(t, b[:4096+100])
		}, isCorrupt},
		{"foreign bbolt file", func(t *testing.T) string {
			return boltFile(t, func(tx *bolt.Tx) error { _, err := tx.CreateBucket([]byte("users")); return err })
		}, func(t *testing.T, err error) {
			var fe *boltstore.FormatError
			require.ErrorAs(t, err, &fe)
			require.Empty(t, fe.Got)
		}},
		{"newer format", func(t *testing.T) string {
			return boltFile(t, func(tx *bolt.Tx) error {
				b, err := tx.CreateBucket([]byte("meta"))
				if err != nil {
					return err
				}
				return b.Put([]byte("format"), []byte("9"))
			})
		}, func(t *testing.T, err error) {
			var fe *boltstore.FormatError
			require.ErrorAs(t, err, &fe)
			require.Equal(t, "9", fe.Got)
			require.Equal(t, "1", fe.Want)
		}},
		{"missing bucket", func(t *testing.T) string {
			return boltFile(t, func(tx *bolt.Tx) error {
				b, err := tx.CreateBucket([]byte("meta"))
				if err != nil {
					return err
				}
				return b.Put([]byte("format"), []byte("1"))
			})
		}, isCorrupt},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := tt.path(t)
			s, err := boltstore.Open(path, boltstore.WithTimeout(10*time.Millisecond))
			if err == nil {
				_ = s.Close()
			}
			require.Error(t, err)
			require.Regexp(t, "^boltstore: ", err.Error())
			tt.want(t, err)
		})
	}
}

func isOpenError(t *testing.T, err error) {
	t.Helper()
	var oe *boltstore.OpenError
	require.ErrorAs(t, err, &oe)
}

func isCorrupt(t *testing.T, err error) {
	t.Helper()
	require.ErrorIs(t, err, boltstore.ErrCorrupt)
	var ce *boltstore.CorruptError
	require.ErrorAs(t, err, &ce)
}

func TestOpenLocked(t *testing.T) {
	_, path := open(t)
	_, err := boltstore.Open(path, boltstore.WithTimeout(5*time.Millisecond))
	require.ErrorIs(t, err, boltstore.ErrLocked)
	isOpenError(t, err)
}

// TestCorruptRecords damages single records: the reads that meet them fail
// with a *CorruptError naming the instance, the others still work.
func TestCorruptRecords(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name   string
		bucket string
		key    func(id string) []byte
		value  []byte
	}{
		{"snapshot not JSON", "instances", func(id string) []byte { return []byte(id) }, []byte("{not json")},
		{"snapshot of another type", "instances", func(id string) []byte { return []byte(id) }, []byte(`{"step":"three"}`)},
		{"history not JSON", "history", func(id string) []byte { return historyKey(id, 999) }, []byte("[{")},
		{"history key too short", "history", func(id string) []byte { return historyKey(id, 999)[:len(id)+3] }, []byte("[]")},
		{"outbox item not JSON", "outbox", func(id string) []byte { return outboxKey(id, id+":2") }, []byte(`{"key":`)},
		{"outbox item under another key", "outbox", func(id string) []byte { return outboxKey(id, id+":2") }, []byte(`{"key":"other","step":2}`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := storeFile(t, 3, 2)
			db, err := bolt.Open(path, 0o600, nil)
			require.NoError(t, err)
			require.NoError(t, db.Update(func(tx *bolt.Tx) error {
				return tx.Bucket([]byte(tt.bucket)).Put(tt.key("inst-001"), tt.value)
			}))
			require.NoError(t, db.Close())

			s, err := boltstore.Open(path)
			require.NoError(t, err)
			defer s.Close()
			var ce *boltstore.CorruptError
			switch tt.bucket {
			case "instances":
				_, err = s.Instance(ctx, "inst-001")
				require.ErrorAs(t, err, &ce)
				require.Equal(t, "inst-001", ce.Instance)
				_, err = s.Instances(ctx)
				require.ErrorIs(t, err, boltstore.ErrCorrupt)
			case "history":
				_, err = s.History(ctx, "inst-001")
				require.ErrorAs(t, err, &ce)
				require.Equal(t, "inst-001", ce.Instance)
			case "outbox":
				_, err = s.Outbox(ctx, "inst-001")
				require.ErrorAs(t, err, &ce)
				require.Equal(t, "inst-001", ce.Instance)
			}
			require.Contains(t, err.Error(), path)
			for _, id := range []string{"inst-000", "inst-002"} {
				h, err := s.History(ctx, id)
				require.NoError(t, err)
				require.Len(t, h, 6)
				out, err := s.Outbox(ctx, id)
				require.NoError(t, err)
				require.Equal(t, []string{id + ":2"}, keys(out))
			}
		})
	}
}

// TestCorruptDeadLetterAndWorkflow damages a dead letter and a workflow
// source: reading them fails with a *CorruptError.
func TestCorruptDeadLetterAndWorkflow(t *testing.T) {
	ctx := context.Background()
	path := storeFile(t, 1, 1)
	db, err := bolt.Open(path, 0o600, nil)
	require.NoError(t, err)
	require.NoError(t, db.Update(func(tx *bolt.Tx) error {
		if err := tx.Bucket([]byte("deadletters")).Put([]byte{0, 0, 0, 0, 0, 0, 0, 1}, []byte(`{"seq":`)); err != nil {
			return err
		}
		return tx.Bucket([]byte("workflows")).Put([]byte(workflowSource.Hash), []byte(`{"source":"not base64!"}`))
	}))
	require.NoError(t, db.Close())

	s, err := boltstore.Open(path)
	require.NoError(t, err)
	defer s.Close()
	_, err = s.DeadLetters(ctx)
	isCorrupt(t, err)
	require.ErrorContains(t, err, "dead letter 1")
	_, err = s.Workflow(ctx, workflowSource.Hash)
	isCorrupt(t, err)
	require.ErrorContains(t, err, workflowSource.Hash)
}

// TestOpenAddsNewBuckets opens a file of format 1 written before the outbox,
// deadletters and workflows buckets: it opens as it is, keeps its instances
// and takes the new records.
func TestOpenAddsNewBuckets(t *testing.T) {
	ctx := context.Background()
	path := storeFile(t, 2, 2)
	db, err := bolt.Open(path, 0o600, nil)
	require.NoError(t, err)
	require.NoError(t, db.Update(func(tx *bolt.Tx) error {
		return errors.Join(tx.DeleteBucket([]byte("outbox")), tx.DeleteBucket([]byte("deadletters")), tx.DeleteBucket([]byte("workflows")))
	}))
	require.NoError(t, db.Close())

	s, err := boltstore.Open(path)
	require.NoError(t, err)
	defer s.Close()
	h, err := s.History(ctx, "inst-001")
	require.NoError(t, err)
	require.Len(t, h, 6)
	out, err := s.Outbox(ctx, "inst-001")
	require.NoError(t, err)
	require.Empty(t, out)
	_, err = s.Workflow(ctx, workflowSource.Hash)
	require.ErrorIs(t, err, record.ErrUnknownWorkflow)

	require.NoError(t, s.Commit(ctx, withOutbox("inst-001", 3)))
	require.NoError(t, s.AddDeadLetter(ctx, deadLetter(1)))
	require.NoError(t, s.SaveWorkflow(ctx, workflowSource))
	out, err = s.Outbox(ctx, "inst-001")
	require.NoError(t, err)
	require.Equal(t, []string{"inst-001:3"}, keys(out))
	dead, err := s.DeadLetters(ctx)
	require.NoError(t, err)
	require.Len(t, dead, 1)
	_, err = s.Workflow(ctx, workflowSource.Hash)
	require.NoError(t, err)
}

// historyKey mirrors the package's history keys (see doc.go).
func historyKey(id string, seq uint64) []byte {
	k := append([]byte{byte(len(id))}, id...)
	return append(k, byte(seq>>56), byte(seq>>48), byte(seq>>40), byte(seq>>32), byte(seq>>24), byte(seq>>16), byte(seq>>8), byte(seq))
}

// outboxKey mirrors the package's outbox keys (see doc.go).
func outboxKey(id, key string) []byte {
	return append(append([]byte{byte(len(id))}, id...), key...)
}

// TestDamagedPagesNeverPanic flips random bytes of a store file, many times
// over, and uses every damaged copy: Open and each call either work or fail
// with an error, and never panic. Each copy is used in a child process (this
// test binary, run for this test alone): under -race, Go's pointer checker
// may stop the whole process with a fatal error inside bbolt's page reader
// on a damaged page held in memory it allocated (a check only such builds
// make), which would end the package's tests instead of this one. A child
// stopped that way is counted apart; any panic, and any call that fails
// without a typed error, still fails the test.
func TestDamagedPagesNeverPanic(t *testing.T) {
	if paths := os.Getenv(damagedEnv); paths != "" {
		for _, path := range filepath.SplitList(paths) {
			ok, errs := useDamaged(t, path)
			fmt.Printf("damaged: opened=%v failed=%d\n", ok, errs)
		}
		return
	}
	orig, err := os.ReadFile(storeFile(t, 40, 6))
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(8, 8))
	var paths []string
	for round := range 150 {
		b := append([]byte(nil), orig...)
		for range 1 + rng.IntN(32) {
			b[rng.IntN(len(b))] ^= byte(1 + rng.IntN(255))
		}
		if round%5 == 0 { // also hit the meta pages and the root pages
			b[rng.IntN(4*4096)] ^= 0xff
		}
		paths = append(paths, writeFile(t, b))
	}
	opened, failed, checked := 0, 0, 0
	for len(paths) > 0 {
		// One child uses the files left, one after the other, and says
		// how each went; one stopped by the pointer checker is left out
		// and the next child goes on after it.
		cmd := exec.Command(os.Args[0], "-test.run=^TestDamagedPagesNeverPanic$", "-test.count=1")
		cmd.Env = append(os.Environ(), damagedEnv+"="+strings.Join(paths, string(filepath.ListSeparator)))
		out, err := cmd.CombinedOutput()
		done := 0
		for _, line := range strings.Split(string(out), "\n") {
			var ok bool
			var errs int
			if _, serr := fmt.Sscanf(line, "damaged: opened=%t failed=%d", &ok, &errs); serr != nil {
				continue
			}
			done++
			if ok {
				opened++
			}
			failed += errs
		}
		if err != nil {
			require.True(t, raceBuild && bytes.Contains(out, []byte("fatal error: checkptr")), "file %d of those left:\n%s", done, out)
			checked++
			done++
		}
		require.LessOrEqual(t, done, len(paths))
		paths = paths[done:]
	}
	t.Logf("%d of 150 damaged files opened; %d calls on them failed; %d stopped by the pointer checker", opened, failed, checked)
	require.Positive(t, failed, "no call met the damage: the test damages nothing it reads")
}

// damagedEnv names, for a child process of TestDamagedPagesNeverPanic, the
// damaged file it uses.
const damagedEnv = "BOLTSTORE_TEST_DAMAGED_FILE"

// useDamaged opens the file at path and calls everything on it. It reports
// whether the file opened and how many calls failed.
func useDamaged(t testing.TB, path string) (opened bool, failed int) {
	ctx := context.Background()
	check := func(err error) {
		requireTyped(t, err)
		if err != nil && !errors.Is(err, record.ErrUnknownInstance) && !errors.Is(err, record.ErrUnknownWorkflow) {
			failed++
		}
	}
	s, err := boltstore.Open(path, boltstore.WithNoSync(true), boltstore.WithTimeout(10*time.Millisecond))
	if err != nil {
		check(err)
		return false, failed
	}
	defer s.Close()
	all, err := s.Instances(ctx)
	check(err)
	for i := range 40 {
		id := fmt.Sprintf("inst-%03d", i)
		_, err := s.Instance(ctx, id)
		check(err)
		_, err = s.History(ctx, id)
		check(err)
		_, err = s.Outbox(ctx, id)
		check(err)
	}
	for _, snap := range all {
		_, err := s.History(ctx, snap.ID)
		check(err)
	}
	_, err = s.DeadLetters(ctx)
	check(err)
	_, err = s.Workflow(ctx, workflowSource.Hash)
	check(err)
	check(s.Commit(ctx, withOutbox("inst-000", 7)))
	return true, failed
}

// requireTyped accepts no error or one of the package's typed errors.
func requireTyped(t testing.TB, err error) {
	t.Helper()
	var oe *boltstore.OpenError
	var fe *boltstore.FormatError
	var ce *boltstore.CommitError
	switch {
	case err == nil, errors.Is(err, boltstore.ErrCorrupt), errors.Is(err, record.ErrUnknownInstance), errors.Is(err, record.ErrUnknownWorkflow),
		errors.As(err, &oe), errors.As(err, &fe), errors.As(err, &ce):
		return
	}
	t.Fatalf("got %v (%T), want nil or a typed boltstore error", err, err)
}

// FuzzOpen opens arbitrary bytes as a store: never a panic, only errors.
func FuzzOpen(f *testing.F) {
	good, err := os.ReadFile(storeFile(f, 2, 2))
	require.NoError(f, err)
	f.Add(good)
	f.Add([]byte{})
	f.Add([]byte("not a database"))
	f.Add(good[:8192])
	f.Fuzz(func(t *testing.T, b []byte) {
		path := filepath.Join(t.TempDir(), "fuzz.db")
		require.NoError(t, os.WriteFile(path, b, 0o600))
		useDamaged(t, path)
	})
}
