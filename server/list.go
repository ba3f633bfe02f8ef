package server

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/batonhq/baton/ops"
)

// limitOf reads a page's size: the default when the query names none.
func limitOf(q url.Values) (int, *apiError) {
	v := q.Get("limit")
	if v == "" {
		return ops.DefaultLimit, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > ops.MaxLimit {
		return 0, badField("limit", fmt.Sprintf("must be a whole number from 1 to %d", ops.MaxLimit))
	}
	return n, nil
}

// list answers a page of instances, newest first; next is null on the
// last page.
func (s *Server) list(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit, e := limitOf(q)
	if e != nil {
		writeError(w, e)
		return
	}
	page, err := s.ops.List(r.Context(), ops.ListQuery{
		Workflow: q.Get("workflow"), Status: q.Get("status"), State: q.Get("state"), Cursor: q.Get("cursor"), Limit: limit,
	})
	if err != nil {
		writeError(w, apiErrorOf(err))
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"instances": page.Instances, "next": nextOf(page.Next)})
}

// nextOf is a page's cursor as the API answers it: null on the last page.
func nextOf(next string) *string {
	if next == "" {
		return nil
	}
	return &next
}
