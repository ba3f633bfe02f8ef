package ops

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/record"
)

// Paging limits: a page holds DefaultLimit items unless the query asks for
// another number, up to MaxLimit.
const (
	DefaultLimit = 50
	MaxLimit     = 1000
)

// ListQuery selects instances. Zero fields select all.
type ListQuery struct {
	Workflow string
	// Status is one of the Status values.
	Status string
	State  string
	// Version selects one version of the workflows.
	Version int
	// IDPrefix selects the ids that start with it.
	IDPrefix string
	// Since and Until bound the creation time: Since <= created < Until.
	Since, Until time.Time
	// Cursor is the Next of the previous page.
	Cursor string
	// Limit is the page's size: DefaultLimit when 0, at most MaxLimit.
	Limit int
}

// Match reports whether q selects in, paging aside.
func (q ListQuery) Match(in Instance) bool {
	switch {
	case q.Workflow != "" && in.Workflow != q.Workflow,
		q.Status != "" && in.Status != q.Status,
		q.State != "" && in.State != q.State,
		q.Version != 0 && in.Version != q.Version,
		!strings.HasPrefix(in.ID, q.IDPrefix),
		!q.Since.IsZero() && in.Created.Before(q.Since),
		!q.Until.IsZero() && !in.Created.Before(q.Until):
		return false
	}
	return true
}

// Page is one page of instances; Next is the cursor of the next page, ""
// on the last.
type Page struct {
	Instances []Instance
	Next      string
}

func limitOf(n int) (int, error) {
	switch {
	case n == 0:
		return DefaultLimit, nil
	case n < 1 || n > MaxLimit:
		return 0, Invalid("limit", fmt.Sprintf("must be a whole number from 1 to %d", MaxLimit))
	}
	return n, nil
}

func badCursor() *Error { return Invalid("cursor", "is not a cursor this server gave") }

// List returns one page of the instances q selects, newest first (in the
// order the store took their starts). The store pages: a page costs what
// it returns and what the filters skip, not the number of instances kept.
// The cursor is the store's, base64-encoded so that clients treat it as
// opaque.
func (o *Ops) List(ctx context.Context, q ListQuery) (Page, error) {
	limit, err := limitOf(q.Limit)
	if err != nil {
		return Page{}, err
	}
	if q.Status != "" && !slices.Contains(Statuses, q.Status) {
		return Page{}, Invalid("status", "must be one of "+strings.Join(Statuses, ", "))
	}
	var after string
	if q.Cursor != "" {
		raw, err := base64.RawURLEncoding.DecodeString(q.Cursor)
		if err != nil || len(raw) == 0 {
			return Page{}, badCursor()
		}
		after = string(raw)
	}
	snaps, next, err := record.List(ctx, o.store, record.ListQuery{
		Workflow: q.Workflow, Status: storeStatus(q.Status), State: q.State,
		Match: func(snap record.Snapshot) bool { return q.Match(o.instance(snap)) },
		Limit: limit, After: after,
	})
	switch {
	case errors.Is(err, record.ErrBadCursor):
		return Page{}, badCursor()
	case err != nil:
		return Page{}, storeError(err)
	}
	page := Page{Instances: make([]Instance, len(snaps))}
	var buf []engine.Pending
	for k, snap := range snaps {
		in := o.instance(snap)
		if f, ok := o.cat.Flow(snap.Hash); ok {
			if !in.Finished() {
				var held bool
				if buf, held = heldPending(&in, f, buf); !held {
					snapshotPending(&in, snap, f.Workflow)
				}
			}
			o.markOnLimit(ctx, &in, f.Workflow)
		}
		page.Instances[k] = in
	}
	if next != "" {
		page.Next = base64.RawURLEncoding.EncodeToString([]byte(next))
	}
	return page, nil
}

// DeadLetterQuery selects dead letters. Zero fields select all.
type DeadLetterQuery struct {
	Reason string
	// Instance selects the dead letters holding that instance's work.
	Instance string
	// Cursor is the Next of the previous page.
	Cursor string
	// Limit is the page's size: DefaultLimit when 0, at most MaxLimit.
	Limit int
}

// DeadLetterPage is one page of dead letters; Next is "" on the last.
type DeadLetterPage struct {
	DeadLetters []record.DeadLetter
	Next        string
}

// DeadLetters returns one page of the stored dead letters q selects,
// newest first, paged by their sequence numbers.
func (o *Ops) DeadLetters(ctx context.Context, q DeadLetterQuery) (DeadLetterPage, error) {
	limit, err := limitOf(q.Limit)
	if err != nil {
		return DeadLetterPage{}, err
	}
	before := 0
	if q.Cursor != "" {
		n, err := strconv.Atoi(q.Cursor)
		if err != nil || n < 1 {
			return DeadLetterPage{}, badCursor()
		}
		before = n
	}
	all, err := o.store.DeadLetters(ctx)
	if err != nil {
		return DeadLetterPage{}, storeError(err)
	}
	out := make([]record.DeadLetter, 0, min(limit+1, len(all)))
	for _, d := range slices.Backward(all) {
		if (before > 0 && d.Seq >= before) || (q.Reason != "" && d.Reason != q.Reason) || (q.Instance != "" && d.Instance != q.Instance) {
			continue
		}
		out = append(out, d)
		if len(out) > limit {
			break
		}
	}
	page := DeadLetterPage{DeadLetters: out}
	if len(out) > limit {
		page.DeadLetters = out[:limit]
		page.Next = strconv.Itoa(out[limit-1].Seq)
	}
	return page, nil
}
