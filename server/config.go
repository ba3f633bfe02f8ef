package server

import (
	"bufio"
	"bytes"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"
)

// Defaults of a Config.
const (
	DefaultHTTPAddr    = "127.0.0.1:8080"
	DefaultDataDir     = "./baton-data"
	DefaultGracePeriod = 10 * time.Second
	DefaultStartWait   = 5 * time.Second
	DefaultReportWait  = 30 * time.Second
	// MaxBody is the largest request body the API reads (413 beyond).
	MaxBody = 1 << 20
)

// Config configures a server. Zero fields take the defaults.
type Config struct {
	// WorkflowsDir holds the workflow files (*.yaml, *.yml) to host.
	WorkflowsDir string
	// DataDir holds the store (default ./baton-data).
	DataDir string
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
	// OnListen, when set, is called with the address the API listens on.
	OnListen func(net.Addr)
	// TracerProvider, when set, traces every engine's instances and runs
	// (see engine.WithTracerProvider); an instance started with a
	// traceparent header joins the client's trace.
	TracerProvider trace.TracerProvider
}

func (c Config) withDefaults() Config {
	if c.DataDir == "" {
		c.DataDir = DefaultDataDir
	}
	if c.HTTPAddr == "" {
		c.HTTPAddr = DefaultHTTPAddr
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
