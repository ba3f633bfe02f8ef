package record

import (
	"context"
	"encoding/base64"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Lister pages through a store's instances newest first, so that a page
// costs what it returns (and what its filters skip), not the number of
// instances the store keeps. MemStore, boltstore and natsstore are Listers;
// List falls back on a full read for a store that is not.
type Lister interface {
	// List returns up to q.Limit instances that q selects, newest first:
	// in the reverse of the order in which the store took their first
	// commits. next is the cursor of the page after this one, "" on the
	// last page. An instance created while a caller pages is on none of
	// the later pages; one deleted (pruned) is left out. A cursor the
	// store did not give is an error matching ErrBadCursor.
	List(ctx context.Context, q ListQuery) (page []Snapshot, next string, err error)
}

// ListQuery selects the instances of a page. Zero fields select all.
type ListQuery struct {
	Workflow string
	Status   Status
	State    string
	// Match, when set, selects further: the instances it refuses are
	// skipped as the other filters' are.
	Match func(Snapshot) bool
	// Limit is the most instances a page holds; less than 1 is taken as 1.
	Limit int
	// After is the cursor the previous page returned: the page starts
	// after the last instance of that page. Empty starts at the newest.
	After string
}

// Selects reports whether q selects snap (its cursor and limit aside).
func (q ListQuery) Selects(snap Snapshot) bool {
	switch {
	case q.Workflow != "" && snap.Workflow != q.Workflow,
		q.Status != "" && snap.Status != q.Status,
		q.State != "" && snap.State != q.State:
		return false
	}
	return q.Match == nil || q.Match(snap)
}

// PageSize is q's limit, at least 1.
func (q ListQuery) PageSize() int { return max(q.Limit, 1) }

// List is one page of the instances q selects: s's own paging when s is a
// Lister, otherwise a page cut from a full read of s's instances (newest
// first by created time, then id), whose cost grows with the store.
func List(ctx context.Context, s Store, q ListQuery) ([]Snapshot, string, error) {
	if ctx == nil {
		return nil, "", ErrNilContext
	}
	if l, ok := s.(Lister); ok {
		return l.List(ctx, q)
	}
	all, err := s.Instances(ctx)
	if err != nil {
		return nil, "", err
	}
	return ListAll(all, q)
}

// ListAll cuts the page q selects out of every instance, all: newest first
// by created time, then by id. Its cursors are its own.
func ListAll(all []Snapshot, q ListQuery) ([]Snapshot, string, error) {
	var (
		after    Snapshot
		hasAfter bool
	)
	if q.After != "" {
		created, id, ok := parseTimeCursor(q.After)
		if !ok {
			return nil, "", fmt.Errorf("%w: %q", ErrBadCursor, q.After)
		}
		after, hasAfter = Snapshot{ID: id, Created: created}, true
	}
	out := make([]Snapshot, 0, min(len(all), q.PageSize()+1))
	for _, snap := range all {
		if q.Selects(snap) && (!hasAfter || newerFirst(after, snap) < 0) {
			out = append(out, snap)
		}
	}
	slices.SortFunc(out, newerFirst)
	if len(out) <= q.PageSize() {
		return out, "", nil
	}
	out = out[:q.PageSize()]
	last := out[len(out)-1]
	return out, timeCursor(last.Created, last.ID), nil
}

// newerFirst orders snapshots newest first by created time, then by id.
func newerFirst(a, b Snapshot) int {
	if c := b.Created.Compare(a.Created); c != 0 {
		return c
	}
	return strings.Compare(a.ID, b.ID)
}

func timeCursor(created time.Time, id string) string {
	return "t" + base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(created.UnixNano(), 10)+"|"+id))
}

func parseTimeCursor(c string) (time.Time, string, bool) {
	enc, ok := strings.CutPrefix(c, "t")
	if !ok {
		return time.Time{}, "", false
	}
	raw, err := base64.RawURLEncoding.DecodeString(enc)
	if err != nil {
		return time.Time{}, "", false
	}
	ts, id, ok := strings.Cut(string(raw), "|")
	if !ok {
		return time.Time{}, "", false
	}
	n, err := strconv.ParseInt(ts, 10, 64)
	return time.Unix(0, n).UTC(), id, err == nil
}

// SeqCursor is the cursor of a page that ended at the instance a store
// numbered seq in the order it took first commits: stores that number
// their instances share this form.
func SeqCursor(seq uint64) string { return strconv.FormatUint(seq, 10) }

// ParseSeqCursor reads a SeqCursor; an empty cursor is 0 (the newest), any
// other that is not one is an error matching ErrBadCursor.
func ParseSeqCursor(c string) (uint64, error) {
	if c == "" {
		return 0, nil
	}
	n, err := strconv.ParseUint(c, 10, 64)
	if err != nil || n == 0 {
		return 0, fmt.Errorf("%w: %q", ErrBadCursor, c)
	}
	return n, nil
}
