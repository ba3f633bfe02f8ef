package natsstore

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
	"go.uber.org/zap"

	"github.com/batonhq/baton/internal/jsretry"
	"github.com/batonhq/baton/internal/natsver"
	"github.com/batonhq/baton/record"
)

// Store is a record.Store on NATS JetStream. It is safe for concurrent use,
// and several stores (in several processes) may share one server: each
// commit succeeds only if the instance is as this store last saw it.
type Store struct {
	js    jetstream.JetStream
	nc    *nats.Conn
	cfg   Config
	log   *zap.Logger
	steps []jetstream.Stream // one per shard
	dead  jetstream.Stream
	flows jetstream.KeyValue
	// index is the listing index (index.go); nil on a read-only store of
	// a prefix without a complete one.
	index jetstream.Stream

	stepPrefix, deadSubject string

	// fences holds, per instance this store has read or written, the
	// revision it saw last (the stream sequence of the instance's last
	// step) and the outbox of that step: a commit expects that revision.
	fences sync.Map // id -> *fence
	// retired lists, oldest first, the instances whose fences were kept
	// while done: at most maxRetired (fences.go).
	retMu   sync.Mutex
	retired []string

	// parts holds the partition leases, with Config.Partitions; nil
	// without.
	parts []*partition

	// health records a write refused for want of storage (Writable).
	health writeHealth

	// readOnly is set by OpenReadOnly: every write fails with ErrReadOnly.
	readOnly bool
	// knownPartitions is the number of partitions the prefix's steps
	// streams record (0: none), read as the store opens.
	knownPartitions int

	// mu is held for reading by every call and for writing by Close, so
	// that Close waits for the calls in flight.
	mu     sync.RWMutex
	closed bool
}

var _ record.Store = (*Store)(nil)

type fence struct {
	mu     sync.Mutex
	seq    uint64 // 0: nothing seen, a commit expects no instance
	outbox []record.Outgoing
	// With partition leases (Config.Partitions): commits is the snapshot's
	// commit count at seq, and epoch the lease of the instance's partition
	// under which it was read (a fence of an earlier lease is read again).
	commits int
	epoch   uint64
	known   bool
	// unsure is the message id of this store's last commit of the instance
	// when its answer never came (it may or may not have been written),
	// with the outbox it carried; the next commit finds out first.
	unsure       string
	unsureOutbox []record.Outgoing
	unsureData   []byte
	// done is set while the instance is finished with no outbox item: its
	// fence is one of the few such kept (see retire).
	done atomic.Bool
	// finished is the message this store wrote at revision finishedSeq,
	// kept when that commit finished the instance (see Finished): it is
	// the instance's last message for as long as seq is still
	// finishedSeq.
	finished    []byte
	finishedSeq uint64
}

// Open opens the store on the server nc is connected to, creating its
// streams and bucket or updating their settings. The store does not own
// nc: close the store, then the connection.
func Open(ctx context.Context, nc *nats.Conn, cfg Config) (*Store, error) {
	s, err := newStore(nc, cfg)
	if err != nil {
		return nil, err
	}
	outer := ctx // filling the index of an older prefix may take longer
	ctx, cancel := context.WithTimeout(ctx, 3*s.cfg.Timeout)
	defer cancel()
	if err := s.openSteps(ctx); err != nil {
		return nil, err
	}
	s.dead, err = jsretry.Do(ctx, jsretry.Per(s.cfg.Timeout), func(ctx context.Context) (jetstream.Stream, error) {
		return s.js.CreateOrUpdateStream(ctx, s.deadConfig())
	})
	if err != nil {
		return nil, &RequestError{Op: "open stream " + s.deadName(), Err: err}
	}
	s.flows, err = jsretry.Do(ctx, jsretry.Per(s.cfg.Timeout), func(ctx context.Context) (jetstream.KeyValue, error) {
		return s.js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
			Bucket:      s.flowsName(),
			Description: "baton: workflow sources by hash",
			History:     1,
			Storage:     jetstream.FileStorage,
			Replicas:    s.cfg.Replicas,
		})
	})
	if err != nil {
		return nil, &RequestError{Op: "open bucket " + s.flowsName(), Err: err}
	}
	if err := s.openIndex(ctx, outer); err != nil {
		return nil, err
	}
	return s, nil
}

