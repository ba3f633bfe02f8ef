package mcpagent

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/batonhq/baton/registry"
)

// DefaultTimeout bounds a call whose run has no deadline of its own.
const DefaultTimeout = 30 * time.Second

// DefaultStopTimeout is how long Close waits for a stdio server to exit
// after closing its input before it signals it.
const DefaultStopTimeout = 5 * time.Second

// Config says which server and tool an Agent calls. Exactly one of URL and
// Command is set.
type Config struct {
	// URL is a streamable HTTP server's endpoint (http or https).
	URL string
	// Command starts a stdio server: the program and its arguments, run in
	// Dir (a relative program path is relative to Dir too).
	Command []string
	// Dir is the stdio server's working directory ("" for the engine's).
	Dir string
	// Token, when set, is sent to a URL server as Authorization: Bearer.
	Token string
	// Tool is the name of the tool every run calls.
	Tool string
	// Arguments builds the tool's arguments from the task; nil sends the
	// hand-off's environment: input, context, previous_result, and item
	// and index for a run over one item, leaving out what is nil.
	Arguments func(t *registry.Task) (map[string]any, error)
	// Client is the HTTP client of a URL server (default: one that follows
	// no redirects).
	Client *http.Client
	// Logger receives connections, restarts and a stdio server's stderr
	// (default zap.NewNop()).
	Logger *zap.Logger
	// Timeout bounds a call whose context has no deadline (default
	// DefaultTimeout).
	Timeout time.Duration
	// StopTimeout is how long closing a stdio server waits for it to exit
	// before SIGTERM, and again before SIGKILL (default DefaultStopTimeout).
	StopTimeout time.Duration
}

// validate checks the config and fills its defaults.
func (c *Config) validate() error {
	switch {
	case c.URL == "" && len(c.Command) == 0:
		return &ConfigError{Field: "url", Reason: "or command is required"}
	case c.URL != "" && len(c.Command) > 0:
		return &ConfigError{Field: "url", Reason: "and command are exclusive"}
	case len(c.Command) > 0 && c.Command[0] == "":
		return &ConfigError{Field: "command", Reason: "must name a program"}
	case len(c.Command) > 0 && c.Token != "":
		return &ConfigError{Field: "token", Reason: "is for a url server only"}
	case c.Tool == "":
		return &ConfigError{Field: "tool", Reason: "is required"}
	case c.Timeout < 0:
		return &ConfigError{Field: "timeout", Reason: "must not be negative"}
	case c.StopTimeout < 0:
		return &ConfigError{Field: "stop_timeout", Reason: "must not be negative"}
	}
	if c.URL != "" {
		u, err := url.Parse(c.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return &ConfigError{Field: "url", Reason: "must be an http or https URL: " + c.URL}
		}
	}
	if c.Logger == nil {
		c.Logger = zap.NewNop()
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.StopTimeout == 0 {
		c.StopTimeout = DefaultStopTimeout
	}
	return nil
}

// Agent is the registry.Handler of an agent that calls one MCP tool. It
// keeps one session with its server, opened on the first run and opened
// again after the connection (or the stdio server) died. Handle is safe
// for concurrent use.
type Agent struct {
	cfg    Config
	server string // how messages name the server
	client *mcp.Client
	http   *http.Client    // URL servers only
	own    *http.Transport // the transport of a client the Agent made, else nil

	// dialing lets one run at a time open a session; the others wait for
	// it or their context.
	dialing chan struct{}
	mu      sync.Mutex
	sess    *session // nil until the first run, and after one died
	closed  bool
	// watchers counts each session's watcher, which ends when the session
	// does.
	watchers sync.WaitGroup
}

var _ registry.Handler = (*Agent)(nil)

// New checks the config and returns an Agent; it starts nothing: the
// first run connects (or starts the stdio server).
func New(cfg Config) (*Agent, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	a := &Agent{
		cfg:     cfg,
		dialing: make(chan struct{}, 1),
		client: mcp.NewClient(&mcp.Implementation{Name: "baton", Version: "1"},
			&mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}}),
	}
	a.cfg.Command = append([]string(nil), cfg.Command...)
	if cfg.URL != "" {
		a.server = cfg.URL
		a.http, a.own = httpClient(cfg.Client, cfg.URL, cfg.Token)
	} else {
		a.server = strings.Join(cfg.Command, " ")
	}
	return a, nil
}

