package server

import (
	"context"
	"net/http"
	"sync"
	"time"

	"go.uber.org/zap"
)

// pruneRequest is the body of a prune: the cutoff as a time, or as an age
// counted back from the server's clock.
type pruneRequest struct {
	Before    *string `json:"before"`
	OlderThan *string `json:"older_than"`
}

// decodePrune reads a prune's body: exactly one of before (RFC 3339) and
// older_than (a Go duration, not negative), turned into the cutoff.
func decodePrune(data []byte, now time.Time) (time.Time, *apiError) {
	var req pruneRequest
	if e := decode(data, &req); e != nil {
		return time.Time{}, e
	}
	switch {
	case req.Before != nil && req.OlderThan != nil:
		return time.Time{}, badField("older_than", "give before or older_than, not both")
	case req.Before != nil:
		t, err := time.Parse(time.RFC3339Nano, *req.Before)
		if err != nil {
			return time.Time{}, badField("before", "must be an RFC 3339 time (2026-01-02T15:04:05Z)")
		}
		return t, nil
	case req.OlderThan != nil:
		d, err := time.ParseDuration(*req.OlderThan)
		if err != nil || d < 0 {
			return time.Time{}, badField("older_than", "must be a duration that is not negative (720h)")
		}
		return now.Add(-d), nil
	}
	return time.Time{}, badField("before", "is required (or older_than)")
}

// pruneAnswer is what a prune answers.
type pruneAnswer struct {
	Pruned int       `json:"pruned"`
	Before time.Time `json:"before"`
}

// prune deletes the finished instances last updated before the cutoff,
// with their history and outbox, from the running server's store.
func (s *Server) prune(w http.ResponseWriter, r *http.Request) {
	data, e := readBody(w, r)
	if e != nil {
		writeError(w, e)
		return
	}
	before, e := decodePrune(data, time.Now())
	if e != nil {
		writeError(w, e)
		return
	}
	n, err := s.store.Prune(r.Context(), before)
	if err != nil {
		writeError(w, unavailable("the store did not answer: "+err.Error()))
		return
	}
	s.log.Info("server: pruned finished instances", zap.Int("pruned", n), zap.Time("before", before))
	writeJSON(w, http.StatusOK, pruneAnswer{Pruned: n, Before: before.UTC()})
}

// retention prunes the finished instances older than Config.Retain, once
// as the server starts and then every Config.PruneEvery, on a goroutine
// the server owns: stop ends it and waits.
type retention struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// startRetention starts the retention goroutine, when Config.Retain asks
// for one.
func (s *Server) startRetention() {
	if s.cfg.Retain <= 0 {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.keep = &retention{cancel: cancel}
	s.keep.wg.Go(func() {
		tick := time.NewTicker(s.cfg.PruneEvery)
		defer tick.Stop()
		for {
			s.pruneOld(ctx)
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	})
}

// pruneOld is one pass of the retention.
func (s *Server) pruneOld(ctx context.Context) {
	before := time.Now().Add(-s.cfg.Retain)
	n, err := s.store.Prune(ctx, before)
	switch {
	case ctx.Err() != nil:
	case err != nil:
		s.log.Warn("server: retention: prune failed; trying again at the next pass", zap.Error(err), zap.Duration("every", s.cfg.PruneEvery))
	case n > 0:
		s.log.Info("server: retention: pruned finished instances", zap.Int("pruned", n), zap.Time("before", before))
	}
}

// stopRetention stops the retention goroutine and waits for it. Safe when
// none runs.
func (s *Server) stopRetention() {
	if s.keep == nil {
		return
	}
	s.keep.cancel()
	s.keep.wg.Wait()
}
