package server

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/batonhq/baton/record"
)

// Paging.
const (
	defaultLimit = 50
	maxLimit     = 1000
)

func limitOf(q url.Values) (int, *apiError) {
	v := q.Get("limit")
	if v == "" {
		return defaultLimit, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > maxLimit {
		return 0, badField("limit", fmt.Sprintf("must be a whole number from 1 to %d", maxLimit))
	}
	return n, nil
}

func (s *Server) list(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit, e := limitOf(q)
	if e != nil {
		writeError(w, e)
		return
	}
	status := q.Get("status")
	if status != "" && !slices.Contains(statuses, status) {
		writeError(w, badField("status", "must be one of "+strings.Join(statuses, ", ")))
		return
	}
	out, next, e := s.listInstances(r.Context(), instanceQuery{
		workflow: q.Get("workflow"), status: status, state: q.Get("state"), cursor: q.Get("cursor"), limit: limit,
	})
	if e != nil {
		writeError(w, e)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"instances": out, "next": next})
}

// instanceQuery selects instances: the API's filters and the web view's
// (version, id prefix, creation time range). Zero fields select all.
type instanceQuery struct {
	workflow, status, state string
	version                 int
	idPrefix                string
	since, until            time.Time
	cursor                  string
	limit                   int
}

func (q instanceQuery) match(in Instance) bool {
	switch {
	case q.workflow != "" && in.Workflow != q.workflow,
		q.status != "" && in.Status != q.status,
		q.state != "" && in.State != q.state,
		q.version != 0 && in.Version != q.version,
		!strings.HasPrefix(in.ID, q.idPrefix),
		!q.since.IsZero() && in.Created.Before(q.since),
		!q.until.IsZero() && !in.Created.Before(q.until):
		return false
	}
	return true
}

// storeStatus is the store's status of an API status: waiting instances
// are running ones.
func storeStatus(status string) record.Status {
	switch status {
	case "":
		return ""
	case StatusWaiting:
		return record.StatusRunning
	case StatusCancelled:
		return record.StatusCanceled
	}
	return record.Status(status)
}

// listInstances is one page of the instances q selects, newest first (in
// the order the store took their starts), and the cursor of the next page
// (nil on the last). The store pages: a page costs what it returns and what
// the filters skip, not the number of instances kept. The cursor is the
// store's, base64-encoded so that clients treat it as opaque.
func (s *Server) listInstances(ctx context.Context, q instanceQuery) ([]Instance, *string, *apiError) {
	var after string
	if q.cursor != "" {
		raw, err := base64.RawURLEncoding.DecodeString(q.cursor)
		if err != nil || len(raw) == 0 {
			return nil, nil, badField("cursor", "is not a cursor this server gave")
		}
		after = string(raw)
	}
	snaps, next, err := record.List(ctx, s.store, record.ListQuery{
		Workflow: q.workflow, Status: storeStatus(q.status), State: q.state,
		Match: func(snap record.Snapshot) bool { return q.match(s.instance(snap)) },
		Limit: q.limit, After: after,
	})
	switch {
	case errors.Is(err, record.ErrBadCursor):
		return nil, nil, badField("cursor", "is not a cursor this server gave")
	case err != nil:
		return nil, nil, unavailable("the store did not answer: " + err.Error())
	}
	out := make([]Instance, len(snaps))
	for k, snap := range snaps {
		out[k] = s.instance(snap)
	}
	if next == "" {
		return out, nil, nil
	}
	c := base64.RawURLEncoding.EncodeToString([]byte(next))
	return out, &c, nil
}
