package server

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/batonhq/baton/registry"
)

// Defaults of a Config.
const (
	DefaultHTTPAddr    = "127.0.0.1:8080"
	DefaultNATSListen  = "127.0.0.1:4222"
	DefaultDataDir     = "./baton-data"
	DefaultGracePeriod = 10 * time.Second
	DefaultStartWait   = 5 * time.Second
	DefaultReportWait  = 30 * time.Second
	// MaxBody is the largest request body the API reads (413 beyond).
	MaxBody = 1 << 20
	// NoNATS as Config.NATS runs the server without NATS: instances in a
	// bbolt file in the data directory, the work of agents without a url
	// on an in-memory bus (such agents can only report with POST
	// /v1/reports). For one process with HTTP agents and Go handlers.
	NoNATS = "none"
)

// Config configures a server. Zero fields take the defaults.
type Config struct {
	// WorkflowsDir holds the workflow files (*.yaml, *.yml) to host.
	WorkflowsDir string
	// DataDir holds the store (default ./baton-data): the embedded NATS
	// server's data in DataDir/nats, or the bbolt file without NATS.
	DataDir string
	// NATS is where instances and work live. Empty (the default) starts an
	// embedded NATS JetStream server; a URL ("nats://host:4222", several
	// separated by commas) joins a NATS server or cluster that runs
	// JetStream; NoNATS uses none.
	NATS string
	// NATSListen is where the embedded NATS server lets agents of other
	// processes connect (default 127.0.0.1:4222; port 0 picks a free port,
	// reported to OnNATS). The embedded server has no authentication, so
	// only loopback addresses are allowed: agents on other machines need a
	// NATS server of your own (NATS).
	NATSListen string
	// NATSSyncInterval is how often the embedded NATS server flushes its
	// files to disk. Zero (the default) syncs every write before it is
	// acknowledged, so that a step the server has answered for survives a
	// power loss; a positive interval is faster and may lose the last
	// interval's writes when the machine (not just the process) goes down.
	NATSSyncInterval time.Duration
	// NATSMaxStore caps the bytes the embedded NATS server keeps on disk
	// (default 0: three quarters of the disk's free space as it starts).
	// Past it, writes are refused at once and taken again once space is
	// freed (see docs/operations.md, "A full disk").
	NATSMaxStore int64
	// Replicas is how many servers of a NATS cluster keep each of Baton's
	// streams and buckets (default 1; 3 survives the loss of one server).
	// It applies to streams the server creates and raises the count of
	// existing ones; the embedded server is a single node and takes 1.
	Replicas int
	// Name names the server among those sharing a NATS system (--nats
	// URL): letters, digits, '-' and '_'; each needs its own (default: a
	// random name, new at every start).
	Name string
	// LeaseTTL is how long the instances of a server sharing a NATS system
	// stay its own after its last heartbeat (default 10s): when a server
	// dies, the others continue its instances after LeaseTTL plus the time
	// to resume them. A server that stops cleanly hands them over at once.
	LeaseTTL time.Duration
	// Handlers are Go handlers run in the server's process, by agent id,
	// for the agents of any workflow that declare that id without a url.
	// Agents with neither a url nor a handler take their work from NATS
	// (the Go worker of package natsbus, the TypeScript SDK).
	Handlers map[string]registry.Handler
	// HTTPAddr is where the API listens (default 127.0.0.1:8080; port 0
	// picks a free port, reported to OnListen).
	HTTPAddr string
	// TokenFile holds the API tokens, one per line; without it the server
	// only listens on loopback.
	TokenFile string
	// Logger receives the server's logs (default zap.NewNop()).
	Logger *zap.Logger
	// GracePeriod bounds the shutdown: requests in flight get this long to
	// finish (default 10s).
	GracePeriod time.Duration
	// StartWait bounds how long a start waits for room in its first agent's
	// mailbox before it is refused with 503 (default 5s).
	StartWait time.Duration
	// ReportWait is how long an HTTP agent that answered 202, in a state
	// without a timeout, has to report before its run fails with kind
	// timeout (default 30s).
	ReportWait time.Duration
	// EventBuffer is how many recent events the server keeps for clients
	// resuming a stream with Last-Event-ID (default 4096).
	EventBuffer int
	// ReadTimeout bounds the reading of a whole request, headers and body
	// (default 30s): a client that sends its body slowly, or stops halfway,
	// is disconnected then. The headers alone get at most 10s.
	ReadTimeout time.Duration
	// WriteTimeout bounds a request's handling and its answer, from the end
	// of its headers (default 60s). Event streams are exempt as a whole:
	// each of their writes gets this long instead.
	WriteTimeout time.Duration
	// IdleTimeout is how long a kept-alive connection may wait for its
	// next request (default 120s).
	IdleTimeout time.Duration
	// MaxStreams caps the event streams open at once, the API's and the
	// web view's together (default 1000); one more is answered 503.
	MaxStreams int
	// OnListen, when set, is called with the address the API listens on.
	OnListen func(net.Addr)
	// TracerProvider, when set, traces every engine's instances and runs
	// (see engine.WithTracerProvider); an instance started with a
	// traceparent header joins the client's trace.
	TracerProvider trace.TracerProvider
	// OnNATS, when set, is called with the URL agents connect to NATS on,
	// once the server is built (not without NATS).
	OnNATS func(url string)
	// Retain, when positive, is how long finished instances are kept: the
	// server prunes those last updated longer ago, with their history and
	// outbox, as it starts and then every PruneEvery. Zero keeps them all.
	Retain time.Duration
	// PruneEvery is how often the server prunes with Retain (default a
	// tenth of Retain, between a minute and an hour).
	PruneEvery time.Duration
	// WatchEvery is how often the server looks for changed files in
	// WorkflowsDir and reloads them (default 1s; negative: never, only
	// on ReloadOn or Server.Reload).
	WatchEvery time.Duration
	// ReloadOn, when set, reloads the workflows at each signal it
	// delivers (wfrun serve passes SIGHUP).
	ReloadOn <-chan os.Signal
}

