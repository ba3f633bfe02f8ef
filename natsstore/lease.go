package natsstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
	"go.uber.org/zap"

	"github.com/batonhq/baton/record"
)

// partition is this store's hold on one partition's lease.
//
// Holding a lease is not something the store can merely believe: a store
// that takes a partition over (Fence) writes a marker carrying its lease
// token into every steps stream, on the partition's marker subject, and
// each commit to the partition is sent with the marker's position as the
// expected last sequence of that subject. A store that lost the partition
// (its lease expired while it was paused or cut off, and another store
// fenced it) is refused by the server at its next commit, whatever it
// believes.
type partition struct {
	// mu orders the commits of the partition one at a time, and Fence and
	// Unfence against them: a replicated stream refuses two writes in
	// flight that check the same subject.
	mu      sync.Mutex
	owned   bool
	token   uint64
	markers []uint64 // per shard: the sequence of this store's marker
	// epoch counts the leases this store has taken of the partition: an
	// instance read under an earlier one is read again before a commit.
	epoch atomic.Uint64
}

// marker is the message a store writes on a partition's marker subject
// when it takes the partition over.
type marker struct {
	Format    int    `json:"format"`
	Partition int    `json:"partition"`
	Token     uint64 `json:"token"`
	Owner     string `json:"owner,omitempty"`
}

func (s *Store) initPartitions() {
	if s.cfg.Partitions == 0 {
		return
	}
	s.parts = make([]*partition, s.cfg.Partitions)
	for k := range s.parts {
		s.parts[k] = &partition{}
	}
}

func (s *Store) markerPrefix(shard int) string {
	return s.cfg.Prefix + ".lease." + strconv.Itoa(shard) + "."
}

func (s *Store) markerSubject(shard, partition int) string {
	return s.markerPrefix(shard) + strconv.Itoa(partition)
}

// Partitions returns the number of partitions (Config.Partitions), 0 when
// the store takes no leases.
func (s *Store) Partitions() int { return len(s.parts) }

// Partition returns the partition of an instance id, from 0 to
// Partitions()-1 (0 when the store takes no leases): a hash of the id, a
// child workflow's instance (<parent>/<STATE>/<visit>) hashed as its
// parent, so that it is in its parent's partition.
func (s *Store) Partition(id string) int {
	if len(s.parts) == 0 {
		return 0
	}
	return s.partitionOf(id)
}

// partitionOf hashes the id's root (see rootOf): a child workflow's
// instance is in its parent's partition, so that the engine running the
// parent commits the child.
func (s *Store) partitionOf(id string) int {
	h := fnv.New32a()
	h.Write([]byte(rootOf(id)))
	return int(h.Sum32() % uint32(len(s.parts)))
}

// rootOf is the id of the top instance of a family: a child workflow's
// instance is <parent>/<STATE>/<visit>, so each trailing /<STATE>/<n>
// (n a number) is cut off. Other ids, '/' in them or not, are their own
// root.
func rootOf(id string) string {
	for {
		i := strings.LastIndexByte(id, '/')
		if i < 0 || i == len(id)-1 || strings.Trim(id[i+1:], "0123456789") != "" {
			return id
		}
		j := strings.LastIndexByte(id[:i], '/')
		if j <= 0 || j == i-1 {
			return id
		}
		id = id[:j]
	}
}

// epochOf is the lease epoch of an instance's partition, 0 without leases.
func (s *Store) epochOf(id string) uint64 {
	if s.parts == nil {
		return 0
	}
	return s.parts[s.partitionOf(id)].epoch.Load()
}

// epochs are the lease epochs of every partition, nil without leases.
func (s *Store) epochs() []uint64 {
	if s.parts == nil {
		return nil
	}
	out := make([]uint64, len(s.parts))
	for k, p := range s.parts {
		out[k] = p.epoch.Load()
	}
	return out
}

func (s *Store) part(partition int) (*partition, error) {
	if s.parts == nil {
		return nil, &ConfigError{Field: "Partitions", Reason: "0: the store takes no leases"}
	}
	if partition < 0 || partition >= len(s.parts) {
		return nil, &NotOwnerError{Partition: partition, Reason: fmt.Sprintf("no such partition (want 0 to %d)", len(s.parts)-1)}
	}
	return s.parts[partition], nil
}