// OpenReadOnly opens the existing store of cfg.Prefix on the server nc is
// connected to, for reading: it creates and updates nothing (only the
// short-lived consumers a read uses), and every write method fails with
// ErrReadOnly without a request to the server. When the prefix's streams
// or bucket are missing it fails with a *NoStoreError (errors.Is
// ErrNoStore). Only Prefix, Timeout and Logger of cfg matter: the number
// of shards is the prefix's own. The store does not own nc: close the
// store, then the connection.
func OpenReadOnly(ctx context.Context, nc *nats.Conn, cfg Config) (*Store, error) {
	s, err := newStore(nc, cfg)
	if err != nil {
		return nil, err
	}
	s.readOnly = true
	ctx, cancel := context.WithTimeout(ctx, 3*s.cfg.Timeout)
	defer cancel()
	if err := s.lookupSteps(ctx); err != nil {
		return nil, err
	}
	s.dead, err = jsretry.Do(ctx, jsretry.Per(s.cfg.Timeout), func(ctx context.Context) (jetstream.Stream, error) {
		return s.js.Stream(ctx, s.deadName())
	})
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, &NoStoreError{Prefix: s.cfg.Prefix, Missing: "stream " + s.deadName()}
	}
	if err != nil {
		return nil, &RequestError{Op: "open stream " + s.deadName(), Err: err}
	}
	s.flows, err = jsretry.Do(ctx, jsretry.Per(s.cfg.Timeout), func(ctx context.Context) (jetstream.KeyValue, error) {
		return s.js.KeyValue(ctx, s.flowsName())
	})
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return nil, &NoStoreError{Prefix: s.cfg.Prefix, Missing: "bucket " + s.flowsName()}
	}
	if err != nil {
		return nil, &RequestError{Op: "open bucket " + s.flowsName(), Err: err}
	}
	if err := s.lookupIndex(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// newStore checks the configuration, the connection and the server's
// version, and returns a store with no streams yet.
func newStore(nc *nats.Conn, cfg Config) (*Store, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if nc == nil || !nc.IsConnected() {
		return nil, &RequestError{Op: "open", Err: natsver.ErrNotConnected}
	}
	if err := natsver.Check(nc.ConnectedServerVersion(), natsver.Min); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrServerTooOld, err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, &RequestError{Op: "open", Err: err}
	}
	s := &Store{
		js: js, nc: nc, cfg: cfg, log: cfg.Logger,
		stepPrefix:  cfg.Prefix + ".step.",
		deadSubject: cfg.Prefix + ".dead",
	}
	s.initPartitions()
	return s, nil
}

func (s *Store) deadName() string  { return s.cfg.Prefix + "_dead" }
func (s *Store) flowsName() string { return s.cfg.Prefix + "_workflows" }

// deadConfig is the dead-letter stream's configuration.
func (s *Store) deadConfig() jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:        s.deadName(),
		Description: "baton: dead letters, in the order added",
		Subjects:    []string{s.deadSubject},
		Retention:   jetstream.LimitsPolicy,
		Discard:     jetstream.DiscardOld,
		Storage:     jetstream.FileStorage,
		Replicas:    s.cfg.Replicas,
		MaxMsgs:     s.cfg.DeadLetterLimit,
		DenyDelete:  true,
	}
}

// Close marks the store closed and waits for the calls in flight; later
// calls fail with ErrClosed. It does not close the connection. It is safe
// to call more than once.
func (s *Store) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	return nil
}

// enter starts a call; the caller runs s.mu.RUnlock when it ends.
func (s *Store) enter() error {
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return ErrClosed
	}
	return nil
}

