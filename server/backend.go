package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strconv"

	"github.com/nats-io/nats.go"
	"go.uber.org/zap"

	"github.com/batonhq/baton/boltstore"
	"github.com/batonhq/baton/bus"
	"github.com/batonhq/baton/bus/busprom"
	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/natsbus"
	"github.com/batonhq/baton/natsserver"
	"github.com/batonhq/baton/natsstore"
	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/transport"
	"github.com/batonhq/baton/wire"
)

// Where the server keeps things in its data directory.
const (
	// StoreFile is the bbolt store's file, without NATS (NATS: NoNATS).
	StoreFile = "baton.db"
	// NATSDir holds the embedded NATS server's JetStream data.
	NATSDir = "nats"
)

// backend is where instances and work live: a store and a transport, on
// NATS JetStream (embedded or joined) or, without NATS, on a bbolt file
// and the in-memory bus.
type backend struct {
	store   record.Store
	tr      transport.Transport
	figures busprom.Source
	nc      *nats.Conn // nil without NATS
	// natsStore is the store shared with the other servers of a NATS
	// system the server joined (--nats URL), its instances in partitions
	// leased by one server at a time; nil otherwise.
	natsStore *natsstore.Store
	ns        *natsserver.Server // the embedded server, if any
	url       string             // where agents connect to NATS ("" without)
	stop      func() error       // ends serveReports
	// finished answers the snapshots of the instances this server
	// finished from what it wrote (natsstore.Store.Finished), on its
	// embedded NATS server only, where no other process writes them; nil
	// otherwise.
	finished func(id string) (record.Snapshot, bool)
	closers  []func() error // in the order to close
}

// openBackend opens the backend cfg asks for. On error nothing stays open.
func openBackend(ctx context.Context, cfg Config) (*backend, error) {
	b := &backend{}
	var err error
	if cfg.NATS == NoNATS {
		err = b.openBolt(cfg)
	} else {
		err = b.openNATS(ctx, cfg)
	}
	if err != nil {
		b.close(cfg.Logger)
		return nil, err
	}
	return b, nil
}

func (b *backend) openBolt(cfg Config) error {
	st, err := boltstore.Open(filepath.Join(cfg.DataDir, StoreFile), boltstore.WithLogger(cfg.Logger), boltstore.WithBatch(64))
	if err != nil {
		return fmt.Errorf("server: open the store: %w", err)
	}
	bs := bus.New(bus.WithLogger(cfg.Logger), bus.WithAckMessages(false))
	b.store, b.tr, b.figures = st, bs, bs
	b.closers = []func() error{bs.Close, st.Close}
	return nil
}

func (b *backend) openNATS(ctx context.Context, cfg Config) error {
	if cfg.NATS == "" {
		host, port, err := splitListen(cfg.NATSListen)
		if err != nil {
			return err
		}
		if port != 0 {
			// The embedded server only logs a busy port: find out first, to
			// stop the start with a clear error.
			ln, err := net.Listen("tcp", cfg.NATSListen)
			if err != nil {
				return &ConfigError{Field: "nats-listen", Reason: "cannot be listened on: " + err.Error()}
			}
			_ = ln.Close()
		}
		b.ns, err = natsserver.Start(natsserver.Config{
			Dir: filepath.Join(cfg.DataDir, NATSDir), Listen: true, Host: host, Port: port, SyncInterval: cfg.NATSSyncInterval,
			MaxStore: cfg.NATSMaxStore,
			Logger:   cfg.Logger.Named("nats").WithOptions(zap.IncreaseLevel(zap.WarnLevel)),
		})
		if err != nil {
			return fmt.Errorf("server: start the embedded NATS server: %w", err)
		}
		b.closers = append(b.closers, b.ns.Close)
		b.url = b.ns.URL()
		if b.nc, err = b.ns.Connect(nats.Name("baton-server")); err != nil {
			return fmt.Errorf("server: %w", err)
		}
	} else {
		b.url = cfg.NATS
		var err error
		if b.nc, err = nats.Connect(cfg.NATS, nats.Name("baton-server"), nats.MaxReconnects(-1)); err != nil {
			return &ConfigError{Field: "nats", Reason: "cannot be connected to: " + err.Error()}
		}
	}
	b.closers = append([]func() error{func() error { b.nc.Close(); return nil }}, b.closers...)
	scfg := natsstore.Config{Logger: cfg.Logger, Replicas: cfg.Replicas}
	if b.ns == nil {
		scfg.Partitions = ClusterPartitions
	}
	st, err := natsstore.Open(ctx, b.nc, scfg)
	if err != nil {
		return fmt.Errorf("server: open the store on NATS: %w", err)
	}
	b.closers = append([]func() error{st.Close}, b.closers...)
	tcfg := natsbus.DefaultConfig()
	tcfg.Logger = cfg.Logger
	if cfg.Replicas > 0 {
		tcfg.Replicas = cfg.Replicas
	}
	tr, err := natsbus.New(ctx, b.nc, tcfg)
	if err != nil {
		return fmt.Errorf("server: open the transport on NATS: %w", err)
	}
	b.closers = append([]func() error{tr.Close}, b.closers...)
	b.store, b.tr, b.figures = st, tr, tr
	if b.ns == nil {
		b.natsStore = st
	} else {
		b.store = &gatedStore{Store: st, healthy: b.ns.Healthy}
		b.finished = st.Finished
	}
	return nil
}