// Handle calls the tool with the task's arguments and maps its answer: see
// the package documentation.
func (a *Agent) Handle(ctx context.Context, t *registry.Task) (registry.Outcome, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, a.cfg.Timeout)
		defer cancel()
	}
	args, err := a.arguments(t)
	if err != nil {
		return registry.Outcome{}, registry.Permanent(registry.Kind(err, KindInvalidArguments))
	}
	s, err := a.session(ctx)
	if err != nil {
		return registry.Outcome{}, err
	}
	schema, err := a.inputSchema(ctx, s)
	if err != nil {
		return registry.Outcome{}, err
	}
	raw, err := checkArguments(a.cfg.Tool, schema, args)
	if err != nil {
		return registry.Outcome{}, registry.Permanent(registry.Kind(err, KindInvalidArguments))
	}
	res, err := s.cs.CallTool(ctx, &mcp.CallToolParams{Name: a.cfg.Tool, Arguments: raw})
	if err != nil {
		return registry.Outcome{}, a.callError(ctx, s, "call "+a.cfg.Tool, true, err)
	}
	return outcome(a.cfg.Tool, res)
}

// arguments builds the call's arguments.
func (a *Agent) arguments(t *registry.Task) (map[string]any, error) {
	if t == nil {
		return nil, &ArgumentsError{Tool: a.cfg.Tool, Reason: "no task"}
	}
	if a.cfg.Arguments == nil {
		return environment(t), nil
	}
	args, err := a.cfg.Arguments(t)
	if err != nil {
		var ae *ArgumentsError
		if errors.As(err, &ae) {
			return nil, err
		}
		return nil, &ArgumentsError{Tool: a.cfg.Tool, Reason: err.Error(), Err: err}
	}
	return args, nil
}

// environment is the hand-off's environment, what is nil left out.
func environment(t *registry.Task) map[string]any {
	env := make(map[string]any, 5)
	if t.Input != nil {
		env["input"] = t.Input
	}
	if t.Context != nil {
		env["context"] = t.Context
	}
	if t.PreviousResult != nil {
		env["previous_result"] = t.PreviousResult
	}
	if t.HasItem {
		if t.Item != nil {
			env["item"] = t.Item
		}
		env["index"] = t.Index
	}
	return env
}

// callError types the error of a request to the server: the server's
// JSON-RPC error answer, or a transport failure (the context's end
// included). A transport failure other than the context's end drops the
// session s (nil while connecting), so that the next run opens a new one
// and starts a stdio server again; the session outlives a call's context.
func (a *Agent) callError(ctx context.Context, s *session, op string, call bool, err error) error {
	var we *jsonrpc.Error
	switch {
	case ctx.Err() != nil:
		return registry.Kind(&TransportError{Server: a.server, Op: op, Err: ctx.Err()}, KindTransport)
	case errors.As(err, &we) && local(we.Code):
		// The SDK's own codes for a connection that failed or is closing.
	case errors.As(err, &we) && !call:
		return registry.Permanent(registry.Kind(&ProtocolError{Server: a.server, Reason: fmt.Sprintf("refused %s: error %d: %s", op, we.Code, we.Message)}, KindProtocol))
	case errors.As(err, &we) && we.Code == jsonrpc.CodeInvalidParams:
		return registry.Permanent(registry.Kind(&ArgumentsError{Tool: a.cfg.Tool, Reason: we.Message}, KindInvalidArguments))
	case errors.As(err, &we):
		return registry.Kind(&ToolError{Tool: a.cfg.Tool, Code: we.Code, Message: we.Message}, KindToolError)
	}
	if s != nil {
		a.drop(s)
	}
	return registry.Kind(&TransportError{Server: a.server, Op: op, Err: err}, KindTransport)
}

// local reports whether a JSON-RPC error code is one the Go SDK gives a
// call itself when its connection failed or is closing (unknown, client
// closing, server closing, rejected by transport), not a server's answer.
func local(code int64) bool { return code <= -32001 && code >= -32005 && code != -32002 }

// drop forgets the session and closes it.
func (a *Agent) drop(s *session) {
	a.mu.Lock()
	if a.sess == s {
		a.sess = nil
	}
	a.mu.Unlock()
	if err := s.close(); err != nil {
		a.cfg.Logger.Debug("mcpagent: session closed", zap.String("server", a.server), zap.Error(err))
	}
}

// Close ends the session: a stdio server is stopped (its input closed,
// then SIGTERM, then SIGKILL, each after StopTimeout) and waited for. Runs
// under way fail with kind transport; later ones with ErrClosed. Close is
// safe to call twice.
func (a *Agent) Close() error {
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return nil
	}
	a.closed = true
	s := a.sess
	a.sess = nil
	a.mu.Unlock()
	var err error
	if s != nil {
		err = s.close()
	}
	a.watchers.Wait()
	if a.own != nil {
		a.own.CloseIdleConnections()
	}
	switch {
	case err == nil:
	case a.http != nil || isExit(err):
		// A URL server that is gone cannot take the goodbye, and a stdio
		// server's exit status is how stopping it ends.
		a.cfg.Logger.Debug("mcpagent: session closed", zap.String("server", a.server), zap.Error(err))
	default:
		return fmt.Errorf("mcpagent: close %s: %w", a.server, err)
	}
	return nil
}