// enterWrite starts a call that writes: it fails with ErrReadOnly on a
// store opened read-only, before any request to the server.
func (s *Store) enterWrite() error {
	if err := s.enter(); err != nil {
		return err
	}
	if s.readOnly {
		s.mu.RUnlock()
		return ErrReadOnly
	}
	return nil
}

// ReadOnly reports whether the store was opened with OpenReadOnly.
func (s *Store) ReadOnly() bool { return s.readOnly }

// shardOf is the shard of an instance: a hash of its id.
func (s *Store) shardOf(id string) int {
	h := fnv.New32a()
	h.Write([]byte(id))
	return int(h.Sum32() % uint32(len(s.steps)))
}

func (s *Store) subject(id string) string {
	return s.stepPrefix + strconv.Itoa(s.shardOf(id)) + "." + token(id)
}

func (s *Store) stream(id string) jetstream.Stream { return s.steps[s.shardOf(id)] }

// Subject returns the subject an instance's steps are written on, for tools
// that read the stream directly.
func (s *Store) Subject(id string) string { return s.subject(id) }

// Shards returns how many streams hold the steps: the number the first
// Open of the prefix chose.
func (s *Store) Shards() int { return len(s.steps) }

func (s *Store) fenceOf(id string) *fence {
	if f, ok := s.fences.Load(id); ok {
		return f.(*fence)
	}
	f, _ := s.fences.LoadOrStore(id, &fence{})
	return f.(*fence)
}

// saw records that a read found the instance at revision seq, its
// snapshot's commit count commits, under the lease epoch of its partition
// taken before the read: a later commit expects it. Revisions only move
// forward within an epoch, so that a read that raced a commit of this store
// does not take the fence back; a read of an earlier epoch is ignored.
func (s *Store) saw(id string, seq uint64, outbox []record.Outgoing, commits int, epoch uint64) {
	f := s.fenceOf(id)
	f.mu.Lock()
	if epoch > f.epoch || (epoch == f.epoch && seq > f.seq) {
		f.seq, f.outbox, f.commits, f.epoch, f.known = seq, outbox, commits, epoch, true
	}
	f.mu.Unlock()
}

// Commit implements record.Store: the step is one message, written only if
// the instance's last message is still the one this store last read or
// wrote (or, for an instance it never saw, if there is none). Otherwise it
// fails with a *ConflictError (errors.Is ErrFenced) and writes nothing; a
// later read of the instance lets this store commit again.
func (s *Store) Commit(ctx context.Context, rec record.Step) error {
	if ctx == nil {
		return record.ErrNilContext
	}
	if err := s.enterWrite(); err != nil {
		return err
	}
	defer s.mu.RUnlock()
	id := rec.Snapshot.ID
	if id == "" {
		return &IDError{ID: id, Reason: "empty"}
	}
	f := s.fenceOf(id)
	f.mu.Lock()
	defer f.mu.Unlock()
	var again resend
	if f.unsure != "" {
		before := f.outbox
		again = resend{id: f.unsure, data: f.unsureData}
		written, err := s.settleUnsure(ctx, id, f)
		if err != nil {
			return err
		}
		if written {
			// The engine sends a step again when its commit got no
			// answer: if the unanswered one was this very step, it is
			// committed.
			if data, err := s.encode(rec, nextOutbox(before, rec.Settled, rec.Outbox)); err == nil && bytes.Equal(data, again.data) {
				return nil
			}
			again = resend{}
		}
	}

	if s.parts != nil {
		return s.commitLeased(ctx, rec, f, again)
	}
	outbox := nextOutbox(f.outbox, rec.Settled, rec.Outbox)
	data, err := s.encode(rec, outbox)
	if err != nil {
		return err
	}
	if f.seq == 0 {
		if err := s.addIndex(ctx, rec.Snapshot); err != nil {
			return err
		}
	}
	msgID := again.idFor(data)
	seq, err := s.publish(ctx, msgID, id, data, f.seq)
	s.noteWrite(err)
	if err != nil {
		var rerr *RequestError
		if errors.As(err, &rerr) {
			f.unsure, f.unsureOutbox, f.unsureData = msgID, outbox, data
		}
		if errors.Is(err, ErrFenced) {
			s.log.Warn("natsstore: commit fenced off", zap.String("instance", id), zap.Uint64("expected", f.seq), zap.Error(err))
			// Forget what this store saw: only a new read may let it
			// commit this instance again.
			f.seq, f.outbox = 0, nil
		}
		return err
	}
	f.seq, f.outbox, f.commits, f.known = seq, outbox, rec.Snapshot.Commits, true
	f.finished, f.finishedSeq = nil, 0
	if rec.Snapshot.Status.Finished() {
		// Kept only for finished instances, whose fences are few (see
		// retire): a client polling for an instance's end reads it from
		// here (Finished) rather than asking the server for what this
		// store has just written.
		f.finished, f.finishedSeq = data, seq
	}
	s.retire(id, done(stepRecord{Snapshot: rec.Snapshot, Outbox: outbox}))
	return nil
}

