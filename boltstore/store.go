package boltstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/batonhq/baton/record"
	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
	"go.uber.org/zap"
)

// formatVersion is written in the meta bucket of every file this package
// creates; Open refuses a file of another version.
const formatVersion = "1"

var (
	bucketMeta        = []byte("meta")
	bucketInstances   = []byte("instances")
	bucketHistory     = []byte("history")
	bucketOutbox      = []byte("outbox")
	bucketDeadLetters = []byte("deadletters")
	bucketWorkflows   = []byte("workflows")
	keyFormat         = []byte("format")
)

// Every file of format 1 has the meta, instances and history buckets; the
// buckets added since are created when a file opens without them, so that
// files written before them open as they are.
var (
	baseBuckets  = [][]byte{bucketInstances, bucketHistory}
	addedBuckets = [][]byte{bucketOutbox, bucketDeadLetters, bucketWorkflows}
)

// Store is an record.Store kept in one bbolt file. It is safe for concurrent
// use; commits of different instances may run at once.
type Store struct {
	db    *bolt.DB
	path  string
	log   *zap.Logger
	group *group // nil without WithBatch

	// mu is held for reading by every call and for writing by Close, so that
	// Close waits for the calls in flight and no call reaches a closed file.
	mu       sync.RWMutex
	closed   bool
	readOnly bool
}

var (
	_ record.Store = (*Store)(nil)
)

// Open opens the store in the file at path, creating the file if it does not
// exist. The file stays locked until Close: a second Open of the same file,
// from this process or another, waits for the lock (see WithTimeout).
func Open(path string, opts ...Option) (*Store, error) {
	return open(path, false, opts)
}

// OpenReadOnly opens an existing store for reading only, as a tool that
// inspects it must: nothing is written to the file, not even the buckets
// Open adds to a file of an older release, and a missing file is an
// *OpenError matching fs.ErrNotExist instead of a new empty store. The file
// takes a shared lock: other readers may open it at once, a writer waits.
// Every write fails with ErrReadOnly.
func OpenReadOnly(path string, opts ...Option) (*Store, error) {
	return open(path, true, opts)
}

func open(path string, readOnly bool, opts []Option) (*Store, error) {
	cfg := defaults()
	for _, o := range opts {
		o(&cfg)
	}
	if path == "" {
		return nil, &OpenError{Path: path, Err: errors.New("path is empty")}
	}
	if readOnly {
		// bbolt would create a missing file even when reading only.
		if _, err := os.Stat(path); err != nil {
			return nil, &OpenError{Path: path, Err: err}
		}
	}
	db, err := openDB(path, &bolt.Options{
		Timeout:      cfg.timeout,
		NoSync:       cfg.noSync,
		FreelistType: bolt.FreelistMapType,
		ReadOnly:     readOnly,
	})
	if err != nil {
		return nil, err
	}
	s := &Store{db: db, path: path, log: cfg.logger, readOnly: readOnly}
	if cfg.batch > 1 && !readOnly {
		s.group = &group{db: db, max: cfg.batch}
	}
	if err := s.init(); err != nil {
		_ = db.Close()
		return nil, err
	}
	s.log.Debug("boltstore: opened", zap.String("path", path), zap.Bool("read_only", readOnly), zap.Bool("nosync", cfg.noSync), zap.Int("batch", cfg.batch))
	return s, nil
}

// openDB opens the bbolt file, turning a file that is not a readable bbolt
// database into a *CorruptError, whether bbolt says so or panics on it.
func openDB(path string, o *bolt.Options) (db *bolt.DB, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer recoverCorrupt(&err, path, "")
	db, err = bolt.Open(path, 0o600, o)
	var pathErr *fs.PathError
	var errno syscall.Errno
	switch {
	case err == nil:
		return db, nil
	case errors.Is(err, berrors.ErrTimeout):
		return nil, &OpenError{Path: path, Err: ErrLocked}
	case tooLarge(err):
		return nil, &CorruptError{Path: path, Err: err}
	case errors.As(err, &pathErr), errors.As(err, &errno):
		return nil, &OpenError{Path: path, Err: err} // the file could not be opened, locked or mapped
	}
	// Anything else is bbolt refusing what it read: a bad meta page, a
	// checksum, a version, a file shorter than its own pages say.
	return nil, &CorruptError{Path: path, Err: err}
}

