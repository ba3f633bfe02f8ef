package boltstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"runtime/debug"
	"sync"
	"syscall"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
	"go.uber.org/zap"

	"github.com/batonhq/baton/engine"
)

// formatVersion is written in the meta bucket of every file this package
// creates; Open refuses a file of another version.
const formatVersion = "1"

var (
	bucketMeta      = []byte("meta")
	bucketInstances = []byte("instances")
	bucketHistory   = []byte("history")
	keyFormat       = []byte("format")
)

// Store is an engine.Store kept in one bbolt file. It is safe for concurrent
// use; commits of different instances may run at once.
type Store struct {
	db    *bolt.DB
	path  string
	log   *zap.Logger
	group *group // nil without WithBatch

	// mu is held for reading by every call and for writing by Close, so that
	// Close waits for the calls in flight and no call reaches a closed file.
	mu     sync.RWMutex
	closed bool
}

var _ engine.Store = (*Store)(nil)

// Open opens the store in the file at path, creating the file if it does not
// exist. The file stays locked until Close: a second Open of the same file,
// from this process or another, waits for the lock (see WithTimeout).
func Open(path string, opts ...Option) (*Store, error) {
	cfg := defaults()
	for _, o := range opts {
		o(&cfg)
	}
	if path == "" {
		return nil, &OpenError{Path: path, Err: errors.New("path is empty")}
	}
	db, err := openDB(path, &bolt.Options{
		Timeout:      cfg.timeout,
		NoSync:       cfg.noSync,
		FreelistType: bolt.FreelistMapType,
	})
	if err != nil {
		return nil, err
	}
	s := &Store{db: db, path: path, log: cfg.logger}
	if cfg.batch > 1 {
		s.group = &group{db: db, max: cfg.batch}
	}
	if err := s.init(); err != nil {
		_ = db.Close()
		return nil, err
	}
	s.log.Debug("boltstore: opened", zap.String("path", path), zap.Bool("nosync", cfg.noSync), zap.Int("batch", cfg.batch))
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
	case errors.As(err, &pathErr), errors.As(err, &errno):
		return nil, &OpenError{Path: path, Err: err} // the file could not be opened, locked or mapped
	}
	// Anything else is bbolt refusing what it read: a bad meta page, a
	// checksum, a version, a file shorter than its own pages say.
	return nil, &CorruptError{Path: path, Err: err}
}

// init checks the file's format marker, or writes it and the buckets into a
// new file. A bbolt file with other buckets and no marker belongs to someone
// else and is left untouched.
func (s *Store) init() (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer recoverCorrupt(&err, s.path, "")
	return s.db.Update(func(tx *bolt.Tx) error {
		if meta := tx.Bucket(bucketMeta); meta != nil {
			if got := string(meta.Get(keyFormat)); got != formatVersion {
				return &FormatError{Path: s.path, Got: got, Want: formatVersion}
			}
			if tx.Bucket(bucketInstances) == nil || tx.Bucket(bucketHistory) == nil {
				return &CorruptError{Path: s.path, Err: errors.New("a bucket is missing")}
			}
			return nil
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
		if _, err := tx.CreateBucket(bucketInstances); err != nil {
			return err
		}
		_, err = tx.CreateBucket(bucketHistory)
		return err
	})
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

// Commit implements engine.Store: the snapshot and the entries are written
// in one transaction, and Commit returns once it is durable (see the package
// documentation for WithNoSync). ctx is not consulted: a step the engine has
// applied must reach the file even if the caller has given up waiting.
func (s *Store) Commit(_ context.Context, rec engine.StepRecord) error {
	id := rec.Snapshot.ID
	if err := checkID(id); err != nil {
		return err
	}
	enc := getEncoder()
	defer putEncoder(enc)
	if err := enc.encode(rec); err != nil {
		return err
	}
	var idKey []byte
	enc.key, idKey = historyKey(enc.key, id, 0)
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
		return tx.Bucket(bucketInstances).Put(idKey, enc.snap.Bytes())
	}

	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return ErrClosed
	}
	var err error
	if s.group != nil {
		err = s.group.do(write)
	} else {
		err = update(s.db, write)
	}
	var pe *panicError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &pe):
		s.log.Error("boltstore: commit met a damaged page", zap.String("path", s.path), zap.String("instance", id), zap.Error(err))
		return &CorruptError{Path: s.path, Instance: id, Err: err}
	}
	return &CommitError{Instance: id, Err: err}
}

// Instance implements engine.Store.
func (s *Store) Instance(ctx context.Context, id string) (snap engine.Snapshot, err error) {
	err = s.view(ctx, id, func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketInstances).Get([]byte(id))
		if v == nil {
			return fmt.Errorf("%w: %s", engine.ErrUnknownInstance, id)
		}
		snap, err = decodeSnapshot(v)
		return s.corrupt(id, err)
	})
	return snap, err
}

// History implements engine.Store.
func (s *Store) History(ctx context.Context, id string) (out []engine.Entry, err error) {
	err = s.view(ctx, id, func(tx *bolt.Tx) error {
		if id == "" || tx.Bucket(bucketInstances).Get([]byte(id)) == nil {
			return fmt.Errorf("%w: %s", engine.ErrUnknownInstance, id)
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

// Instances implements engine.Store. bbolt keeps keys in byte order, which
// is Go's string order, so the snapshots come out sorted by id.
func (s *Store) Instances(ctx context.Context) (out []engine.Snapshot, err error) {
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
