package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/batonhq/baton/record"
	"github.com/stretchr/testify/require"
)

func lister(t *testing.T, s record.Store) record.Lister {
	t.Helper()
	l, ok := s.(record.Lister)
	require.True(t, ok, "the store does not implement record.Lister")
	return l
}

// listAll follows a listing's cursors to its last page and returns the ids
// of every page, checking that no page is longer than the limit and that
// only the last one has no cursor.
func listAll(t *testing.T, l record.Lister, q record.ListQuery) [][]string {
	t.Helper()
	var pages [][]string
	for range 1000 {
		page, next, err := l.List(context.Background(), q)
		require.NoError(t, err, "list after %q", q.After)
		require.LessOrEqual(t, len(page), q.PageSize(), "got a page of %d, want at most %d", len(page), q.PageSize())
		ids := make([]string, len(page))
		for k, snap := range page {
			ids[k] = snap.ID
		}
		pages = append(pages, ids)
		if next == "" {
			return pages
		}
		require.NotEmpty(t, page, "an empty page with a next cursor")
		q.After = next
	}
	t.Fatalf("the listing did not end within 1000 pages: %v", pages[:5])
	return nil
}

func flatten(pages [][]string) []string {
	var out []string
	for _, p := range pages {
		out = append(out, p...)
	}
	return out
}

// listed commits a running instance of workflow wf in state st, created at
// the given offset from base.
func listed(t *testing.T, s record.Store, id, wf, st string, status record.Status, created time.Duration) record.Snapshot {
	t.Helper()
	snap := record.Snapshot{ID: id, Workflow: wf, Version: 1, Hash: "h-" + wf, Status: status, State: st, Step: 1,
		Created: base.Add(created), Updated: base.Add(created), Commits: 1}
	commit(t, s, snap)
	return snap
}

// testListNewestFirst lists instances newest first by their first commit,
// each with its last committed snapshot: a later step of an old instance
// does not make it newer.
func testListNewestFirst(t *testing.T, s record.Store) {
	l := lister(t, s)
	var want []string
	for k := range 6 {
		id := fmt.Sprintf("i-%d", k)
		listed(t, s, id, "refund", "A", record.StatusRunning, time.Duration(k)*time.Second)
		want = append([]string{id}, want...)
	}
	later := fullSnapshot("i-1", 2)
	later.Workflow, later.Created, later.Updated, later.Commits = "refund", base.Add(time.Second), base.Add(time.Hour), 2
	commit(t, s, later)

	page, next, err := l.List(context.Background(), record.ListQuery{Limit: 10})
	require.NoError(t, err)
	require.Empty(t, next, "got a next cursor on the only page")
	got := make([]string, len(page))
	for k, snap := range page {
		got[k] = snap.ID
	}
	require.Equal(t, want, got, "got order %v, want newest first %v", got, want)
	requireSnapshot(t, page[4], later)
}

// testListPages follows the cursors of pages of every size: the pages
// cover every instance exactly once, newest first, and only the last page
// has no cursor.
func testListPages(t *testing.T, s record.Store) {
	l := lister(t, s)
	var want []string
	for k := range 11 {
		id := fmt.Sprintf("p-%02d", k)
		// Equal created times: the order is the store's, not the clock's.
		listed(t, s, id, "refund", "A", record.StatusRunning, time.Duration(k/3)*time.Second)
		want = append([]string{id}, want...)
	}
	for _, limit := range []int{1, 2, 3, 10, 11, 12} {
		pages := listAll(t, l, record.ListQuery{Limit: limit})
		require.Equal(t, want, flatten(pages), "limit %d: got %v, want %v", limit, pages, want)
		require.Len(t, pages, max(1, (len(want)+limit-1)/limit), "limit %d: got pages %v", limit, pages)
	}
}

// testListFilters selects by workflow, status, state and Match, on a page
// and across pages.
func testListFilters(t *testing.T, s record.Store) {
	l := lister(t, s)
	listed(t, s, "a-run", "alpha", "A", record.StatusRunning, 0)
	listed(t, s, "b-run", "beta", "A", record.StatusRunning, 1)
	listed(t, s, "a-done", "alpha", "END", record.StatusCompleted, 2)
	listed(t, s, "a-fail", "alpha", "B", record.StatusFailed, 3)
	listed(t, s, "b-done", "beta", "END", record.StatusCompleted, 4)
	listed(t, s, "a-run2", "alpha", "B", record.StatusRunning, 5)
	cases := []struct {
		name string
		q    record.ListQuery
		want []string
	}{
		{"workflow", record.ListQuery{Workflow: "alpha"}, []string{"a-run2", "a-fail", "a-done", "a-run"}},
		{"status", record.ListQuery{Status: record.StatusCompleted}, []string{"b-done", "a-done"}},
		{"state", record.ListQuery{State: "B"}, []string{"a-run2", "a-fail"}},
		{"all three", record.ListQuery{Workflow: "alpha", Status: record.StatusRunning, State: "A"}, []string{"a-run"}},
		{"match", record.ListQuery{Match: func(s record.Snapshot) bool { return s.ID[0] == 'b' }}, []string{"b-done", "b-run"}},
		{"none", record.ListQuery{Workflow: "gamma"}, nil},
	}
	for _, c := range cases {
		for _, limit := range []int{1, 2, 10} {
			q := c.q
			q.Limit = limit
			got := flatten(listAll(t, l, q))
			require.Equal(t, c.want, got, "%s, limit %d: got %v, want %v", c.name, limit, got, c.want)
		}
	}
}

// testListChanges pages while instances come and go: an instance created
// after the first page is on none of the later ones, a pruned one is left
// out, and a cursor the store did not give is ErrBadCursor. The order is
// that of first commits, whatever the created times say.
func testListChanges(t *testing.T, s record.Store) {
	l := lister(t, s)
	ctx := context.Background()
	for k := range 4 {
		listed(t, s, fmt.Sprintf("c-%d", k), "refund", "A", record.StatusRunning, time.Duration(k)*time.Second)
	}
	old := listed(t, s, "c-old", "refund", "END", record.StatusCompleted, -time.Hour)
	page, next, err := l.List(ctx, record.ListQuery{Limit: 2})
	require.NoError(t, err)
	require.Len(t, page, 2)
	require.NotEmpty(t, next)

	listed(t, s, "c-new", "refund", "A", record.StatusRunning, time.Hour)
	p, ok := s.(record.Pruner)
	require.True(t, ok, "the store does not implement record.Pruner")
	n, err := p.Prune(ctx, old.Updated.Add(time.Nanosecond))
	require.NoError(t, err)
	require.Equal(t, 1, n)

	rest := flatten(listAll(t, l, record.ListQuery{Limit: 2, After: next}))
	require.Equal(t, []string{"c-2", "c-1", "c-0"}, rest, "got %v after the first page, want [c-2 c-1 c-0]", rest)
	all := flatten(listAll(t, l, record.ListQuery{Limit: 100}))
	require.Equal(t, []string{"c-new", "c-3", "c-2", "c-1", "c-0"}, all)

	for _, bad := range []string{"-1", "not a cursor", "t!!"} {
		_, _, err := l.List(ctx, record.ListQuery{Limit: 2, After: bad})
		require.ErrorIs(t, err, record.ErrBadCursor, "cursor %q", bad)
	}
}

// testListEmpty lists an empty store: one empty page, no cursor.
func testListEmpty(t *testing.T, s record.Store) {
	page, next, err := lister(t, s).List(context.Background(), record.ListQuery{})
	require.NoError(t, err)
	require.Empty(t, page)
	require.Empty(t, next)
}