// init checks the file's format marker, or writes it and the buckets into a
// new file. A bbolt file with other buckets and no marker belongs to someone
// else and is left untouched. A file of this format missing one of the
// buckets added to it later gets that bucket; missing one of the first ones,
// it is corrupt.
func (s *Store) init() (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer recoverCorrupt(&err, s.path, "")
	if s.readOnly {
		return s.db.View(s.check)
	}
	err = s.db.Update(func(tx *bolt.Tx) error {
		if meta := tx.Bucket(bucketMeta); meta != nil {
			if got := string(meta.Get(keyFormat)); got != formatVersion {
				return &FormatError{Path: s.path, Got: got, Want: formatVersion}
			}
			for _, name := range baseBuckets {
				if tx.Bucket(name) == nil {
					return &CorruptError{Path: s.path, Err: fmt.Errorf("bucket %q is missing", name)}
				}
			}
			if err := createBuckets(tx, s.path, addedBuckets, true); err != nil {
				return err
			}
			return createListing(tx, s.path)
		}
		if err := tx.ForEach(func([]byte, *bolt.Bucket) error { return errForeign }); err != nil {
			return &FormatError{Path: s.path, Want: formatVersion}
		}
		meta, err := tx.CreateBucket(bucketMeta)
		if err != nil {
			return err
		}
		if err := meta.Put(keyFormat, []byte(formatVersion)); err != nil {
			return err
		}
		if err := createBuckets(tx, s.path, baseBuckets, false); err != nil {
			return err
		}
		if err := createBuckets(tx, s.path, addedBuckets, false); err != nil {
			return err
		}
		return createListing(tx, s.path)
	})
	if tooLarge(err) {
		// A damaged free list or page count made bbolt grow the file past
		// what the system allows.
		return &CorruptError{Path: s.path, Err: err}
	}
	return err
}

// check is init for a read-only store: the format marker and the first
// buckets must be there; the buckets added later may be missing from a file
// of an older release, and read as empty.
func (s *Store) check(tx *bolt.Tx) error {
	meta := tx.Bucket(bucketMeta)
	if meta == nil {
		return &FormatError{Path: s.path, Want: formatVersion}
	}
	if got := string(meta.Get(keyFormat)); got != formatVersion {
		return &FormatError{Path: s.path, Got: got, Want: formatVersion}
	}
	for _, name := range baseBuckets {
		if tx.Bucket(name) == nil {
			return &CorruptError{Path: s.path, Err: fmt.Errorf("bucket %q is missing", name)}
		}
	}
	return nil
}

// tooLarge reports the errors of a file whose pages claim a size the system
// refuses to map or to grow the file to: the file is damaged.
func tooLarge(err error) bool {
	return errors.Is(err, syscall.EFBIG) || (err != nil && strings.Contains(err.Error(), "mmap too large"))
}

// createBuckets creates the named buckets, or with ifMissing only those not
// there yet. A name taken by something other than a bucket is corruption.
func createBuckets(tx *bolt.Tx, path string, names [][]byte, ifMissing bool) error {
	for _, name := range names {
		if ifMissing && tx.Bucket(name) != nil {
			continue
		}
		if _, err := tx.CreateBucket(name); err != nil {
			return &CorruptError{Path: path, Err: fmt.Errorf("create bucket %q: %w", name, err)}
		}
	}
	return nil
}

var errForeign = errors.New("foreign bucket")

// Close closes the file once every call in flight has returned. It is safe
// to call twice; calls after Close fail with ErrClosed.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("boltstore: close %s: %w", s.path, err)
	}
	s.log.Debug("boltstore: closed", zap.String("path", s.path))
	return nil
}

