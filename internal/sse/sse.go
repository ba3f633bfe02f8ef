// Package sse writes server-sent event streams that outlive the HTTP
// server's read and write timeouts.
//
// An http.Server's WriteTimeout bounds a request's whole answer: right for
// a JSON call, fatal for a stream that stays open for hours, whose next
// write fails once the deadline has passed. A Stream lifts the deadline for
// its connection and bounds each write on its own instead, so that a
// client that stops reading still loses its stream (and its slot) within
// the timeout, however long the stream has been open.
package sse

import (
	"errors"
	"io"
	"net/http"
	"time"
)

// ErrNotSupported means the connection cannot stream: its writer does not
// flush.
var ErrNotSupported = errors.New("sse: streaming is not supported on this connection")

// Stream is one open event stream.
type Stream struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
}

// Start readies w for a stream whose every Send must be written within
// timeout (no bound when timeout is zero). Call it before writing the
// header, and End when the stream ends.
func Start(w http.ResponseWriter, timeout time.Duration) (*Stream, error) {
	if _, ok := w.(http.Flusher); !ok {
		return nil, ErrNotSupported
	}
	s := &Stream{w: w, rc: http.NewResponseController(w), timeout: timeout}
	// The client sends nothing more, and no read deadline may end the
	// stream (the server lifts it too once a request's body is read).
	// Writers that cannot set deadlines (a test's recorder) have none.
	if err := s.rc.SetReadDeadline(time.Time{}); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return nil, err
	}
	if err := s.rc.SetWriteDeadline(time.Time{}); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return nil, err
	}
	return s, nil
}

// Send writes what write writes and flushes it, all within the timeout; an
// error means the client is gone or too slow, and the stream should end.
func (s *Stream) Send(write func(w io.Writer)) error {
	s.deadline()
	write(s.w)
	if err := s.rc.Flush(); err != nil {
		return err
	}
	// Between two sends the stream may stay idle for as long as it likes.
	if err := s.rc.SetWriteDeadline(time.Time{}); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return err
	}
	return nil
}

// End bounds the last writes the server makes after the handler returns
// (the end of the chunked body), so that a client that stopped reading
// cannot hold the connection.
func (s *Stream) End() { s.deadline() }

func (s *Stream) deadline() {
	if s.timeout > 0 {
		_ = s.rc.SetWriteDeadline(time.Now().Add(s.timeout))
	}
}