func (c Config) withDefaults() Config {
	if c.DataDir == "" {
		c.DataDir = DefaultDataDir
	}
	if c.HTTPAddr == "" {
		c.HTTPAddr = DefaultHTTPAddr
	}
	if c.NATS == "" && c.NATSListen == "" {
		c.NATSListen = DefaultNATSListen
	}
	if c.Logger == nil {
		c.Logger = zap.NewNop()
	}
	if c.GracePeriod <= 0 {
		c.GracePeriod = DefaultGracePeriod
	}
	if c.StartWait <= 0 {
		c.StartWait = DefaultStartWait
	}
	if c.ReportWait <= 0 {
		c.ReportWait = DefaultReportWait
	}
	if c.EventBuffer <= 0 {
		c.EventBuffer = 4096
	}
	c = c.withLimits()
	if c.WatchEvery == 0 {
		c.WatchEvery = DefaultWatchEvery
	}
	if c.Retain > 0 && c.PruneEvery == 0 {
		c.PruneEvery = min(max(c.Retain/10, time.Minute), time.Hour)
	}
	return c
}

// Validate checks the configuration, defaults applied: the workflows
// directory is given, the HTTP address parses, and an address other than
// loopback comes with a token file.
func (c Config) Validate() error {
	c = c.withDefaults()
	if c.WorkflowsDir == "" {
		return &ConfigError{Field: "workflows", Reason: "is required (a directory of workflow files)"}
	}
	host, _, err := net.SplitHostPort(c.HTTPAddr)
	if err != nil {
		return &ConfigError{Field: "http", Reason: "is not host:port: " + err.Error()}
	}
	if c.TokenFile == "" && !loopback(host) {
		return ErrNotLoopback
	}
	switch {
	case c.NATS == "":
		if _, _, err := splitListen(c.NATSListen); err != nil {
			return err
		}
	case c.NATSListen != "":
		return &ConfigError{Field: "nats-listen", Reason: "applies only to the embedded NATS server (without --nats)"}
	case c.NATS != NoNATS:
		for _, u := range strings.Split(c.NATS, ",") {
			if !strings.Contains(u, "://") {
				return &ConfigError{Field: "nats", Reason: fmt.Sprintf("%q is not a URL (nats://host:port), nor %q", u, NoNATS)}
			}
		}
	}
	if err := c.validateLimits(); err != nil {
		return err
	}
	if c.Replicas < 0 || c.Replicas > 5 {
		return &ConfigError{Field: "replicas", Reason: "must be 1 to 5"}
	}
	if c.Replicas > 1 && (c.NATS == "" || c.NATS == NoNATS) {
		return &ConfigError{Field: "replicas", Reason: "needs a NATS cluster (--nats URL): the embedded server is a single node"}
	}
	if c.NATS == "" || c.NATS == NoNATS {
		if c.Name != "" {
			return &ConfigError{Field: "name", Reason: "applies to servers sharing a NATS system (--nats URL)"}
		}
		if c.LeaseTTL != 0 {
			return &ConfigError{Field: "lease-ttl", Reason: "applies to servers sharing a NATS system (--nats URL)"}
		}
	}
	if len(c.Name) > 64 {
		return &ConfigError{Field: "name", Reason: "must be at most 64 characters"}
	}
	if c.LeaseTTL < 0 {
		return &ConfigError{Field: "lease-ttl", Reason: "must not be negative"}
	}
	for _, r := range c.Name {
		if !(r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return &ConfigError{Field: "name", Reason: fmt.Sprintf("%q may hold only letters, digits, '-' and '_'", c.Name)}
		}
	}
	if c.NATSSyncInterval < 0 {
		return &ConfigError{Field: "nats-sync-interval", Reason: "must not be negative"}
	}
	if c.NATSMaxStore < 0 {
		return &ConfigError{Field: "nats-max-store", Reason: "must not be negative"}
	}
	if c.Retain < 0 {
		return &ConfigError{Field: "retain", Reason: "must not be negative"}
	}
	if c.PruneEvery < 0 {
		return &ConfigError{Field: "prune-every", Reason: "must not be negative"}
	}
	for id, h := range c.Handlers {
		if h == nil {
			return &ConfigError{Field: "handlers", Reason: "has no handler for agent " + id}
		}
	}
	return nil
}

// loopback reports whether host names only the loopback interface; an
// empty host (every interface) does not.
func loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// readTokens reads a token file: one token per line, blank lines and the
// whitespace around each token ignored.
func readTokens(path string) ([][]byte, error) {
	data, err := os.ReadFile(filepath.Clean(path))
	if err != nil {
		return nil, &ConfigError{Field: "token-file", Reason: "cannot be read: " + err.Error()}
	}
	var tokens [][]byte
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if t := bytes.TrimSpace(sc.Bytes()); len(t) > 0 {
			tokens = append(tokens, bytes.Clone(t))
		}
	}
	if len(tokens) == 0 {
		return nil, ErrNoTokens
	}
	return tokens, nil
}
