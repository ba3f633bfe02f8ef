package record

import (
	"context"
	"slices"
)

// listed numbers a new instance and puts it at the end of the order List
// walks.
func (s *MemStore) listed(mi *memInstance) {
	s.ordMu.Lock()
	defer s.ordMu.Unlock()
	s.ordSeq++
	mi.seq = s.ordSeq
	s.order = append(s.order, mi)
}

// unlisted counts an instance dropped from the store: once half of the
// order is gone it is compacted (amortised), so that dropped instances are
// not kept alive by it.
func (s *MemStore) unlisted() {
	s.ordMu.Lock()
	defer s.ordMu.Unlock()
	s.ordGone++
	if s.ordGone*2 <= len(s.order) {
		return
	}
	kept := s.order[:0]
	for _, mi := range s.order {
		mi.mu.Lock()
		gone := mi.gone
		mi.mu.Unlock()
		if !gone {
			kept = append(kept, mi)
		}
	}
	clear(s.order[len(kept):])
	s.order, s.ordGone = kept, 0
}

// listBatch is how many instances List takes from the order at a time.
const listBatch = 64

// List implements Lister: newest first in the order of first commits. The
// cursor is the number of the page's last instance.
func (s *MemStore) List(ctx context.Context, q ListQuery) ([]Snapshot, string, error) {
	if ctx == nil {
		return nil, "", ErrNilContext
	}
	below, err := ParseSeqCursor(q.After)
	if err != nil {
		return nil, "", err
	}
	var (
		out  []Snapshot
		seqs []uint64
	)
	for len(out) <= q.PageSize() {
		if err := ctx.Err(); err != nil {
			return nil, "", err
		}
		batch := s.before(below, listBatch)
		if len(batch) == 0 {
			break
		}
		for _, mi := range batch {
			below = mi.seq
			mi.mu.Lock()
			var snap Snapshot
			gone := mi.gone || refuses(q, &mi.snap)
			if !gone {
				snap = mi.snap.snapshot(&mi.log)
			}
			mi.mu.Unlock()
			if !gone && q.Selects(snap) {
				out = append(out, snap)
				seqs = append(seqs, mi.seq)
			}
		}
	}
	if len(out) <= q.PageSize() {
		return out, "", nil
	}
	out = out[:q.PageSize()]
	return out, SeqCursor(seqs[len(out)-1]), nil
}

// refuses reports whether q's workflow, status or state alone leave m out:
// such an instance's maps, kept encoded once it has finished, are not
// unpacked only to be dropped.
func refuses(q ListQuery, m *memSnap) bool {
	wf := ""
	if m.wf != nil {
		wf = m.wf.name
	}
	return q.Workflow != "" && wf != q.Workflow || q.Status != "" && m.Status() != q.Status || q.State != "" && m.state != q.State
}

// before returns up to n instances numbered below seq (0: any), newest
// first. The instances are locked only after the order is released: a
// Commit holds an instance's lock and then takes the order's.
func (s *MemStore) before(seq uint64, n int) []*memInstance {
	s.ordMu.Lock()
	defer s.ordMu.Unlock()
	end := len(s.order)
	if seq != 0 {
		end, _ = slices.BinarySearchFunc(s.order, seq, func(mi *memInstance, seq uint64) int {
			switch {
			case mi.seq < seq:
				return -1
			case mi.seq > seq:
				return 1
			}
			return 0
		})
	}
	out := make([]*memInstance, 0, min(n, end))
	for k := end - 1; k >= 0 && len(out) < n; k-- {
		out = append(out, s.order[k])
	}
	return out
}
