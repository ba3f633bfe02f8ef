package mcpagent

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/url"
	"os/exec"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.uber.org/zap"

	"github.com/batonhq/baton/internal/suggest"
	"github.com/batonhq/baton/registry"
)

// maxToolPages bounds tools/list paging: a server whose cursors never end
// must not hold a run.
const maxToolPages = 100

// session is one connection to the server, and for a stdio server one run
// of its process.
type session struct {
	cs   *mcp.ClientSession
	done chan struct{} // closed when the connection has ended

	mu     sync.Mutex
	schema *jsonschema.Schema // the tool's input schema, once listed
}

// dead reports whether the connection has ended.
func (s *session) dead() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// close ends the connection; for a stdio server it closes its input and
// waits for it to exit. It returns the server's exit error, if any.
func (s *session) close() error { return s.cs.Close() }

// session returns the open session, opening one when there is none or the
// last one died.
func (a *Agent) session(ctx context.Context) (*session, error) {
	for {
		a.mu.Lock()
		if a.closed {
			a.mu.Unlock()
			return nil, ErrClosed
		}
		s := a.sess
		a.mu.Unlock()
		if s != nil && !s.dead() {
			return s, nil
		}
		select {
		case a.dialing <- struct{}{}:
		case <-ctx.Done():
			return nil, registry.Kind(&TransportError{Server: a.server, Op: "connect", Err: ctx.Err()}, KindTransport)
		}
		a.mu.Lock()
		again := a.sess != s // another run opened one meanwhile
		a.mu.Unlock()
		if again {
			<-a.dialing
			continue
		}
		if s != nil {
			a.cfg.Logger.Warn("mcpagent: the server's connection ended; opening a new one", zap.String("server", a.server))
		}
		s, err := a.dial(ctx)
		<-a.dialing
		if err != nil {
			return nil, err
		}
		return s, nil
	}
}

// dial opens a session and starts its watcher.
func (a *Agent) dial(ctx context.Context) (*session, error) {
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return nil, ErrClosed
	}
	a.watchers.Add(1) // before Close can wait: Close then waits for this dial too
	a.mu.Unlock()
	var transport mcp.Transport
	if a.http != nil {
		transport = &mcp.StreamableClientTransport{
			Endpoint:   a.cfg.URL,
			HTTPClient: a.http,
			// A lost answer fails the run at once, for the state's retry
			// policy to decide on, rather than after reconnect attempts.
			MaxRetries: -1,
			// Baton only calls; it needs no stream of the server's own
			// messages.
			DisableStandaloneSSE: true,
		}
	} else {
		cmd := exec.Command(a.cfg.Command[0], a.cfg.Command[1:]...)
		cmd.Dir = a.cfg.Dir
		cmd.Stderr = &stderrLog{log: a.cfg.Logger, server: a.server}
		// A child that left its stderr open to a grandchild must not hold
		// Close.
		cmd.WaitDelay = a.cfg.StopTimeout
		transport = &mcp.CommandTransport{Command: cmd, TerminateDuration: a.cfg.StopTimeout}
	}
	cs, err := a.client.Connect(ctx, transport, nil)
	if err != nil {
		a.watchers.Done()
		return nil, a.callError(ctx, nil, "connect", false, err)
	}
	s := &session{cs: cs, done: make(chan struct{})}
	go func() {
		defer a.watchers.Done()
		_ = cs.Wait()
		// The connection ended, by Close or because the server went: end
		// the session too (for a stdio server, reap its process).
		_ = cs.Close()
		close(s.done)
	}()
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		_ = s.close()
		return nil, ErrClosed
	}
	a.sess = s
	a.mu.Unlock()
	a.cfg.Logger.Info("mcpagent: connected", zap.String("server", a.server))
	return s, nil
}

// inputSchema returns the tool's input schema, listing the server's tools
// the first time; a tool the server does not list is looked for again on
// the next run.
func (a *Agent) inputSchema(ctx context.Context, s *session) (*jsonschema.Schema, error) {
	tool := a.cfg.Tool
	s.mu.Lock()
	schema := s.schema
	s.mu.Unlock()
	if schema != nil {
		return schema, nil
	}
	var (
		params = &mcp.ListToolsParams{}
		names  []string
	)
	for range maxToolPages {
		res, err := s.cs.ListTools(ctx, params)
		if err != nil {
			return nil, a.callError(ctx, s, "list tools", false, err)
		}
		for _, t := range res.Tools {
			if t == nil {
				continue
			}
			if t.Name == tool {
				schema, err := compileSchema(a.server, tool, t.InputSchema)
				if err != nil {
					return nil, registry.Permanent(registry.Kind(err, KindProtocol))
				}
				s.mu.Lock()
				s.schema = schema
				s.mu.Unlock()
				return schema, nil
			}
			names = append(names, t.Name)
		}
		if res.NextCursor == "" {
			break
		}
		params = &mcp.ListToolsParams{Cursor: res.NextCursor}
	}
	return nil, registry.Permanent(registry.Kind(&UnknownToolError{Server: a.server, Tool: tool, Suggestion: suggest.Nearest(tool, names)}, KindUnknownTool))
}

// httpClient is the client of a URL server: the given one, or one of its
// own that follows no redirects (its connections closed with the Agent),
// adding the bearer token to requests for the server's own host only.
func httpClient(c *http.Client, endpoint, token string) (hc *http.Client, own *http.Transport) {
	hc = &http.Client{}
	if c != nil {
		*hc = *c
	} else {
		own = http.DefaultTransport.(*http.Transport).Clone()
		hc.Transport = own
		hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	}
	if token != "" {
		next := hc.Transport
		if next == nil {
			next = http.DefaultTransport
		}
		u, _ := url.Parse(endpoint) // validated by New
		hc.Transport = &bearer{host: u.Host, token: "Bearer " + token, next: next}
	}
	return hc, own
}

// bearer adds the Authorization header to the requests for one host.
type bearer struct {
	host, token string
	next        http.RoundTripper
}

// RoundTrip sends r with the token when it goes to the server's host.
func (b *bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Host != b.host {
		return b.next.RoundTrip(r)
	}
	r2 := r.Clone(r.Context())
	r2.Header.Set("Authorization", b.token)
	return b.next.RoundTrip(r2)
}

// stderrLog logs what a stdio server writes on its stderr, a line at a
// time.
type stderrLog struct {
	log    *zap.Logger
	server string
	buf    []byte
}

// Write logs each whole line of p and keeps the rest for the next write
// (exec calls it from one goroutine).
func (w *stderrLog) Write(p []byte) (int, error) {
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		w.log.Info("mcpagent: server stderr", zap.String("server", w.server), zap.ByteString("line", w.buf[:i]))
		w.buf = w.buf[i+1:]
	}
	if len(w.buf) > 64<<10 { // a line with no end is logged in parts
		w.log.Info("mcpagent: server stderr", zap.String("server", w.server), zap.ByteString("line", w.buf))
		w.buf = w.buf[:0]
	}
	return len(p), nil
}

// isExit reports whether err is a stdio server's exit status, which
// closing it expects rather than fails on.
func isExit(err error) bool {
	var ee *exec.ExitError
	return errors.As(err, &ee)
}