// resend is a step whose commit got no answer and was not found written:
// it may still be, later. Sent again, the same step goes under the same
// message id, so that the server keeps it once whichever send lands.
type resend struct {
	id   string
	data []byte
}

// idFor is the message id to send data under: the unanswered one's for
// the same step, a new one otherwise.
func (r resend) idFor(data []byte) string {
	if r.id != "" && bytes.Equal(data, r.data) {
		return r.id
	}
	return nuid.Next()
}

// encode is the message of a step with the outbox after it.
func (s *Store) encode(rec record.Step, outbox []record.Outgoing) ([]byte, error) {
	data, err := encodeStep(rec.Snapshot, rec.Entries, outbox)
	if err != nil {
		return nil, err
	}
	if max := s.nc.MaxPayload(); int64(len(data)) > max-1024 { // room for the subject and headers
		return nil, &TooLargeError{Instance: rec.Snapshot.ID, Size: len(data), Max: max}
	}
	return data, nil
}

// settleUnsure finds out whether the commit whose answer never came was
// written: if the instance's last message is that commit, the fence moves
// to it, as if the answer had come, and written is true.
func (s *Store) settleUnsure(ctx context.Context, id string, f *fence) (written bool, err error) {
	rctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	m, err := s.stream(id).GetLastMsgForSubject(rctx, s.subject(id))
	switch {
	case errors.Is(err, jetstream.ErrMsgNotFound):
	case err != nil:
		return false, &RequestError{Op: "commit", Instance: id, Err: err}
	case m.Header.Get(jetstream.MsgIDHeader) == f.unsure && m.Sequence > f.seq:
		written = true
		s.log.Info("natsstore: an unanswered commit was written", zap.String("instance", id), zap.Uint64("revision", m.Sequence))
		f.seq, f.outbox = m.Sequence, f.unsureOutbox
		if r, err := decodeStep(id, m.Data); err == nil {
			f.commits = r.Snapshot.Commits
		}
	}
	f.unsure, f.unsureOutbox, f.unsureData = "", nil, nil
	return written, nil
}

// publish writes one step message expecting the instance's last message to
// be at revision expect, and returns the new revision. A request that gets
// no answer is sent again under the same message id: the server answers a
// resend of a write it already made as a duplicate, or (on a single server,
// where the revision check comes first) as a conflict, which is told from a
// real one by the message id of the instance's last message. Conflicts are
// rare, so every one is checked that way.
func (s *Store) publish(ctx context.Context, msgID, id string, data []byte, expect uint64) (uint64, error) {
	msg := &nats.Msg{Subject: s.subject(id), Data: data, Header: nats.Header{}}
	var err error
	for attempt := 1; attempt <= s.cfg.Attempts; attempt++ {
		actx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
		var ack *jetstream.PubAck
		ack, err = s.publishAcked(actx, msg, msgID, s.stepsName(s.shardOf(id)), expect)
		cancel()
		if err == nil {
			return s.checkDuplicate(ctx, id, expect, ack)
		}
		if isWrongLastSeq(err) {
			if seq, ok := s.lastIsOurs(ctx, id, msgID); ok {
				return seq, nil
			}
			return 0, &ConflictError{Instance: id, Expected: expect, Err: err}
		}
		if ctx.Err() != nil || !retryable(err) {
			break
		}
		s.log.Debug("natsstore: commit unanswered, sending again", zap.String("instance", id), zap.Int("attempt", attempt), zap.Error(err))
	}
	return 0, &RequestError{Op: "commit", Instance: id, Err: err}
}

