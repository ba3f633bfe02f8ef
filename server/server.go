package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/batonhq/baton/boltstore"
	"github.com/batonhq/baton/bus"
	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/rules"
)

// StoreFile is the name of the store's file in the data directory.
const StoreFile = "baton.db"

// Server is a built server: its engines, store, transport and API.
type Server struct {
	cfg      Config
	log      *zap.Logger
	tokens   [][]byte
	store    *boltstore.Store
	bus      *bus.Bus
	cat      *catalog
	hub      *hub
	metrics  *metrics
	waits    *reportWaits
	handler  http.Handler
	stopping atomic.Bool
	closeMu  sync.Once
}

// New builds a server from cfg: it loads the workflows, opens the store,
// builds an engine per workflow version and resumes every unfinished
// instance. It does not listen; Handler serves the API. Close releases it.
func New(ctx context.Context, cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	s := &Server{cfg: cfg, log: cfg.Logger, hub: newHub(cfg.EventBuffer)}
	if cfg.TokenFile != "" {
		tokens, err := readTokens(cfg.TokenFile)
		if err != nil {
			return nil, err
		}
		s.tokens = tokens
	}
	flows, err := loadDir(cfg.WorkflowsDir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, &ConfigError{Field: "data", Reason: "cannot be created: " + err.Error()}
	}
	s.store, err = boltstore.Open(filepath.Join(cfg.DataDir, StoreFile), boltstore.WithLogger(cfg.Logger), boltstore.WithBatch(64))
	if err != nil {
		return nil, fmt.Errorf("server: open the store: %w", err)
	}
	s.bus = bus.New(bus.WithLogger(cfg.Logger), bus.WithAckMessages(false))
	s.metrics = newMetrics(s.bus)
	s.waits = newReportWaits(cfg.ReportWait)
	s.cat, err = buildCatalog(ctx, flows, s.store, s.bus, cfg.Logger, s.waits, s.observer)
	if err != nil {
		_ = s.bus.Close()
		_ = s.store.Close()
		return nil, err
	}
	s.metrics.reg.MustRegister(conditionErrors{cat: s.cat})
	if err := s.cat.resume(ctx, cfg.Logger); err != nil {
		s.Close()
		return nil, fmt.Errorf("server: resume: %w", err)
	}
	s.handler = s.routes()
	return s, nil
}

// observer is the engine observer of w's engine: every event goes to the
// event stream and the metrics.
func (s *Server) observer(w *rules.Workflow) engine.Observer {
	return func(ev engine.Event) {
		e := eventOf(w, ev)
		s.metrics.observe(e)
		s.hub.publish(e)
	}
}

// Handler serves the HTTP API.
func (s *Server) Handler() http.Handler { return s.handler }

// Close ends the event streams, closes the engines (runs under way are
// left for the next start to resume), the transport and the store. Safe
// to call twice.
func (s *Server) Close() {
	s.closeMu.Do(func() {
		s.stopping.Store(true)
		s.hub.close()
		s.waits.close()
		s.cat.close()
		_ = s.bus.Close()
		if err := s.store.Close(); err != nil {
			s.log.Error("server: close the store", zap.Error(err))
		}
	})
}

// Run builds the server, serves the API on cfg.HTTPAddr until ctx ends,
// then shuts down gracefully: no new requests, requests in flight given
// the grace period, engines and store closed.
func Run(ctx context.Context, cfg Config) error {
	s, err := New(ctx, cfg)
	if err != nil {
		return err
	}
	defer s.Close()
	ln, err := net.Listen("tcp", s.cfg.HTTPAddr)
	if err != nil {
		return fmt.Errorf("server: listen on %s: %w", s.cfg.HTTPAddr, err)
	}
	if s.cfg.OnListen != nil {
		s.cfg.OnListen(ln.Addr())
	}
	s.log.Info("server: serving the HTTP API", zap.String("addr", ln.Addr().String()), zap.Bool("tokens", len(s.tokens) > 0))
	hs := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          zap.NewStdLog(s.log),
	}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	select {
	case err := <-served:
		return fmt.Errorf("server: %w", err)
	case <-ctx.Done():
	}
	s.log.Info("server: shutting down")
	s.stopping.Store(true)
	s.hub.close() // streams end, so that Shutdown does not wait for them
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.GracePeriod)
	defer cancel()
	err = hs.Shutdown(sctx)
	if serr := <-served; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	if err != nil {
		_ = hs.Close()
		return fmt.Errorf("server: shutdown: %w", err)
	}
	return nil
}