// Commit implements record.Store: the snapshot, the entries and the outbox
// changes are written in one transaction, and Commit returns once it is
// durable (see the package documentation for WithNoSync). ctx is not
// consulted: a step the engine has applied must reach the file even if the
// caller has given up waiting.
func (s *Store) Commit(ctx context.Context, rec record.Step) error {
	if ctx == nil {
		return record.ErrNilContext
	}
	id := rec.Snapshot.ID
	if err := checkID(id); err != nil {
		return err
	}
	enc := getEncoder()
	defer putEncoder(enc)
	var idKey []byte
	enc.key, idKey = historyKey(enc.key, id, 0)
	if err := enc.encode(rec, enc.key[:len(enc.key)-8]); err != nil {
		return err
	}
	write := func(tx *bolt.Tx) error {
		if enc.entries.Len() > 0 {
			h := tx.Bucket(bucketHistory)
			seq, err := h.NextSequence()
			if err != nil {
				return err
			}
			setSeq(enc.key, seq)
			if err := h.Put(enc.key, enc.entries.Bytes()); err != nil {
				return err
			}
		}
		if err := enc.writeOutbox(tx); err != nil {
			return err
		}
		if tx.Bucket(bucketInstances).Get(idKey) == nil {
			if err := index(tx, rec.Snapshot.Workflow, id); err != nil {
				return err
			}
		}
		return tx.Bucket(bucketInstances).Put(idKey, enc.snap.Bytes())
	}
	err := s.write(write)
	var pe *panicError
	switch {
	case err == nil, errors.Is(err, ErrClosed), errors.Is(err, ErrReadOnly):
		return err
	case errors.As(err, &pe):
		s.log.Error("boltstore: commit met a damaged page", zap.String("path", s.path), zap.String("instance", id), zap.Error(err))
		return &CorruptError{Path: s.path, Instance: id, Err: err}
	}
	return &CommitError{Instance: id, Err: err}
}

// write runs fn in a write transaction, shared with other callers' with
// WithBatch (so fn may run more than once), or fails with ErrClosed.
func (s *Store) write(fn func(*bolt.Tx) error) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return ErrClosed
	}
	if s.readOnly {
		return ErrReadOnly
	}
	if s.group != nil {
		return s.group.do(fn)
	}
	return update(s.db, fn)
}

// writeError is the error of a write other than Commit, what describing it.
func (s *Store) writeError(err error, what string) error {
	var pe *panicError
	var ee *EncodeError
	switch {
	case err == nil, errors.Is(err, ErrClosed), errors.Is(err, ErrReadOnly), errors.As(err, &ee):
		return err
	case errors.As(err, &pe):
		s.log.Error("boltstore: write met a damaged page", zap.String("path", s.path), zap.String("write", what), zap.Error(err))
		return &CorruptError{Path: s.path, Err: fmt.Errorf("%s: %w", what, err)}
	}
	return fmt.Errorf("boltstore: %s: %w", what, err)
}

// Instance implements record.Store.
func (s *Store) Instance(ctx context.Context, id string) (snap record.Snapshot, err error) {
	if ctx == nil {
		return snap, record.ErrNilContext
	}
	err = s.view(ctx, id, func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketInstances).Get([]byte(id))
		if v == nil {
			return fmt.Errorf("%w: %s", record.ErrUnknownInstance, id)
		}
		snap, err = decodeSnapshot(v)
		return s.corrupt(id, err)
	})
	return snap, err
}

