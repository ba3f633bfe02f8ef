package agentkind

import (
	"errors"
	"io"
	"net/http"
	"os"
	"sync"

	"go.uber.org/zap"

	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/rules"
)

// Option configures Handlers.
type Option func(*options)

type options struct {
	log    *zap.Logger
	lookup func(string) (string, bool)
	client *http.Client
}

// WithLogger sets the logger the handlers log to (default zap.NewNop()).
func WithLogger(l *zap.Logger) Option {
	return func(o *options) {
		if l != nil {
			o.log = l
		}
	}
}

// WithLookupEnv sets how environment variables are read (default
// os.LookupEnv).
func WithLookupEnv(f func(string) (string, bool)) Option {
	return func(o *options) {
		if f != nil {
			o.lookup = f
		}
	}
}

// WithHTTPClient sets the HTTP client of every agent that calls out over
// HTTP (default: each kind's own).
func WithHTTPClient(c *http.Client) Option {
	return func(o *options) {
		if c != nil {
			o.client = c
		}
	}
}

// builder makes the handler of one agent of a kind.
type builder func(w *rules.Workflow, a *rules.Agent, o *options) (registry.Handler, error)

// builders are the built-in kinds, by rules kind. Nothing changes it
// outside tests.
var builders = map[string]builder{
	rules.KindHTTP: buildHTTP,
	rules.KindLLM:  buildLLM,
	rules.KindA2A:  buildA2A,
	rules.KindMCP:  buildMCP,
}

// Set is the handlers of one workflow's agents. Close it when the engine
// that runs them has closed.
type Set struct {
	handlers map[string]registry.Handler
	closers  []io.Closer
	enders   []interface{ EndInstance(string) }
	once     sync.Once
	err      error
}

// Handlers builds a handler for every agent of w with a kind (url, a2a,
// mcp or llm). On an error, what was built is closed again.
func Handlers(w *rules.Workflow, opts ...Option) (*Set, error) {
	o := &options{log: zap.NewNop(), lookup: os.LookupEnv}
	for _, opt := range opts {
		opt(o)
	}
	s := &Set{handlers: map[string]registry.Handler{}}
	var errs []error
	for _, a := range w.Agents {
		kind := a.Kind()
		if kind == "" {
			continue
		}
		build, ok := builders[kind]
		if !ok {
			errs = append(errs, &AgentError{Agent: a.ID, Kind: kind, Err: ErrUnavailable})
			continue
		}
		h, err := build(w, a, o)
		if err != nil {
			var envErr *EnvError
			if !errors.As(err, &envErr) {
				err = &AgentError{Agent: a.ID, Kind: kind, Err: err}
			}
			errs = append(errs, err)
			continue
		}
		s.handlers[a.ID] = h
		if c, ok := h.(io.Closer); ok {
			s.closers = append(s.closers, c)
		}
		if e, ok := h.(interface{ EndInstance(string) }); ok {
			s.enders = append(s.enders, e)
		}
	}
	if len(errs) > 0 {
		_ = s.Close()
		return nil, errors.Join(errs...)
	}
	return s, nil
}

// Handlers returns the handlers by agent id; the map is the caller's.
func (s *Set) Handlers() map[string]registry.Handler {
	out := make(map[string]registry.Handler, len(s.handlers))
	for id, h := range s.handlers {
		out[id] = h
	}
	return out
}

// EndInstance tells the handlers that keep something of an instance
// between runs (an A2A agent's task left input-required) that the instance
// has ended, so that they let it go at their agents. Call it from the
// engine's observer on EventCompleted, EventFailed and EventCancelled.
func (s *Set) EndInstance(instance string) {
	for _, e := range s.enders {
		e.EndInstance(instance)
	}
}

// Close closes every handler that holds something open (stdio servers it
// started, say). It is safe to call twice.
func (s *Set) Close() error {
	s.once.Do(func() {
		var errs []error
		for _, c := range s.closers {
			errs = append(errs, c.Close())
		}
		s.err = errors.Join(errs...)
	})
	return s.err
}

// env reads the variable the agent's key names; an unset or empty one is
// an *EnvError.
func (o *options) env(agent, key, name string) (string, error) {
	if name == "" {
		return "", nil
	}
	v, ok := o.lookup(name)
	if !ok || v == "" {
		return "", &EnvError{Agent: agent, Key: key, Var: name}
	}
	return v, nil
}
