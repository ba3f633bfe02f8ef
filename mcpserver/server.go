package mcpserver

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"
)

// MaxBody bounds a request's body on the streamable HTTP transport.
const MaxBody = 1 << 20

// Server serves the workflows of a Backend as MCP tools and resources.
type Server struct {
	back    Backend
	log     *zap.Logger
	name    string
	version string
	maxBody int64
	anyHost bool
	sdk     *mcp.Server

	mu    sync.Mutex        // guards tools and wfs: one sync at a time
	tools map[string]string // start tool name -> its definition's JSON
	wfs   map[string]bool   // the workflows listed as resources
}

// Option configures a Server.
type Option func(*Server)

// WithLogger logs the failures of WorkflowsChanged to log.
func WithLogger(log *zap.Logger) Option { return func(s *Server) { s.log = log } }

// WithImplementation names the server to its clients (default "baton").
func WithImplementation(name, version string) Option {
	return func(s *Server) { s.name, s.version = name, version }
}

// WithMaxBody bounds a request's body on the HTTP transport (default
// MaxBody).
func WithMaxBody(n int64) Option { return func(s *Server) { s.maxBody = n } }

// WithHostChecked leaves the Host header to the caller: by default the
// HTTP transport refuses a request that reached a loopback address under
// another name (DNS rebinding), which also refuses a proxy on the same
// machine forwarding its own name. A server that checks the Host itself
// (a Baton server without tokens answers loopback names only; with tokens
// every request carries one) passes this option.
func WithHostChecked() Option { return func(s *Server) { s.anyHost = true } }

// New is a server over back. It lists no workflow until the first
// WorkflowsChanged (or Sync).
func New(back Backend, opts ...Option) *Server {
	s := &Server{back: back, log: zap.NewNop(), name: "baton", version: "dev", maxBody: MaxBody,
		tools: map[string]string{}, wfs: map[string]bool{}}
	for _, opt := range opts {
		opt(s)
	}
	s.sdk = mcp.NewServer(&mcp.Implementation{Name: s.name, Version: s.version}, &mcp.ServerOptions{
		Capabilities: &mcp.ServerCapabilities{
			Tools:     &mcp.ToolCapabilities{ListChanged: true},
			Resources: &mcp.ResourceCapabilities{ListChanged: true},
		},
		SupportedProtocolVersions: protocolVersions(),
	})
	s.addTools()
	s.addResourceTemplates()
	return s
}

// MinProtocolVersion is the oldest protocol version served: the first with
// structured tool results and output schemas.
const MinProtocolVersion = "2025-06-18"

// protocolVersions are the SDK's versions from MinProtocolVersion on (the
// versions are dates: they sort as strings).
func protocolVersions() []string {
	var out []string
	for _, v := range mcp.SupportedProtocolVersions() {
		if v >= MinProtocolVersion {
			out = append(out, v)
		}
	}
	return out
}

// Handler serves the streamable HTTP transport. The caller adds the
// authentication in front of it.
func (s *Server) Handler() http.Handler {
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.sdk }, &mcp.StreamableHTTPOptions{
		MaxRequestBodyBytes:        s.maxBody,
		DisableLocalhostProtection: s.anyHost,
		// An idle session holds a little memory: a client that never says
		// goodbye does not hold it forever.
		SessionTimeout: 30 * time.Minute,
		Logger:         slog.New(slog.DiscardHandler),
	})
}

// Serve serves one client over t (os.Stdin and os.Stdout with
// &mcp.StdioTransport{}) until the client leaves or ctx ends.
func (s *Server) Serve(ctx context.Context, t mcp.Transport) error {
	return s.sdk.Run(ctx, t)
}

// Close ends every session (the HTTP transport's, whose clients must
// connect again). Safe to call twice, and on nil.
func (s *Server) Close() {
	if s == nil {
		return
	}
	for ss := range s.sdk.Sessions() {
		_ = ss.Close()
	}
}

// WorkflowsChanged brings the tools and resources in line with the
// workflows the backend serves; the connected clients hear
// notifications/tools/list_changed when a start tool was added, changed
// or removed. Call it after each reload.
func (s *Server) WorkflowsChanged() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.Sync(ctx); err != nil {
		s.log.Warn("mcpserver: the workflows could not be listed", zap.Error(err))
	}
}

// Sync is WorkflowsChanged with a context and the backend's error.
func (s *Server) Sync(ctx context.Context) error {
	wfs, err := s.back.Workflows(ctx)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	want := map[string]bool{}
	for _, wf := range wfs {
		t := startTool(wf)
		want[t.Name] = true
		def, err := json.Marshal(t)
		if err != nil {
			return err
		}
		if s.tools[t.Name] != string(def) {
			s.tools[t.Name] = string(def)
			s.sdk.AddTool(t, s.start(wf.Name, startArgsOf(wf.Input)))
		}
	}
	var gone []string
	for name := range s.tools {
		if !want[name] {
			gone = append(gone, name)
			delete(s.tools, name)
		}
	}
	if len(gone) > 0 {
		slices.Sort(gone)
		s.sdk.RemoveTools(gone...)
	}
	s.syncResources(wfs)
	return nil
}

// StartTool is the name of workflow name's start tool.
func StartTool(name string) string { return "start_" + name }

func startTool(wf Workflow) *mcp.Tool {
	desc := wf.Description
	if desc == "" {
		desc = "Starts an instance of workflow " + wf.Name + "."
	}
	return &mcp.Tool{
		Name:         StartTool(wf.Name),
		Description:  desc,
		InputSchema:  InputSchema(wf.Input),
		OutputSchema: summarySchema,
	}
}