// errWrittenOver is why a commit answered as a duplicate is refused: its
// first send was written, and the instance was written again since.
var errWrittenOver = errors.New("this step was written before, and the instance has been written since by another store")

// checkDuplicate returns the revision of a commit the server accepted. An
// answer marked duplicate means the message id was written before, at
// ack.Sequence: a commit sent again after its first send got no answer. A
// replicated stream answers a duplicate before it checks the expected
// revision, so the first send may have been followed by other writes of
// the instance (another store took its partition over and moved it on):
// the commit is this store's only while that first write is still the
// instance's last message. Otherwise it is refused as a conflict; followed
// as if it were the last, the store would let its engine go on from a past
// the others have left, and answer reports of later steps from it. When
// the last message cannot be read, the commit stays unsure.
func (s *Store) checkDuplicate(ctx context.Context, id string, expect uint64, ack *jetstream.PubAck) (uint64, error) {
	if !ack.Duplicate {
		return ack.Sequence, nil
	}
	rctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	m, err := s.stream(id).GetLastMsgForSubject(rctx, s.subject(id))
	switch {
	case err != nil:
		return 0, &RequestError{Op: "commit", Instance: id, Err: err}
	case m.Sequence != ack.Sequence:
		return 0, &ConflictError{Instance: id, Expected: expect, Err: fmt.Errorf("%w (written at revision %d, last at %d)", errWrittenOver, ack.Sequence, m.Sequence)}
	}
	return ack.Sequence, nil
}

func (s *Store) lastIsOurs(ctx context.Context, id, msgID string) (uint64, bool) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	m, err := s.stream(id).GetLastMsgForSubject(ctx, s.subject(id))
	if err != nil || m.Header.Get(jetstream.MsgIDHeader) != msgID {
		return 0, false
	}
	return m.Sequence, true
}

// isWrongLastSeq tells a failed revision check. jetstream.ErrKeyExists
// would also match it, and misses the code a replicated stream answers.
func isWrongLastSeq(err error) bool {
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) {
		return false
	}
	return apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
		apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant
}

// retryable tells a commit the server did not answer, to be sent again
// under the same message id. Unlike jsretry.Unanswered it does not count a
// 503 API error, which a publish also gets from a stream's limits.
func retryable(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) ||
		errors.Is(err, nats.ErrNoResponders) || errors.Is(err, jetstream.ErrNoStreamResponse)
}

// nextOutbox is the outbox after a step: the items before it, less those it
// settled, with the items it sent (replacing any under the same key),
// sorted by step then key. It copies: the caller reuses its slices.
func nextOutbox(before []record.Outgoing, settled []string, sent []record.Outgoing) []record.Outgoing {
	if len(settled) == 0 && len(sent) == 0 {
		return before
	}
	out := make([]record.Outgoing, 0, len(before)+len(sent))
	for _, o := range before {
		if !slices.Contains(settled, o.Key) {
			out = append(out, o)
		}
	}
	for _, o := range sent {
		if k := slices.IndexFunc(out, func(p record.Outgoing) bool { return p.Key == o.Key }); k >= 0 {
			out[k] = o
		} else {
			out = append(out, o)
		}
	}
	slices.SortStableFunc(out, func(a, b record.Outgoing) int {
		if c := cmp.Compare(a.Step, b.Step); c != 0 {
			return c
		}
		return strings.Compare(a.Key, b.Key)
	})
	if len(out) == 0 {
		return nil
	}
	return out
}