// History implements record.Store.
func (s *Store) History(ctx context.Context, id string) (out []record.Entry, err error) {
	if ctx == nil {
		return out, record.ErrNilContext
	}
	err = s.view(ctx, id, func(tx *bolt.Tx) error {
		if id == "" || tx.Bucket(bucketInstances).Get([]byte(id)) == nil {
			return fmt.Errorf("%w: %s", record.ErrUnknownInstance, id)
		}
		prefix := historyPrefix(id)
		c := tx.Bucket(bucketHistory).Cursor()
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			if len(k) != len(prefix)+8 {
				return s.corrupt(id, fmt.Errorf("history key of %d bytes, want %d", len(k), len(prefix)+8))
			}
			if out, err = appendEntries(out, v); err != nil {
				return s.corrupt(id, err)
			}
		}
		return nil
	})
	return out, err
}

// Instances implements record.Store. bbolt keeps keys in byte order, which
// is Go's string order, so the snapshots come out sorted by id.
func (s *Store) Instances(ctx context.Context) (out []record.Snapshot, err error) {
	if ctx == nil {
		return out, record.ErrNilContext
	}
	err = s.view(ctx, "", func(tx *bolt.Tx) error {
		return tx.Bucket(bucketInstances).ForEach(func(k, v []byte) error {
			snap, err := decodeSnapshot(v)
			if err != nil {
				return s.corrupt(string(k), err)
			}
			out = append(out, snap)
			return nil
		})
	})
	return out, err
}

// Outbox implements record.Store. An instance has few unsettled items,
// usually one, so they are sorted on reading rather than keyed by step.
func (s *Store) Outbox(ctx context.Context, id string) (out []record.Outgoing, err error) {
	if ctx == nil {
		return out, record.ErrNilContext
	}
	err = s.view(ctx, id, func(tx *bolt.Tx) error {
		if id == "" || tx.Bucket(bucketInstances).Get([]byte(id)) == nil {
			return fmt.Errorf("%w: %s", record.ErrUnknownInstance, id)
		}
		prefix := historyPrefix(id)
		b := tx.Bucket(bucketOutbox)
		if b == nil { // a read-only file of an older release
			return nil
		}
		c := b.Cursor()
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			o, err := decodeOutgoing(v)
			if err != nil {
				return s.corrupt(id, fmt.Errorf("outbox item %q: %w", k[len(prefix):], err))
			}
			if o.Key != string(k[len(prefix):]) {
				return s.corrupt(id, fmt.Errorf("outbox item %q holds key %q", k[len(prefix):], o.Key))
			}
			out = append(out, o)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, compareOutgoing)
	return out, nil
}

// AddDeadLetter implements record.Store. Like Commit, it does not consult
// ctx: a message the bus has given up on must not be lost because its caller
// stopped waiting.
func (s *Store) AddDeadLetter(ctx context.Context, d record.DeadLetter) error {
	if ctx == nil {
		return record.ErrNilContext
	}
	err := s.write(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketDeadLetters)
		seq, err := b.NextSequence()
		if err != nil {
			return err
		}
		d.Seq = int(seq)
		v, err := encodeDeadLetter(d)
		if err != nil {
			return err
		}
		return b.Put(deadLetterKey(seq), v)
	})
	return s.writeError(err, "add dead letter "+d.MessageID)
}

// DeadLetters implements record.Store.
func (s *Store) DeadLetters(ctx context.Context) (out []record.DeadLetter, err error) {
	if ctx == nil {
		return out, record.ErrNilContext
	}
	err = s.view(ctx, "", func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketDeadLetters)
		if b == nil { // a read-only file of an older release
			return nil
		}
		return b.ForEach(func(k, v []byte) error {
			if len(k) != 8 {
				return s.corrupt("", fmt.Errorf("dead letter key of %d bytes, want 8", len(k)))
			}
			d, err := decodeDeadLetter(v)
			if err != nil {
				return s.corrupt("", fmt.Errorf("dead letter %d: %w", binary.BigEndian.Uint64(k), err))
			}
			out = append(out, d)
			return nil
		})
	})
	return out, err
}