// Fence takes a partition over under a lease token: a number that grows
// with every lease of the partition (the natscluster package passes the
// revision of its lease record). It writes a marker with the token into
// every steps stream; from then on the store commits the partition's
// instances, and a store holding an older token is refused by the server
// at its next commit. Instances of the partition read before are read
// again before their next commit. Fence fails with a *NotOwnerError when a
// newer token already fenced the partition, and leaves the partition
// unowned on any error. Fencing a partition again with the token it holds
// does nothing.
func (s *Store) Fence(ctx context.Context, partition int, token uint64) error {
	if err := s.enterWrite(); err != nil {
		return err
	}
	defer s.mu.RUnlock()
	p, err := s.part(partition)
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.owned && p.token == token {
		return nil
	}
	p.owned = false
	markers := make([]uint64, len(s.steps))
	for k := range s.steps {
		seq, err := s.writeMarker(ctx, k, partition, token)
		if err != nil {
			return err
		}
		markers[k] = seq
	}
	p.owned, p.token, p.markers = true, token, markers
	p.epoch.Add(1)
	s.log.Info("natsstore: partition fenced", zap.Int("partition", partition), zap.Uint64("token", token))
	return nil
}

// markerAttempts bounds the writes of one marker that lose a race with
// another store's.
const markerAttempts = 8

// writeMarker writes this store's marker on a partition's subject in one
// shard, unless a newer token is there, and returns its sequence. The write
// expects the last marker read, so markers only ever move to newer tokens.
func (s *Store) writeMarker(ctx context.Context, shard, partition int, token uint64) (uint64, error) {
	subj := s.markerSubject(shard, partition)
	data, err := json.Marshal(marker{Format: format, Partition: partition, Token: token, Owner: s.nc.Opts.Name})
	if err != nil {
		return 0, &EncodeError{Field: "marker", Err: err}
	}
	msgID := nuid.Next()
	var lastErr error
	for range markerAttempts {
		rctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
		m, err := s.steps[shard].GetLastMsgForSubject(rctx, subj)
		cancel()
		var expect uint64
		switch {
		case errors.Is(err, jetstream.ErrMsgNotFound):
		case err != nil:
			return 0, &RequestError{Op: "fence partition " + strconv.Itoa(partition), Err: err}
		default:
			var old marker
			if err := json.Unmarshal(m.Data, &old); err != nil || old.Format != format {
				return 0, &CorruptError{Subject: subj, Seq: m.Sequence, Err: fmt.Errorf("not a lease marker: %v", err)}
			}
			if m.Header.Get(jetstream.MsgIDHeader) == msgID {
				return m.Sequence, nil // an earlier attempt of this call was written
			}
			if old.Token > token {
				return 0, &NotOwnerError{Partition: partition, Reason: fmt.Sprintf("lease token %d is older than %d, which fenced it", token, old.Token)}
			}
			expect = m.Sequence
		}
		rctx, cancel = context.WithTimeout(ctx, s.cfg.Timeout)
		ack, err := s.js.Publish(rctx, subj, data, jetstream.WithMsgID(msgID),
			jetstream.WithExpectStream(s.stepsName(shard)), jetstream.WithExpectLastSequencePerSubject(expect))
		cancel()
		if err == nil {
			return ack.Sequence, nil
		}
		lastErr = err
		if ctx.Err() != nil || (!isWrongLastSeq(err) && !retryable(err)) {
			break
		}
	}
	return 0, &RequestError{Op: "fence partition " + strconv.Itoa(partition), Err: lastErr}
}

// Unfence gives a partition up: the store commits none of its instances
// from the moment Unfence returns (a commit in flight ends first), until
// the next Fence. The marker stays until another store fences the
// partition.
func (s *Store) Unfence(partition int) {
	p, err := s.part(partition)
	if err != nil {
		return
	}
	p.mu.Lock()
	if p.owned {
		s.log.Info("natsstore: partition given up", zap.Int("partition", partition), zap.Uint64("token", p.token))
	}
	p.owned = false
	p.mu.Unlock()
}

