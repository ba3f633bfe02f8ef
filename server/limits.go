package server

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"go.uber.org/zap"
)

// Defaults of the HTTP server's limits.
const (
	DefaultReadTimeout  = 30 * time.Second
	DefaultWriteTimeout = 60 * time.Second
	DefaultIdleTimeout  = 120 * time.Second
	DefaultMaxStreams   = 1000
	// maxHeaderTime bounds the reading of a request's headers, within the
	// read timeout.
	maxHeaderTime = 10 * time.Second
)

func (c Config) withLimits() Config {
	if c.ReadTimeout == 0 {
		c.ReadTimeout = DefaultReadTimeout
	}
	if c.WriteTimeout == 0 {
		c.WriteTimeout = DefaultWriteTimeout
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = DefaultIdleTimeout
	}
	if c.MaxStreams == 0 {
		c.MaxStreams = DefaultMaxStreams
	}
	return c
}

func (c Config) validateLimits() error {
	for _, d := range []struct {
		field string
		v     time.Duration
	}{{"read-timeout", c.ReadTimeout}, {"write-timeout", c.WriteTimeout}, {"idle-timeout", c.IdleTimeout}} {
		if d.v < 0 {
			return &ConfigError{Field: d.field, Reason: "must not be negative"}
		}
	}
	if c.MaxStreams < 0 {
		return &ConfigError{Field: "max-streams", Reason: "must not be negative"}
	}
	return nil
}

// httpServer is the HTTP server of the API, with the configured limits: a
// client can hold a connection only as long as they allow, except an event
// stream (see package internal/sse), which the cap on streams bounds.
func (s *Server) httpServer() *http.Server {
	return &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: min(maxHeaderTime, s.cfg.ReadTimeout),
		ReadTimeout:       s.cfg.ReadTimeout,
		WriteTimeout:      s.cfg.WriteTimeout,
		IdleTimeout:       s.cfg.IdleTimeout,
		ErrorLog:          zap.NewStdLog(s.log),
	}
}

// streamSlots counts the event streams open at once.
type streamSlots chan struct{}

// takeStream reserves a slot for an event stream; release frees it (once,
// however often it is called). Beyond the cap the stream is refused with a
// 503 the client may retry later.
func (s *Server) takeStream() (release func(), e *apiError) {
	select {
	case s.streams <- struct{}{}:
		return sync.OnceFunc(func() { <-s.streams }), nil
	default:
		e := &apiError{Status: http.StatusServiceUnavailable, Code: "too_many_streams",
			Message: "the server has " + strconv.Itoa(cap(s.streams)) + " event streams open already, its limit"}
		return nil, retryLater(e)
	}
}