// SaveWorkflow implements record.Store. ctx is not consulted, as for Commit.
func (s *Store) SaveWorkflow(ctx context.Context, w record.WorkflowSource) error {
	if ctx == nil {
		return record.ErrNilContext
	}
	if w.Hash == "" {
		return errors.New("boltstore: save workflow: hash is empty")
	}
	v, err := encodeWorkflow(w)
	if err != nil {
		return err
	}
	key := []byte(w.Hash)
	err = s.write(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketWorkflows)
		if b.Get(key) != nil {
			return nil // the first save wins
		}
		return b.Put(key, v)
	})
	return s.writeError(err, "save workflow "+w.Hash)
}

// Workflow implements record.Store.
func (s *Store) Workflow(ctx context.Context, hash string) (w record.WorkflowSource, err error) {
	if ctx == nil {
		return w, record.ErrNilContext
	}
	err = s.view(ctx, "", func(tx *bolt.Tx) error {
		var v []byte
		if b := tx.Bucket(bucketWorkflows); b != nil { // nil in a read-only file of an older release
			v = b.Get([]byte(hash))
		}
		if v == nil {
			return fmt.Errorf("%w: %s", record.ErrUnknownWorkflow, hash)
		}
		w, err = decodeWorkflow(v)
		if err != nil {
			return s.corrupt("", fmt.Errorf("workflow %q: %w", hash, err))
		}
		return nil
	})
	return w, err
}

// view runs fn in a read transaction, turning a panic of bbolt on a damaged
// page into a *CorruptError.
func (s *Store) view(ctx context.Context, id string, fn func(*bolt.Tx) error) (err error) {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return ErrClosed
	}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer recoverCorrupt(&err, s.path, id)
	return s.db.View(fn)
}

func (s *Store) corrupt(id string, err error) error {
	if err == nil {
		return nil
	}
	s.log.Error("boltstore: unreadable record", zap.String("path", s.path), zap.String("instance", id), zap.Error(err))
	return &CorruptError{Path: s.path, Instance: id, Err: err}
}

func recoverCorrupt(err *error, path, id string) {
	if p := recover(); p != nil {
		*err = &CorruptError{Path: path, Instance: id, Err: fmt.Errorf("bbolt panicked: %v", p)}
	}
}

// Prune implements record.Pruner: in one transaction it deletes every
// finished instance last updated before before, with its history and outbox
// records. Like Commit, it does not consult ctx once the transaction has
// begun. A snapshot that cannot be decoded stops it with a *CorruptError and
// nothing deleted.
func (s *Store) Prune(ctx context.Context, before time.Time) (int, error) {
	if ctx == nil {
		return 0, record.ErrNilContext
	}
	if ctx == nil {
		return 0, errors.New("boltstore: prune: nil context")
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	var n int
	err := s.write(func(tx *bolt.Tx) error {
		n = 0 // with WithBatch fn may run again
		var ids []string
		err := tx.Bucket(bucketInstances).ForEach(func(k, v []byte) error {
			snap, err := decodeSnapshot(v)
			if err != nil {
				return &CorruptError{Path: s.path, Instance: string(k), Err: err}
			}
			if snap.Status.Finished() && snap.Updated.Before(before) {
				ids = append(ids, string(k))
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, id := range ids {
			prefix := historyPrefix(id)
			for _, name := range [][]byte{bucketHistory, bucketOutbox} {
				if err := deletePrefix(tx.Bucket(name), prefix); err != nil {
					return err
				}
			}
			if err := tx.Bucket(bucketInstances).Delete([]byte(id)); err != nil {
				return err
			}
			if err := unindex(tx, id); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	var ce *CorruptError
	if errors.As(err, &ce) {
		return 0, err
	}
	if err := s.writeError(err, "prune"); err != nil {
		return 0, err
	}
	return n, nil
}

// deletePrefix deletes the keys of b that start with prefix.
func deletePrefix(b *bolt.Bucket, prefix []byte) error {
	if b == nil {
		return nil
	}
	c := b.Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Seek(prefix) {
		if err := c.Delete(); err != nil {
			return err
		}
	}
	return nil
}
