package natsstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/nats-io/nats.go/jetstream"
)

// JetStream's error codes of a write refused for want of storage: the
// server's storage limit reached, or its disk full.
const (
	errCodeInsufficientResources = 10023 // 503 "insufficient resources"
	errCodeStorageExceeded       = 10047 // "insufficient storage resources available"
)

// writeHealth is what the store knows of the server taking its writes.
type writeHealth struct {
	mu      sync.Mutex
	refused error // the last write refused for want of storage; nil once one went through
	// probing is held while Writable sends a test write: readiness checks
	// may come often and at once, and one test write at a time answers
	// them all. (A refused write costs the server no storage.)
	probing sync.Mutex
}

// noteWrite records the outcome of a write: a refusal for want of
// storage, or a write that went through (any other failure tells
// nothing of the storage).
func (s *Store) noteWrite(err error) {
	switch {
	case err == nil:
		s.health.mu.Lock()
		s.health.refused = nil
		s.health.mu.Unlock()
	case outOfStorage(err):
		s.health.mu.Lock()
		s.health.refused = err
		s.health.mu.Unlock()
	}
}

// outOfStorage tells a write the server refused for want of storage.
func outOfStorage(err error) bool {
	var api *jetstream.APIError
	if !errors.As(err, &api) {
		return false
	}
	return api.ErrorCode == errCodeInsufficientResources || api.ErrorCode == errCodeStorageExceeded ||
		strings.Contains(api.Description, "no space left")
}

// probeSubject is where Writable's test writes go: a subject of the first
// steps stream that is no instance's and no partition's.
func (s *Store) probeSubject() string { return s.markerPrefix(0) + "probe" }

// Writable reports whether the server takes the store's writes. It
// answers nil until a write is refused for want of storage (the server's
// storage limit, a full disk); from then on it sends a test write (one at
// a time, removed at once) and answers nil once one goes through, or once
// any commit does, and an error matching ErrNoStorage meanwhile.
// A store opened read-only answers nil.
func (s *Store) Writable(ctx context.Context) error {
	if ctx == nil {
		return errors.New("natsstore: nil context")
	}
	if err := s.enter(); err != nil {
		return err
	}
	defer s.mu.RUnlock()
	if s.readOnly {
		return nil
	}
	h := &s.health
	h.mu.Lock()
	refused := h.refused
	h.mu.Unlock()
	if refused == nil {
		return nil
	}
	if !h.probing.TryLock() {
		return fmt.Errorf("%w: %w", ErrNoStorage, refused)
	}
	defer h.probing.Unlock()
	rctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	_, err := s.js.Publish(rctx, s.probeSubject(), nil)
	if err == nil {
		_ = s.steps[0].Purge(rctx, jetstream.WithPurgeSubject(s.probeSubject()))
	}
	s.noteWrite(err)
	h.mu.Lock()
	refused = h.refused
	h.mu.Unlock()
	if refused != nil {
		return fmt.Errorf("%w: %w", ErrNoStorage, refused)
	}
	if err != nil {
		return &RequestError{Op: "test write", Err: err}
	}
	return nil
}
