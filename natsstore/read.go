package natsstore

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/batonhq/baton/internal/jsretry"
	"github.com/batonhq/baton/record"
)

// Instance implements record.Store. The revision read becomes the one the
// next commit of the instance expects.
func (s *Store) Instance(ctx context.Context, id string) (record.Snapshot, error) {
	if ctx == nil {
		return record.Snapshot{}, record.ErrNilContext
	}
	if err := s.enter(); err != nil {
		return record.Snapshot{}, err
	}
	defer s.mu.RUnlock()
	r, _, _, err := s.last(ctx, id)
	return r.Snapshot, err
}

// Finished returns instance id's snapshot as this store wrote it in its
// last commit of the instance, without asking the server, when that
// commit finished the instance and the store has read or written no other
// revision of it since; ok is false otherwise. It is the server's content
// only where no other store writes the instance (one process on a NATS
// server of its own): with other stores on the prefix, read with
// Instance.
func (s *Store) Finished(id string) (snap record.Snapshot, ok bool) {
	if s.enter() != nil {
		return snap, false
	}
	defer s.mu.RUnlock()
	v, found := s.fences.Load(id)
	if !found {
		return snap, false
	}
	f := v.(*fence)
	f.mu.Lock()
	data := f.finished
	if !f.known || f.unsure != "" || f.seq != f.finishedSeq {
		data = nil
	}
	f.mu.Unlock()
	if data == nil {
		return snap, false
	}
	if snap, ok = decodeSnapshotOf(id, data); ok {
		return snap, true
	}
	r, err := decodeStep(id, data) // encoding/json's form, if the hand encoder wrote none
	return r.Snapshot, err == nil
}

// Outbox implements record.Store.
func (s *Store) Outbox(ctx context.Context, id string) ([]record.Outgoing, error) {
	if ctx == nil {
		return nil, record.ErrNilContext
	}
	if err := s.enter(); err != nil {
		return nil, err
	}
	defer s.mu.RUnlock()
	_, _, data, err := s.last(ctx, id)
	if err != nil {
		return nil, err
	}
	// Decode again: what is returned is the caller's to change, what the
	// fence keeps is not.
	r, err := decodeStep(id, data)
	if err != nil {
		return nil, err
	}
	return r.Outbox, nil
}

