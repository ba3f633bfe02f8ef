package natsserver

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"go.uber.org/zap"
)

// Why heal exists: when a write of a JetStream file store fails (the disk
// is full: "no space left on device"), nats-server keeps the error on the
// stream's store and fails every later write with it, answering none of
// them, until the stream is loaded again, which otherwise only a restart
// of the server does. Freeing space changes nothing on its own. So the
// server watches its streams for such a write error and, once the disk
// takes a test write again, loads its streams again from their files (a
// write that did not make it whole is dropped, as after a crash; nothing
// acknowledged is lost, every write being synced to disk before its
// acknowledgement by default), and writes go through again. Client
// connections stay open meanwhile; requests made during the reload fail
// as JetStream being unavailable.

// probeSize is the size of the test write that tells the disk has room
// again: enough for a stream to start a new block of messages.
const probeSize = 1 << 20

// Healthy reports whether JetStream takes writes: nil, or a *HealthError
// (errors.Is ErrUnhealthy) saying why not (a stream failed to write, a full
// disk; the streams are being loaded again). It answers from the server's last
// check (every Config.HealthInterval), so it costs nothing: a caller may
// ask before every write.
func (s *Server) Healthy() error {
	if s.restarting.Load() {
		return &HealthError{Reason: "JetStream's streams are being loaded again after a write error"}
	}
	if reason := s.unhealthy.Load(); reason != nil {
		return &HealthError{Reason: *reason}
	}
	return nil
}

// writeError returns the first write error a stream or consumer of the
// server holds, "" when none does.
func writeError(ns *server.Server) string {
	h := ns.Healthz(&server.HealthzOptions{Details: true})
	if h == nil {
		return ""
	}
	for _, e := range h.Errors {
		if strings.Contains(e.Error, "write error") {
			return e.Error
		}
	}
	if strings.Contains(h.Error, "write error") {
		return h.Error
	}
	return ""
}

// heal checks JetStream every interval and loads its streams again
// (restart) when one holds a write error (or starts JetStream when it went
// off) and the disk takes a test write, until Close.
func (s *Server) heal(interval time.Duration) {
	defer s.healing.Done()
	t := time.NewTicker(interval)
	defer t.Stop()
	reported := false
	for {
		select {
		case <-s.quit:
			return
		case <-t.C:
		}
		reason := ""
		if !s.ns.JetStreamEnabled() {
			reason = "JetStream is not enabled"
		} else {
			reason = writeError(s.ns)
		}
		if reason == "" {
			s.unhealthy.Store(nil)
			reported = false
			continue
		}
		s.unhealthy.Store(&reason)
		if !reported {
			s.log.Warn("natsserver: JetStream cannot write; its streams are loaded again once the disk takes writes", zap.String("reason", reason))
			reported = true
		}
		if err := probe(s.dir); err != nil {
			continue
		}
		if err := s.restart(); err != nil {
			s.log.Error("natsserver: JetStream's streams not loaded again; trying again", zap.Error(err))
			continue
		}
		s.log.Warn("natsserver: JetStream's streams loaded again after a write error: they take writes again")
		s.unhealthy.Store(nil)
		reported = false
	}
}

// restart loads JetStream's streams again from their files. A whole
// restart of JetStream (ShutdownJetStream, EnableJetStream) races, in
// nats-server, with the API requests of connected clients; the account's
// JetStream is turned off and on instead, as nats-server does at run time
// when an account's limits change: its streams stop (their files stay) and
// are loaded again. JetStream off altogether is started again.
func (s *Server) restart() error {
	s.restarting.Store(true)
	defer s.restarting.Store(false)
	if !s.ns.JetStreamEnabled() {
		cfg := s.js
		// StoreDir is given as at the start: JetStream adds its own
		// "jetstream" directory to it.
		cfg.StoreDir = s.dir
		if err := s.ns.EnableJetStream(&cfg); err != nil {
			return fmt.Errorf("natsserver: start JetStream: %w", err)
		}
		return nil
	}
	acc := s.ns.GlobalAccount()
	if err := acc.DisableJetStream(); err != nil {
		return fmt.Errorf("natsserver: stop JetStream's streams: %w", err)
	}
	if err := acc.EnableJetStream(nil, nil); err != nil {
		return fmt.Errorf("natsserver: load JetStream's streams again: %w", err)
	}
	return nil
}

// probe writes probeSize bytes to a file in dir, syncs and removes it: an
// error means the disk has no room for it.
func probe(dir string) (err error) {
	f, err := os.CreateTemp(dir, ".probe-*")
	if err != nil {
		return err
	}
	defer func() {
		err = errors.Join(err, f.Close(), os.Remove(f.Name()))
	}()
	if _, err := f.Write(make([]byte, probeSize)); err != nil {
		return err
	}
	return f.Sync()
}
