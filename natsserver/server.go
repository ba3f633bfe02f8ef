package natsserver

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"go.uber.org/zap"
)

// DefaultMaxPayload is the largest message the server accepts unless Config
// says otherwise: 8 MiB, the most NATS recommends, so that one step of a
// workflow (its snapshot, history entries and outbox) with large results
// fits in one message.
const DefaultMaxPayload = 8 << 20

// Config says how to run the server. Dir is required; the zero value of
// every other field is a sensible default.
type Config struct {
	// Dir is the data directory JetStream keeps its streams in.
	Dir string
	// Listen makes the server listen on Host:Port for clients in other
	// processes. Without it the server opens no socket and clients connect
	// in-process only (Connect).
	Listen bool
	// Host is the interface to listen on (default 127.0.0.1).
	Host string
	// Port is the port to listen on; 0 picks a free one.
	Port int
	// SyncInterval is how often JetStream flushes its files to disk. Zero
	// (the default) syncs every message before acknowledging it: an
	// acknowledged write survives a power loss. A positive interval writes
	// several times faster but may lose the writes of the last interval when
	// the machine (not just the process) goes down.
	SyncInterval time.Duration
	// MaxPayload is the largest message the server accepts (default
	// DefaultMaxPayload).
	MaxPayload int32
	// Name is the server's name (default "baton").
	Name string
	// StartTimeout bounds how long Start waits for the server to be ready
	// (default 10s).
	StartTimeout time.Duration
	// MaxStore caps the bytes JetStream keeps on disk. Zero (the default)
	// lets it use three quarters of the disk's free space as the server
	// starts. Past the cap, writes are refused at once (503 "insufficient
	// resources") and taken again as soon as space is freed; a disk that
	// fills up before the cap (other files grew) makes writes fail until
	// the server loads its streams again (see HealthInterval).
	MaxStore int64
	// HealthInterval is how often the server checks that JetStream can
	// write (default 1s). A stream that failed to write (a full disk)
	// refuses every later write, even once space is freed: the server then
	// loads its streams again from their files as soon as the disk takes a
	// test write again. Connections stay open meanwhile.
	HealthInterval time.Duration
	// Logger receives the server's log (default zap.NewNop()).
	Logger *zap.Logger
}

func (c Config) withDefaults() Config {
	if c.Host == "" {
		c.Host = "127.0.0.1"
	}
	if c.MaxPayload == 0 {
		c.MaxPayload = DefaultMaxPayload
	}
	if c.Name == "" {
		c.Name = "baton"
	}
	if c.StartTimeout == 0 {
		c.StartTimeout = 10 * time.Second
	}
	if c.HealthInterval == 0 {
		c.HealthInterval = time.Second
	}
	if c.Logger == nil {
		c.Logger = zap.NewNop()
	}
	return c
}

// Validate reports the first field Start cannot use.
func (c Config) Validate() error {
	switch {
	case c.Dir == "":
		return &ConfigError{Field: "Dir", Reason: "a data directory is required"}
	case c.Port < 0 || c.Port > 65535:
		return &ConfigError{Field: "Port", Reason: fmt.Sprintf("%d is not a port", c.Port)}
	case c.SyncInterval < 0:
		return &ConfigError{Field: "SyncInterval", Reason: "must not be negative"}
	case c.MaxPayload < 0 || c.MaxPayload > 64<<20:
		return &ConfigError{Field: "MaxPayload", Reason: "must be between 1 byte and 64 MiB"}
	case c.StartTimeout < 0:
		return &ConfigError{Field: "StartTimeout", Reason: "must not be negative"}
	case c.MaxStore < 0:
		return &ConfigError{Field: "MaxStore", Reason: "must not be negative"}
	case c.HealthInterval < 0:
		return &ConfigError{Field: "HealthInterval", Reason: "must not be negative"}
	}
	return nil
}

// Server is a running embedded NATS server with JetStream.
type Server struct {
	ns   *server.Server
	url  string
	dir  string
	log  *zap.Logger
	once sync.Once
	// js is the JetStream configuration as the server started, to start
	// JetStream again with (heal).
	js server.JetStreamConfig
	// restarting is set while heal loads the streams again; unhealthy holds
	// why JetStream did not take writes at heal's last check (nil: it did).
	restarting atomic.Bool
	unhealthy  atomic.Pointer[string]
	quit       chan struct{}
	healing    sync.WaitGroup
}

// Start starts a server and waits until it accepts connections.
func Start(cfg Config) (*Server, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	opts := &server.Options{
		ServerName: cfg.Name,
		JetStream:  true,
		StoreDir:   cfg.Dir,
		DontListen: !cfg.Listen,
		Host:       cfg.Host,
		Port:       cfg.Port,
		MaxPayload: cfg.MaxPayload,
		NoSigs:     true,
		// A cap set here is kept when heal starts JetStream again.
		JetStreamMaxStore: cfg.MaxStore,
	}
	if opts.Port == 0 {
		opts.Port = server.RANDOM_PORT
	}
	if cfg.SyncInterval == 0 {
		opts.SyncAlways = true
	} else {
		opts.SyncInterval = cfg.SyncInterval
	}
	ns, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("natsserver: %w", err)
	}
	ns.SetLoggerV2(zapLogger{cfg.Logger.Sugar()}, false, false, false)
	ns.Start()
	if !ns.ReadyForConnections(cfg.StartTimeout) {
		ns.Shutdown()
		ns.WaitForShutdown()
		return nil, fmt.Errorf("%w within %v", ErrNotReady, cfg.StartTimeout)
	}
	s := &Server{ns: ns, dir: cfg.Dir, log: cfg.Logger, quit: make(chan struct{})}
	if js := ns.JetStreamConfig(); js != nil {
		s.js = *js
	}
	if cfg.Listen {
		s.url = ns.ClientURL()
	}
	s.healing.Add(1)
	go s.heal(cfg.HealthInterval)
	return s, nil
}

// Connect opens an in-process client connection to the server; the caller
// closes it. opts are added to the in-process one (a name, handlers...).
func (s *Server) Connect(opts ...nats.Option) (*nats.Conn, error) {
	nc, err := nats.Connect("", append([]nats.Option{nats.InProcessServer(s.ns)}, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("natsserver: connect in-process: %w", err)
	}
	return nc, nil
}

// URL is the address clients in other processes connect to, such as
// "nats://127.0.0.1:43127"; it is empty unless Config.Listen was set.
func (s *Server) URL() string { return s.url }

// Clients returns how many client connections the server holds. A test
// that kills a client process polls it to know the server has closed the
// dead connection (and so handled everything it had sent).
func (s *Server) Clients() int { return s.ns.NumClients() }

// Close shuts the server down and waits until it has stopped. It is safe to
// call more than once.
func (s *Server) Close() error {
	s.once.Do(func() {
		close(s.quit)
		s.healing.Wait()
		s.ns.Shutdown()
		s.ns.WaitForShutdown()
	})
	return nil
}

// zapLogger passes the server's log to zap.
type zapLogger struct{ l *zap.SugaredLogger }

func (z zapLogger) Noticef(format string, v ...any) { z.l.Infof(format, v...) }
func (z zapLogger) Warnf(format string, v ...any)   { z.l.Warnf(format, v...) }
func (z zapLogger) Fatalf(format string, v ...any)  { z.l.Errorf(format, v...) }
func (z zapLogger) Errorf(format string, v ...any)  { z.l.Errorf(format, v...) }
func (z zapLogger) Debugf(format string, v ...any)  { z.l.Debugf(format, v...) }
func (z zapLogger) Tracef(format string, v ...any)  { z.l.Debugf(format, v...) }
