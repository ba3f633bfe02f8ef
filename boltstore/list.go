package boltstore

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"

	"github.com/batonhq/baton/record"
	bolt "go.etcd.io/bbolt"
)

// The listing index: bucketListing numbers each instance in the order of
// its first commit (8-byte big-endian number -> its workflow and id), so
// that a cursor walks it newest first; bucketListed is the way back, from
// an id to its number, for Prune.
var (
	bucketListing = []byte("listing")
	bucketListed  = []byte("listed")
)

var _ record.Lister = (*Store)(nil)

// listingValue is an index entry: the workflow's length, the workflow and
// the id, so that a list of one workflow skips the others without decoding
// their snapshots.
func listingValue(workflow, id string) []byte {
	v := binary.AppendUvarint(make([]byte, 0, binary.MaxVarintLen64+len(workflow)+len(id)), uint64(len(workflow)))
	return append(append(v, workflow...), id...)
}

func parseListingValue(v []byte) (workflow, id string, ok bool) {
	n, k := binary.Uvarint(v)
	if k <= 0 || n > uint64(len(v)-k) {
		return "", "", false
	}
	return string(v[k : k+int(n)]), string(v[k+int(n):]), true
}

func seqKey(seq uint64) []byte { return binary.BigEndian.AppendUint64(nil, seq) }

// index numbers a new instance in the listing; the caller has checked that
// the instances bucket does not hold it yet.
func index(tx *bolt.Tx, workflow, id string) error {
	listing := tx.Bucket(bucketListing)
	seq, err := listing.NextSequence()
	if err != nil {
		return err
	}
	if err := listing.Put(seqKey(seq), listingValue(workflow, id)); err != nil {
		return err
	}
	return tx.Bucket(bucketListed).Put([]byte(id), seqKey(seq))
}

// unindex removes a deleted instance from the listing.
func unindex(tx *bolt.Tx, id string) error {
	listed := tx.Bucket(bucketListed)
	seq := listed.Get([]byte(id))
	if seq == nil {
		return nil
	}
	if err := tx.Bucket(bucketListing).Delete(seq); err != nil {
		return err
	}
	return listed.Delete([]byte(id))
}

// backfill indexes the instances of a file written before the listing
// existed, oldest first by created time, then id.
func backfill(tx *bolt.Tx, path string) error {
	var all []record.Snapshot
	err := tx.Bucket(bucketInstances).ForEach(func(k, v []byte) error {
		snap, err := decodeSnapshot(v)
		if err != nil {
			return &CorruptError{Path: path, Instance: string(k), Err: err}
		}
		snap.ID = string(k)
		all = append(all, snap)
		return nil
	})
	if err != nil {
		return err
	}
	slices.SortFunc(all, func(a, b record.Snapshot) int {
		if c := a.Created.Compare(b.Created); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	for _, snap := range all {
		if err := index(tx, snap.Workflow, snap.ID); err != nil {
			return err
		}
	}
	return nil
}

// createListing adds the listing buckets to a file without them, indexing
// the instances it holds.
func createListing(tx *bolt.Tx, path string) error {
	if tx.Bucket(bucketListing) != nil && tx.Bucket(bucketListed) != nil {
		return nil
	}
	for _, name := range [][]byte{bucketListing, bucketListed} {
		if err := tx.DeleteBucket(name); err != nil && tx.Bucket(name) != nil {
			return &CorruptError{Path: path, Err: fmt.Errorf("reset bucket %q: %w", name, err)}
		}
	}
	if err := createBuckets(tx, path, [][]byte{bucketListing, bucketListed}, false); err != nil {
		return err
	}
	return backfill(tx, path)
}

// List implements record.Lister: it walks the listing index from the
// cursor down, reading the snapshot of each instance its workflow filter
// lets through. A read-only file of an older release, without the index,
// is listed from a full read.
func (s *Store) List(ctx context.Context, q record.ListQuery) (page []record.Snapshot, next string, err error) {
	if ctx == nil {
		return nil, "", record.ErrNilContext
	}
	var fallback bool
	err = s.view(ctx, "", func(tx *bolt.Tx) error {
		listing := tx.Bucket(bucketListing)
		if listing == nil {
			fallback = true
			return nil
		}
		page, next, err = s.listFrom(ctx, tx, listing.Cursor(), q)
		return err
	})
	if err != nil || !fallback {
		return page, next, err
	}
	all, err := s.Instances(ctx)
	if err != nil {
		return nil, "", err
	}
	return record.ListAll(all, q)
}

func (s *Store) listFrom(ctx context.Context, tx *bolt.Tx, c *bolt.Cursor, q record.ListQuery) ([]record.Snapshot, string, error) {
	below, err := record.ParseSeqCursor(q.After)
	if err != nil {
		return nil, "", err
	}
	var k, v []byte
	if below == 0 {
		k, v = c.Last()
	} else {
		// Seek finds the first key at or after below; the page starts
		// before it.
		if k, _ = c.Seek(seqKey(below)); k == nil {
			k, v = c.Last()
		} else {
			k, v = c.Prev()
		}
	}
	instances := tx.Bucket(bucketInstances)
	var (
		out  []record.Snapshot
		last uint64
	)
	for ; k != nil; k, v = c.Prev() {
		if err := ctx.Err(); err != nil {
			return nil, "", err
		}
		workflow, id, ok := parseListingValue(v)
		if !ok || len(k) != 8 {
			return nil, "", s.corrupt("", fmt.Errorf("listing entry %x is damaged", k))
		}
		if q.Workflow != "" && workflow != q.Workflow {
			continue
		}
		raw := instances.Get([]byte(id))
		if raw == nil {
			continue // deleted without its entry: skipped, as a pruned one
		}
		snap, err := decodeSnapshot(raw)
		if err != nil {
			return nil, "", s.corrupt(id, err)
		}
		if !q.Selects(snap) {
			continue
		}
		if len(out) == q.PageSize() {
			return out, record.SeqCursor(last), nil
		}
		out = append(out, snap)
		last = binary.BigEndian.Uint64(k)
	}
	return out, "", nil
}