// splitListen splits the embedded server's listen address.
func splitListen(addr string) (string, int, error) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, &ConfigError{Field: "nats-listen", Reason: "is not host:port: " + err.Error()}
	}
	port, err := strconv.Atoi(p)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, &ConfigError{Field: "nats-listen", Reason: "has no valid port: " + strconv.Quote(p)}
	}
	if !loopback(host) {
		return "", 0, ErrNATSNotLoopback
	}
	return host, port, nil
}

// serveReports answers the reports agents send over NATS, each routed to
// the engine of its instance's version. Without NATS it does nothing
// (agents report with POST /v1/reports).
func (b *backend) serveReports(route func(context.Context, *wire.Report) (wire.Answer, error)) error {
	if b.nc == nil {
		return nil
	}
	stop, err := natsbus.ServeReports(context.Background(), b.nc, func(ctx context.Context, r *wire.Report) wire.Answer {
		ans, err := route(ctx, r)
		if err != nil {
			// The worker gives the work back and reports again later.
			return wire.Answer{Code: wire.CodeUnknownInstance, Message: err.Error()}
		}
		return ans
	})
	if err != nil {
		return fmt.Errorf("server: serve reports on NATS: %w", err)
	}
	b.stop = stop
	return nil
}

// stopReports ends serveReports and waits for the reports being handled.
func (b *backend) stopReports(log *zap.Logger) {
	if b.stop == nil {
		return
	}
	if err := b.stop(); err != nil {
		log.Error("server: stop serving reports", zap.Error(err))
	}
	b.stop = nil
}

// ready reports an error while NATS or the store does not answer.
func (b *backend) ready(ctx context.Context) error {
	if b.nc != nil && !b.nc.IsConnected() {
		return errors.New("not connected to NATS (" + b.nc.Status().String() + ")")
	}
	if _, err := b.store.Instance(ctx, "readyz"); err != nil && !errors.Is(err, engine.ErrUnknownInstance) {
		return fmt.Errorf("the store does not answer: %w", err)
	}
	if b.ns != nil {
		if err := b.ns.Healthy(); err != nil {
			return fmt.Errorf("the store cannot write: %w", err)
		}
	}
	if w, ok := b.store.(interface{ Writable(context.Context) error }); ok {
		if err := w.Writable(ctx); err != nil {
			return fmt.Errorf("the store refuses writes: %w", err)
		}
	}
	return nil
}

// close closes what was opened, reports first and NATS last.
func (b *backend) close(log *zap.Logger) {
	b.stopReports(log)
	for _, c := range b.closers {
		if err := c(); err != nil {
			log.Error("server: close", zap.Error(err))
		}
	}
	b.closers = nil
}