// Owns reports whether the store holds a partition's lease: Fence
// succeeded, and neither Unfence nor a refused commit has ended it since.
func (s *Store) Owns(partition int) bool {
	p, err := s.part(partition)
	if err != nil {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.owned
}

// commitLeased commits a step of an instance of a leased partition: the
// write expects this store's marker to be the partition's last, so that the
// server refuses it once another store has fenced the partition; and the
// step must follow the last one stored (its snapshot's commit count one
// more), which only this store can have written while it holds the lease.
func (s *Store) commitLeased(ctx context.Context, rec record.Step, f *fence, resend resend) error {
	id := rec.Snapshot.ID
	pn := s.partitionOf(id)
	p := s.parts[pn]
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.owned {
		return &NotOwnerError{Instance: id, Partition: pn, Reason: "this store does not hold its lease"}
	}
	epoch := p.epoch.Load()
	if !f.known || f.epoch != epoch {
		if err := s.learn(ctx, id, f, epoch); err != nil {
			return err
		}
	}
	if want := f.commits + 1; rec.Snapshot.Commits != want {
		return &ConflictError{Instance: id, Expected: f.seq,
			Err: fmt.Errorf("the step is commit %d of the instance, the store holds %d", rec.Snapshot.Commits, f.commits)}
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
	msgID := resend.idFor(data)
	shard := s.shardOf(id)
	seq, err := s.publishLeased(ctx, msgID, id, data, shard, s.markerSubject(shard, pn), p.markers[shard])
	s.noteWrite(err)
	if err != nil {
		var rerr *RequestError
		if errors.As(err, &rerr) {
			f.unsure, f.unsureOutbox, f.unsureData = msgID, outbox, data
		}
		var cerr *ConflictError
		if errors.As(err, &cerr) {
			cerr.Expected = f.seq // written over since the revision this store saw
		}
		var nerr *NotOwnerError
		if errors.As(err, &nerr) {
			nerr.Partition = pn
			p.owned = false
			s.log.Warn("natsstore: partition taken over by another store", zap.Int("partition", pn), zap.String("instance", id), zap.Error(err))
		}
		return err
	}
	f.seq, f.outbox, f.commits, f.known = seq, outbox, rec.Snapshot.Commits, true
	s.retire(id, done(stepRecord{Snapshot: rec.Snapshot, Outbox: outbox}))
	return nil
}

// learn reads where an instance stands before its first commit under a
// lease.
func (s *Store) learn(ctx context.Context, id string, f *fence, epoch uint64) error {
	rctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	m, err := s.stream(id).GetLastMsgForSubject(rctx, s.subject(id))
	switch {
	case errors.Is(err, jetstream.ErrMsgNotFound):
		f.seq, f.outbox, f.commits = 0, nil, 0
	case err != nil:
		return &RequestError{Op: "commit", Instance: id, Err: err}
	default:
		r, err := decodeStep(id, m.Data)
		if err != nil {
			return &CorruptError{Subject: m.Subject, Seq: m.Sequence, Instance: id, Err: err}
		}
		f.seq, f.outbox, f.commits = m.Sequence, r.Outbox, r.Snapshot.Commits
	}
	f.epoch, f.known = epoch, true
	return nil
}

// publishLeased writes one step message expecting the partition's last
// marker in its shard to be at markerSeq. Unanswered requests are sent
// again under the same message id; a refusal whose reason is another write
// in flight on the marker subject (a store that has not yet learned it lost
// the partition) is tried again after a pause.
func (s *Store) publishLeased(ctx context.Context, msgID, id string, data []byte, shard int, markerSubj string, markerSeq uint64) (uint64, error) {
	var err error
	pause := time.Millisecond
	for attempt := 1; attempt <= s.cfg.Attempts+markerAttempts; attempt++ {
		actx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
		var ack *jetstream.PubAck
		ack, err = s.js.Publish(actx, s.subject(id), data,
			jetstream.WithMsgID(msgID),
			jetstream.WithExpectStream(s.stepsName(shard)),
			jetstream.WithExpectLastSequenceForSubject(markerSeq, markerSubj))
		cancel()
		if err == nil {
			return s.checkDuplicate(ctx, id, 0, ack)
		}
		if isWrongLastSeq(err) {
			if seq, ok := s.lastIsOurs(ctx, id, msgID); ok {
				return seq, nil
			}
			if !isInFlight(err) {
				return 0, &NotOwnerError{Instance: id, Reason: fmt.Sprintf("another store fenced it: %v", err)}
			}
			select {
			case <-ctx.Done():
				return 0, &RequestError{Op: "commit", Instance: id, Err: ctx.Err()}
			case <-time.After(pause):
			}
			pause = min(2*pause, 100*time.Millisecond)
			continue
		}
		if attempt >= s.cfg.Attempts || ctx.Err() != nil || !retryable(err) {
			break
		}
		s.log.Debug("natsstore: commit unanswered, sending again", zap.String("instance", id), zap.Int("attempt", attempt), zap.Error(err))
	}
	return 0, &RequestError{Op: "commit", Instance: id, Err: err}
}

// isInFlight tells the refusal of a check on a subject another write in
// flight also checks (a replicated stream) from a failed check.
func isInFlight(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant
}
