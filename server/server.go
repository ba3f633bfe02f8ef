package server

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"

	"go.uber.org/zap"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/mcpserver"
	"github.com/batonhq/baton/ops"
	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/rules"
)

// Server is a built server: its engines, store, transport and API.
type Server struct {
	cfg      Config
	log      *zap.Logger
	tokens   [][]byte
	digests  [][32]byte // of tokens
	back     *backend
	store    record.Store
	cat      *catalog
	ops      *ops.Ops // the operations every front door calls
	hub      *hub
	streams  streamSlots
	metrics  *metrics
	waits    *reportWaits
	clu      *cluster   // nil unless the server shares a NATS system
	live     liveFlows  // the instances its engines run, for reports
	keep     *retention // nil without Config.Retain
	rl       reloader
	handler  http.Handler
	mcp      *mcpserver.Server // the MCP front door
	stopping atomic.Bool
	closeMu  sync.Once
}

// New builds a server from cfg: it loads the workflows, starts or joins
// NATS (or opens the bbolt store without it), builds an engine per
// workflow version, resumes every unfinished instance and takes the
// reports of agents on NATS. It does not listen for HTTP; Handler serves
// the API. Close releases it.
func New(ctx context.Context, cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	s := &Server{cfg: cfg, log: cfg.Logger, hub: newHub(cfg.EventBuffer), streams: make(streamSlots, cfg.MaxStreams)}
	if cfg.TokenFile != "" {
		tokens, err := readTokens(cfg.TokenFile)
		if err != nil {
			return nil, err
		}
		s.tokens = tokens
		for _, t := range tokens {
			s.digests = append(s.digests, sha256.Sum256(t))
		}
	}
	flows, err := loadDir(cfg.WorkflowsDir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, &ConfigError{Field: "data", Reason: "cannot be created: " + err.Error()}
	}
	if s.back, err = openBackend(ctx, cfg); err != nil {
		return nil, err
	}
	s.store = s.back.store
	s.metrics = newMetrics(s.back.figures)
	s.waits = newReportWaits(cfg.ReportWait)
	s.cat, err = buildCatalog(ctx, flows, s.store, s.back.tr, cfg, s.waits, s.observer)
	if err != nil {
		s.back.close(s.log)
		return nil, err
	}
	s.ops = s.newOps()
	for _, f := range s.cat.flows() {
		s.metrics.engines.Watch(f.eng) // as long as the server: the catalog only grows (Reload adds)
	}
	if s.back.natsStore != nil {
		// The instances are resumed partition by partition as the server
		// takes them.
		if err := s.joinCluster(ctx); err != nil {
			s.Close()
			return nil, err
		}
	} else {
		if err := s.cat.resume(ctx, cfg.Logger); err != nil {
			s.Close()
			return nil, fmt.Errorf("server: resume: %w", err)
		}
		if err := s.back.serveReports(s.route); err != nil {
			s.Close()
			return nil, err
		}
	}
	s.handler = s.routes()
	s.startRetention()
	s.startWatch()
	if s.back.url != "" && cfg.OnNATS != nil {
		cfg.OnNATS(s.back.url)
	}
	return s, nil
}

// NATSURL is the URL agents connect to NATS on: the embedded server's
// address, or the URL the server joined; empty without NATS.
func (s *Server) NATSURL() string { return s.back.url }

// observer is the engine observer of w's engine: every event goes to the
// event stream and the metrics.
func (s *Server) observer(w *rules.Workflow) engine.Observer {
	return func(ev engine.Event) {
		s.live.observe(w.Hash, ev)
		s.metrics.engines.Observe(ev)
		out := eventOf(ev)
		s.hub.publish(out)
		s.shareEvent(out)
	}
}

// Handler serves the HTTP API.
func (s *Server) Handler() http.Handler { return s.handler }

// Drain prepares a graceful stop: new starts are refused (503), Go
// handlers (HTTP agents' calls included) start no new run, and Drain waits
// until the runs under way have committed their outcomes, or until ctx
// ends. Reports are still taken. What was not run stays in the store for
// the next start. Close the server after it.
func (s *Server) Drain(ctx context.Context) error {
	s.stopping.Store(true)
	flows := s.cat.flows()
	errs := make(chan error, len(flows))
	for _, f := range flows {
		go func() { errs <- f.eng.Drain(ctx) }()
	}
	var err error
	for range flows {
		err = errors.Join(err, <-errs)
	}
	if err != nil {
		return fmt.Errorf("server: drain: %w", err)
	}
	return nil
}

// Close ends the event streams and the reports over NATS, closes the
// engines (runs under way are left for the next start to resume), the
// transport, the store and NATS. Safe to call twice.
func (s *Server) Close() {
	s.closeMu.Do(func() {
		s.stopping.Store(true)
		s.stopWatch()
		s.stopRetention()
		s.hub.close()
		s.mcp.Close()
		s.waits.close()
		s.back.stopReports(s.log)
		s.leave() // hands the partitions over: the others resume them at once
		s.cat.close()
		s.back.close(s.log)
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
	hs := s.httpServer()
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	select {
	case err := <-served:
		return fmt.Errorf("server: %w", err)
	case <-ctx.Done():
	}
	s.log.Info("server: shutting down: no new instances; waiting for the runs under way", zap.Duration("grace", s.cfg.GracePeriod))
	s.stopping.Store(true)
	s.hub.close() // streams end, so that Shutdown does not wait for them
	s.mcp.Close() // and so do the MCP sessions' streams
	gctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.GracePeriod)
	defer cancel()
	// The HTTP requests in flight and the handlers' runs end together,
	// within one grace period.
	drained := make(chan error, 1)
	go func() { drained <- s.Drain(gctx) }()
	err = hs.Shutdown(gctx)
	if serr := <-served; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	if derr := <-drained; derr != nil {
		s.log.Warn("server: runs still under way after the grace period are left for the next start", zap.Error(derr))
	} else {
		s.log.Info("server: every run under way has ended")
	}
	if err != nil {
		_ = hs.Close()
		return fmt.Errorf("server: shutdown: %w", err)
	}
	return nil
}
