package natsstore

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/batonhq/baton/record"
)

// AddDeadLetter implements record.Store: the dead letter's Seq is its
// sequence in the dead-letter stream, 1, 2, 3... in the order added.
func (s *Store) AddDeadLetter(ctx context.Context, d record.DeadLetter) error {
	if ctx == nil {
		return record.ErrNilContext
	}
	if err := s.enterWrite(); err != nil {
		return err
	}
	defer s.mu.RUnlock()
	d.Seq = 0
	data, err := json.Marshal(deadRecord{Format: format, DeadLetter: d})
	if err != nil {
		return &EncodeError{Field: "dead_letter", Err: err}
	}
	if max := s.nc.MaxPayload(); int64(len(data)) > max-1024 {
		return &TooLargeError{Size: len(data), Max: max}
	}
	rctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	opts := []jetstream.PublishOpt{jetstream.WithExpectStream(s.deadName())}
	if d.MessageID != "" {
		opts = append(opts, jetstream.WithMsgID(deadLetterID(d)))
	}
	if _, err := s.js.Publish(rctx, s.deadSubject, data, opts...); err != nil {
		var apiErr *jetstream.APIError
		if errors.As(err, &apiErr) && apiErr.ErrorCode == errCodeDuplicateInProcess {
			return nil // another engine is adding the same dead letter
		}
		return &RequestError{Op: "add dead letter", Err: err}
	}
	return nil
}

// errCodeDuplicateInProcess is a replicated stream's answer to a write
// whose message id another write in flight carries.
const errCodeDuplicateInProcess = 10158

// deadLetterID is the message id of a dead letter in the dead-letter
// stream: the same dead letter added by several engines sharing a
// transport (each hears of every dead letter) is kept once, when they add
// it within the stream's duplicate window (2 minutes).
func deadLetterID(d record.DeadLetter) string {
	h := fnv.New128a()
	for _, part := range []string{d.MessageID, d.Reason, d.At.UTC().Format(time.RFC3339Nano), strconv.Itoa(d.Attempts)} {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	return "dead." + hex.EncodeToString(h.Sum(nil))
}

// DeadLetters implements record.Store.
func (s *Store) DeadLetters(ctx context.Context) ([]record.DeadLetter, error) {
	if ctx == nil {
		return nil, record.ErrNilContext
	}
	if err := s.enter(); err != nil {
		return nil, err
	}
	defer s.mu.RUnlock()
	var out []record.DeadLetter
	err := s.scan(ctx, s.dead, s.deadSubject, jetstream.DeliverAllPolicy, 0, func() { out = out[:0] }, func(m jetstream.Msg, seq uint64) error {
		d, err := decodeDead(m.Data())
		if err != nil {
			return &CorruptError{Subject: m.Subject(), Seq: seq, Err: err}
		}
		d.Seq = int(seq)
		out = append(out, d)
		return nil
	})
	return out, err
}

// SaveWorkflow implements record.Store: the first source saved under a
// hash stays.
func (s *Store) SaveWorkflow(ctx context.Context, w record.WorkflowSource) error {
	if ctx == nil {
		return record.ErrNilContext
	}
	if err := s.enterWrite(); err != nil {
		return err
	}
	defer s.mu.RUnlock()
	if w.Hash == "" {
		return errors.New("natsstore: save workflow: empty hash")
	}
	data, err := json.Marshal(workflowRecord{Format: format, Workflow: w})
	if err != nil {
		return &EncodeError{Field: "workflow", Err: err}
	}
	if max := s.nc.MaxPayload(); int64(len(data)) > max-1024 {
		return &TooLargeError{Size: len(data), Max: max}
	}
	rctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	// Create writes only if the key holds nothing: here "the key exists"
	// is the answer wanted, the first save of a hash wins.
	if _, err := s.flows.Create(rctx, token(w.Hash), data); err != nil && !errors.Is(err, jetstream.ErrKeyExists) {
		return &RequestError{Op: "save workflow " + w.Hash, Err: err}
	}
	return nil
}

// Workflow implements record.Store.
func (s *Store) Workflow(ctx context.Context, hash string) (record.WorkflowSource, error) {
	if ctx == nil {
		return record.WorkflowSource{}, record.ErrNilContext
	}
	if err := s.enter(); err != nil {
		return record.WorkflowSource{}, err
	}
	defer s.mu.RUnlock()
	if hash == "" {
		return record.WorkflowSource{}, fmt.Errorf("natsstore: %w: %q", record.ErrUnknownWorkflow, hash)
	}
	rctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	e, err := s.flows.Get(rctx, token(hash))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return record.WorkflowSource{}, fmt.Errorf("natsstore: %w: %q", record.ErrUnknownWorkflow, hash)
	}
	if err != nil {
		return record.WorkflowSource{}, &RequestError{Op: "read workflow " + hash, Err: err}
	}
	w, err := decodeWorkflow(hash, e.Value())
	if err != nil {
		return record.WorkflowSource{}, &CorruptError{Subject: e.Bucket() + "/" + e.Key(), Seq: e.Revision(), Err: err}
	}
	return w, nil
}

// Prune deletes the finished (completed, failed or canceled) instances
// whose last snapshot was updated before the given time, with their history
// and outbox, and returns how many it deleted. A step committed to such an
// instance while Prune runs is kept.
func (s *Store) Prune(ctx context.Context, before time.Time) (int, error) {
	if ctx == nil {
		return 0, record.ErrNilContext
	}
	if err := s.enterWrite(); err != nil {
		return 0, err
	}
	defer s.mu.RUnlock()
	lasts, err := s.lastSteps(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, l := range lasts {
		snap := l.rec.Snapshot
		if !snap.Status.Finished() || !snap.Updated.Before(before) {
			continue
		}
		// The index message goes first: an instance started under the
		// same id meanwhile, refused by the steps still there, gets its
		// own when it is started again.
		if err := s.dropIndex(ctx, snap); err != nil {
			return n, err
		}
		rctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
		// Purge the instance's messages up to its last step read, no further.
		err := s.stream(snap.ID).Purge(rctx, jetstream.WithPurgeSubject(s.subject(snap.ID)), jetstream.WithPurgeSequence(l.seq+1))
		cancel()
		if err != nil {
			return n, &RequestError{Op: "prune", Instance: snap.ID, Err: err}
		}
		s.fences.Delete(snap.ID)
		n++
	}
	return n, nil
}
