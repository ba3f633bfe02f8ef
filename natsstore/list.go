package natsstore

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/batonhq/baton/record"
)

var _ record.Lister = (*Store)(nil)

// maxListBlock bounds how many index messages List asks for at a time when
// its filters skip most of them.
const maxListBlock = 4096

// List implements record.Lister: it walks the index stream down from the
// cursor, in blocks of sequences read forward, and reads the last step of
// each instance met. A page reads about as many messages as it returns,
// plus those its filters skip, however many instances the store keeps. The
// cursor is the index sequence of the page's last instance. On a prefix
// without a complete index (a read-only store of an older release) it
// reads every instance.
func (s *Store) List(ctx context.Context, q record.ListQuery) ([]record.Snapshot, string, error) {
	if ctx == nil {
		return nil, "", record.ErrNilContext
	}
	if err := s.enter(); err != nil {
		return nil, "", err
	}
	defer s.mu.RUnlock()
	if s.index == nil {
		lasts, err := s.lastSteps(ctx)
		if err != nil {
			return nil, "", err
		}
		all := make([]record.Snapshot, len(lasts))
		for k, l := range lasts {
			all[k] = l.rec.Snapshot
		}
		return record.ListAll(all, q)
	}
	below, err := record.ParseSeqCursor(q.After)
	if err != nil {
		return nil, "", err
	}
	ictx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	info, err := s.index.Info(ictx)
	cancel()
	if err != nil {
		return nil, "", &RequestError{Op: "list", Err: err}
	}
	first, hi := max(info.State.FirstSeq, 1), info.State.LastSeq
	if below != 0 {
		hi = min(hi, below-1)
	}
	filter := s.indexFilter(q.Workflow)
	need := q.PageSize() + 1
	var (
		out  []record.Snapshot
		seqs []uint64
	)
	block := uint64(need)
	for hi >= first && hi > 0 && len(out) < need {
		lo := first
		if hi-first+1 > block {
			lo = hi - block + 1
		}
		entries, err := s.readIndex(ctx, filter, lo, hi)
		if err != nil {
			return nil, "", err
		}
		for k := len(entries) - 1; k >= 0 && len(out) < need; k-- {
			snap, ok, err := s.current(ctx, entries[k].id)
			if err != nil {
				return nil, "", err
			}
			if ok && q.Selects(snap) {
				out = append(out, snap)
				seqs = append(seqs, entries[k].seq)
			}
		}
		hi = lo - 1
		block = min(2*block, maxListBlock)
	}
	if len(out) <= q.PageSize() {
		return out, "", nil
	}
	out = out[:q.PageSize()]
	return out, record.SeqCursor(seqs[len(out)-1]), nil
}

// indexEntry is an instance met in the index, at sequence seq.
type indexEntry struct {
	id  string
	seq uint64
}

// readIndex reads the index messages on filter from sequence lo to hi, in
// order, one request per message. A message that is not an index record
// is left out, with a warning: one bad message must not hide the others.
func (s *Store) readIndex(ctx context.Context, filter string, lo, hi uint64) ([]indexEntry, error) {
	var out []indexEntry
	for seq := lo; seq <= hi; {
		rctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
		m, err := s.index.GetMsg(rctx, seq, jetstream.WithGetMsgSubject(filter))
		cancel()
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			break
		}
		if err != nil {
			return nil, &RequestError{Op: "list", Err: err}
		}
		if m.Sequence > hi {
			break
		}
		var r indexRecord
		if err := json.Unmarshal(m.Data, &r); err != nil || r.Format != format || r.ID == "" {
			s.log.Warn("natsstore: an index message is not an index record: left out of lists", zap.String("subject", m.Subject), zap.Uint64("seq", m.Sequence), zap.Error(err))
		} else {
			out = append(out, indexEntry{id: r.ID, seq: m.Sequence})
		}
		seq = m.Sequence + 1
	}
	return out, nil
}

// current reads an instance's last snapshot for a list: ok is false for an
// instance without steps (its first commit failed after its index message
// was written, or it was pruned meanwhile) and for one whose last step
// cannot be read (logged). The revision read is not kept for a commit.
func (s *Store) current(ctx context.Context, id string) (record.Snapshot, bool, error) {
	rctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	m, err := s.stream(id).GetLastMsgForSubject(rctx, s.subject(id))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return record.Snapshot{}, false, nil
	}
	if err != nil {
		return record.Snapshot{}, false, &RequestError{Op: "list", Instance: id, Err: err}
	}
	r, err := decodeStep(id, m.Data)
	if err != nil {
		s.log.Warn("natsstore: an instance's last step cannot be read: left out of lists", zap.String("instance", id), zap.String("subject", m.Subject), zap.Uint64("seq", m.Sequence), zap.Error(err))
		return record.Snapshot{}, false, nil
	}
	return r.Snapshot, true, nil
}