// History implements record.Store: the entries of every step up to the one
// the last snapshot read belongs to, so that history and snapshot agree
// even while steps are committed.
func (s *Store) History(ctx context.Context, id string) ([]record.Entry, error) {
	if ctx == nil {
		return nil, record.ErrNilContext
	}
	if err := s.enter(); err != nil {
		return nil, err
	}
	defer s.mu.RUnlock()
	r, last, _, err := s.last(ctx, id)
	if err != nil {
		return nil, err
	}
	if r.Snapshot.Commits <= shortHistory {
		if out, ok, err := s.shortHistory(ctx, id, last); ok || err != nil {
			return out, err
		}
	}
	var out []record.Entry
	err = s.scan(ctx, s.stream(id), s.subject(id), jetstream.DeliverAllPolicy, last, func() { out = nil }, func(m jetstream.Msg, seq uint64) error {
		r, err := decodeStep(id, m.Data())
		if err != nil {
			return &CorruptError{Subject: m.Subject(), Seq: seq, Instance: id, Err: err}
		}
		out = append(out, r.Entries...)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if out == nil {
		out = []record.Entry{}
	}
	return out, nil
}

// shortHistory is the most step messages History reads one by one: for an
// instance of a few steps, asking the stream's leader for each is cheaper,
// for the server as for the store, than a consumer made for the one read
// (created, pulled from and deleted).
const shortHistory = 8

// shortHistory reads the entries of instance id's steps up to revision
// last one message at a time, as the stream's leader holds them. ok is
// false, with nothing read, when they are more than shortHistory or a
// request fails: the caller scans them instead. A step that cannot be
// decoded is a *CorruptError, as in a scan.
func (s *Store) shortHistory(ctx context.Context, id string, last uint64) (out []record.Entry, ok bool, err error) {
	st, subject := s.stream(id), s.subject(id)
	rctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	next := uint64(1)
	for range shortHistory {
		m, err := st.GetMsg(rctx, next, jetstream.WithGetMsgSubject(subject))
		if err != nil || m.Sequence > last {
			return nil, false, nil
		}
		r, err := decodeStep(id, m.Data)
		if err != nil {
			return nil, false, &CorruptError{Subject: m.Subject, Seq: m.Sequence, Instance: id, Err: err}
		}
		out = append(out, r.Entries...)
		if m.Sequence == last {
			if out == nil {
				out = []record.Entry{}
			}
			return out, true, nil
		}
		next = m.Sequence + 1
	}
	return nil, false, nil
}

// Instances implements record.Store. It reads the last step of every
// instance; each revision read becomes the one the next commit of that
// instance expects (for instances finished with no outbox item left, to
// which no engine commits, only for the most recent few thousand: read one
// with Instance first).
func (s *Store) Instances(ctx context.Context) ([]record.Snapshot, error) {
	if ctx == nil {
		return nil, record.ErrNilContext
	}
	if err := s.enter(); err != nil {
		return nil, err
	}
	defer s.mu.RUnlock()
	lasts, err := s.lastSteps(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]record.Snapshot, len(lasts))
	for i, l := range lasts {
		out[i] = l.rec.Snapshot
	}
	return out, nil
}

// lastStep is an instance's last step and its revision.
type lastStep struct {
	rec stepRecord
	seq uint64
}

// lastSteps returns the last step of every instance, sorted by id.
func (s *Store) lastSteps(ctx context.Context) ([]lastStep, error) {
	byID := map[string]lastStep{}
	epochs := s.epochs()
	for k, st := range s.steps {
		prefix := s.stepPrefix + strconv.Itoa(k) + "."
		// A shard read again (a lagging server's view) starts afresh: an
		// instance pruned since must not come back from the stale view.
		shard := map[string]lastStep{}
		err := s.scan(ctx, st, prefix+">", jetstream.DeliverLastPerSubjectPolicy, 0, func() { clear(shard) }, func(m jetstream.Msg, seq uint64) error {
			id, r, err := decodeLast(strings.TrimPrefix(m.Subject(), prefix), m.Data())
			if err != nil {
				// One record no read can use must not hide the others
				// (from Resume, say): it is left out, and logged.
				s.log.Error("natsstore: an unreadable step record is left out of the instances", zap.String("subject", m.Subject()), zap.Uint64("seq", seq), zap.Error(err))
				return nil
			}
			if floor := s.doneSeq(id); seq < floor {
				// This store saw the instance done at a later revision:
				// the consumer's server lags (scan reads again).
				return &RequestError{Op: "read " + prefix + ">", Err: fmt.Errorf("%w: instance %q at revision %d, this store saw it done at %d", errStale, id, seq, floor)}
			}
			// A step committed during the scan may come after its
			// instance's earlier last step: the later one wins.
			if f, ok := shard[id]; !ok || seq > f.seq {
				shard[id] = lastStep{r, seq}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		maps.Copy(byID, shard)
	}
	out := make([]lastStep, 0, len(byID))
	for id, f := range byID {
		var epoch uint64
		if epochs != nil {
			epoch = epochs[s.partitionOf(id)]
		}
		// A done instance's revision is kept too, among the few thousand
		// fences of done instances a store keeps, so that a later read of
		// it through a lagging server is not taken for its present.
		s.saw(id, f.seq, f.rec.Outbox, f.rec.Snapshot.Commits, epoch)
		s.retire(id, done(f.rec))
		out = append(out, f)
	}
	slices.SortFunc(out, func(a, b lastStep) int { return strings.Compare(a.rec.Snapshot.ID, b.rec.Snapshot.ID) })
	return out, nil
}

// last reads an instance's last step: its record, its revision and the
// message's data.
//
// Reads never go back in time: a revision older than one this store has
// already read or written for the instance is not an answer. On a cluster
// the last message is asked of the stream's leader, and a server cut off
// from the others stays its leader in its own eyes for up to ten seconds
// after it last heard from them (NATS's lost-quorum interval) and until it
// hears the new leader after the cut heals: in that window it answers too,
// and its answer, the stream as it was at the cut, may come first. The
// read is made again, for at most staleTries tries within the timeout,
// and fails with a *RequestError wrapping errStale rather than hand back
// an instance's past.
func (s *Store) last(ctx context.Context, id string) (stepRecord, uint64, []byte, error) {
	if id == "" {
		return stepRecord{}, 0, nil, fmt.Errorf("natsstore: %w %q", record.ErrUnknownInstance, id)
	}
	rctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	epoch := s.epochOf(id)
	floor := s.seenSeq(id)
	var m *jetstream.RawStreamMsg
	for try := 1; ; try++ {
		var err error
		m, err = s.stream(id).GetLastMsgForSubject(rctx, s.subject(id))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return stepRecord{}, 0, nil, fmt.Errorf("natsstore: %w %q", record.ErrUnknownInstance, id)
		}
		if err != nil {
			return stepRecord{}, 0, nil, &RequestError{Op: "read", Instance: id, Err: err}
		}
		if m.Sequence >= floor {
			break
		}
		stale := &RequestError{Op: "read", Instance: id, Err: fmt.Errorf("%w: got revision %d, this store has seen %d", errStale, m.Sequence, floor)}
		if try == staleTries {
			return stepRecord{}, 0, nil, stale
		}
		s.log.Debug("natsstore: a read met a lagging server: reading again", zap.String("instance", id), zap.Error(stale))
		select {
		case <-rctx.Done():
			return stepRecord{}, 0, nil, stale
		case <-time.After(time.Duration(try) * 50 * time.Millisecond):
		}
	}
	r, err := decodeStep(id, m.Data)
	if err != nil {
		return stepRecord{}, 0, nil, &CorruptError{Subject: m.Subject, Seq: m.Sequence, Instance: id, Err: err}
	}
	s.saw(id, m.Sequence, r.Outbox, r.Snapshot.Commits, epoch)
	s.retire(id, done(r))
	return r, m.Sequence, m.Data, nil
}

// seenSeq is the newest revision of instance id this store has read or
// written, 0 if none it still remembers.
func (s *Store) seenSeq(id string) uint64 {
	v, ok := s.fences.Load(id)
	if !ok {
		return 0
	}
	f := v.(*fence)
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.known {
		return 0
	}
	return f.seq
}

// doneSeq is the revision at which this store saw instance id done
// (finished, its outbox settled), 0 if it did not or no longer remembers.
// No commit follows that revision, so a view of the instance older than it
// is a lagging server's.
func (s *Store) doneSeq(id string) uint64 {
	v, ok := s.fences.Load(id)
	if !ok || !v.(*fence).done.Load() {
		return 0
	}
	return s.seenSeq(id)
}

// scanBatch is how many messages one pull asks for.
const scanBatch = 512

// scan passes the messages of stream st on subject filter to fn in stream
// order, through an ephemeral consumer with the given deliver policy, up to
// and including sequence until: messages written after the scan began are
// left out. With until 0 the bound is the stream's last message once the
// consumer exists: a consumer delivering the last message per subject picks
// them when it is created, and each of those is at or below that bound.
// fn's first error ends the scan.
//
// On a cluster the consumer lives on one of the stream's servers, which
// may lag behind the stream's leader (a server back from a cut is, for a
// while): its view of the stream can end early. The scan then reads
// again on a new consumer, reset first undoing what fn gathered, for at
// most staleTries reads; the bound it must reach is the leader's.
func (s *Store) scan(ctx context.Context, st jetstream.Stream, filter string, policy jetstream.DeliverPolicy, until uint64, reset func(), fn func(jetstream.Msg, uint64) error) error {
	// want is the last message the scan must see: until, or the leader's
	// last message on filter as the scan begins (a later one need not be
	// seen, so that steady writes cannot keep a read from ever ending).
	want := until
	if want == 0 {
		lctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
		m, err := jsretry.Do(lctx, jsretry.Per(s.cfg.Timeout), func(ctx context.Context) (*jetstream.RawStreamMsg, error) {
			return st.GetLastMsgForSubject(ctx, filter)
		})
		cancel()
		switch {
		case errors.Is(err, jetstream.ErrMsgNotFound):
		case err != nil:
			return &RequestError{Op: "read " + filter, Err: err}
		default:
			want = m.Sequence
		}
	}
	for try := 1; ; try++ {
		err := s.scanOnce(ctx, st, filter, policy, until, want, fn)
		if !errors.Is(err, errStale) || try == staleTries {
			return err
		}
		s.log.Debug("natsstore: a read met a lagging server: reading again", zap.String("filter", filter), zap.Error(err))
		reset()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Duration(try) * 50 * time.Millisecond):
		}
	}
}

// staleTries bounds the reads of a scan that keeps meeting lagging
// servers.
const staleTries = 10

// errStale means a scan's consumer saw less of the stream than its leader
// holds.
var errStale = errors.New("the server read from lags behind the stream's leader")

// scanOnce is one try of scan: want is the last message it must see.
func (s *Store) scanOnce(ctx context.Context, st jetstream.Stream, filter string, policy jetstream.DeliverPolicy, until, want uint64, fn func(jetstream.Msg, uint64) error) error {
	// A request no server answered is made again; a consumer it created
	// unknown to us is removed by its inactivity threshold.
	rctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	cons, err := jsretry.Do(rctx, jsretry.Per(s.cfg.Timeout), func(ctx context.Context) (jetstream.Consumer, error) {
		return st.CreateConsumer(ctx, jetstream.ConsumerConfig{
			FilterSubject:     filter,
			DeliverPolicy:     policy,
			AckPolicy:         jetstream.AckNonePolicy,
			MemoryStorage:     true,
			Replicas:          1,
			InactiveThreshold: time.Minute, // cleans up after a reader that died mid-scan
		})
	})
	cancel()
	if err != nil {
		return &RequestError{Op: "read " + filter, Err: err}
	}
	name := cons.CachedInfo().Name
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.Timeout)
		defer cancel()
		if err := st.DeleteConsumer(dctx, name); err != nil {
			s.log.Debug("natsstore: delete reader consumer", zap.Error(err))
		}
	}()
	pending := cons.CachedInfo().NumPending
	if pending > 0 && until == 0 {
		ictx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
		info, err := jsretry.Do(ictx, jsretry.Per(s.cfg.Timeout), func(ctx context.Context) (*jetstream.StreamInfo, error) {
			return st.Info(ctx)
		})
		cancel()
		if err != nil {
			return &RequestError{Op: "read " + filter, Err: err}
		}
		until = info.State.LastSeq
	}
	// Each message taken must be the consumer's next delivery: a delivery
	// that reached a pull request already given up on (the server answering
	// late) would otherwise be a message silently missing.
	var ferr error
	var delivered, seen uint64 // the consumer's deliveries; the last stream sequence among them
	var unheard time.Time      // when a pull first reached no consumer
	for pending > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		batch, err := cons.Fetch(int(min(pending, scanBatch)), jetstream.FetchMaxWait(s.cfg.Timeout))
		if err != nil {
			return &RequestError{Op: "read " + filter, Err: err}
		}
		n, done := 0, false
		for m := range batch.Messages() {
			n++
			if done || ferr != nil {
				continue // drain what was asked for
			}
			md, err := m.Metadata()
			if err != nil {
				ferr = &RequestError{Op: "read " + filter, Err: err}
				continue
			}
			if md.Sequence.Consumer != delivered+1 {
				ferr = &RequestError{Op: "read " + filter, Err: fmt.Errorf("delivery %d after %d: a message was lost, read again", md.Sequence.Consumer, delivered)}
				continue
			}
			delivered = md.Sequence.Consumer
			seq := md.Sequence.Stream
			seen = max(seen, seq)
			pending = md.NumPending
			if seq > until {
				done = true
				continue
			}
			ferr = fn(m, seq)
			done = seq >= until
		}
		if n == 0 && ferr == nil && errors.Is(batch.Error(), nats.ErrNoResponders) {
			// On a cluster the consumer may live on another server, whose
			// interest in its pull requests reaches this server's routes a
			// moment after the consumer was created. Nothing was delivered:
			// pull again, for at most the timeout.
			if unheard.IsZero() {
				unheard = time.Now()
			}
			if time.Since(unheard) < s.cfg.Timeout {
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(20 * time.Millisecond):
				}
				continue
			}
		}
		if err := batch.Error(); err != nil && ferr == nil {
			ferr = &RequestError{Op: "read " + filter, Err: err}
		}
		if done || ferr != nil {
			return ferr
		}
		if n == 0 {
			return &RequestError{Op: "read " + filter, Err: fmt.Errorf("%d messages pending, none delivered within %v", pending, s.cfg.Timeout)}
		}
	}
	if ferr == nil && seen < want {
		return &RequestError{Op: "read " + filter, Err: fmt.Errorf("%w: saw up to message %d of %d", errStale, seen, want)}
	}
	return ferr
}
