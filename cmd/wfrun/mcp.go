package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/batonhq/baton/mcpserver"
	"github.com/batonhq/baton/ops"
	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/rules"
)

// mcpCmd is `wfrun mcp`: a server's workflows as MCP tools over stdio,
// for the desktop clients that start their MCP servers as processes.
func mcpCmd() *cobra.Command {
	var refresh time.Duration
	cmd := &cobra.Command{
		Use:   "mcp [--server URL] [--token T]",
		Short: "Serve a server's workflows as MCP tools over standard input and output",
		Long: `Serve the workflows of a running Baton server as MCP tools over stdio: start_<workflow>,
get_instance, list_instances, signal_instance, cancel_instance and list_workflows, and the
workflows and instances as resources. Each tool calls the server's HTTP API.`,
		Args: cobra.NoArgs,
	}
	c := clientFlags(cmd)
	_ = cmd.Flags().MarkHidden("output") // the protocol is the output
	cmd.Flags().DurationVar(&refresh, "refresh", 10*time.Second, "how often to look for workflows added, changed or removed (0: never)")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if refresh < 0 {
			return errors.New("--refresh must not be negative")
		}
		ctx := cmd.Context()
		s := mcpserver.New(&remote{c: c}, mcpserver.WithImplementation("baton", version()))
		defer s.Close()
		if err := s.Sync(ctx); err != nil {
			return &checkError{err: fmt.Errorf("the workflows of %s could not be listed: %w", c.base, err)}
		}
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		done := make(chan struct{})
		defer func() { <-done }()
		defer cancel() // runs first: stops the refresh, then waits for it
		go func() {
			defer close(done)
			if refresh == 0 {
				return
			}
			tick := time.NewTicker(refresh)
			defer tick.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
					// A server away for a moment leaves the tools as they were.
					_ = s.Sync(ctx)
				}
			}
		}()
		err := s.Serve(ctx, &mcp.IOTransport{Reader: io.NopCloser(cmd.InOrStdin()), Writer: nopWriteCloser{cmd.OutOrStdout()}})
		if errors.Is(err, context.Canceled) || errors.Is(err, io.EOF) {
			return nil
		}
		return err
	}
	return cmd
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// remote is the operations of a server, called through its HTTP API: the
// backend of wfrun mcp.
type remote struct{ c *client }

var _ mcpserver.Backend = (*remote)(nil)

// opsError is a call's error as the operations layer's: an answer keeps its
// code and field, a server that does not answer is unavailable.
func opsError(err error) error {
	if err == nil {
		return nil
	}
	var ae *apiError
	if !errors.As(err, &ae) {
		return ops.Unavailable("the server did not answer: "+err.Error(), err)
	}
	kind := ops.ErrUnavailable
	switch ae.Status {
	case http.StatusBadRequest:
		kind = ops.ErrInvalid
	case http.StatusNotFound:
		kind = ops.ErrNotFound
	case http.StatusConflict:
		kind = ops.ErrConflict
	case http.StatusRequestEntityTooLarge:
		kind = ops.ErrTooLarge
	}
	return &ops.Error{Kind: kind, Code: ae.Code, Field: ae.Field, Message: ae.Message, Err: err}
}

func (r *remote) Start(ctx context.Context, req ops.StartRequest) (ops.Summary, bool, error) {
	body := map[string]any{}
	if req.Input != nil {
		body["input"] = req.Input
	}
	if req.ID != "" {
		body["id"] = req.ID
	}
	if req.Version != 0 {
		body["version"] = req.Version
	}
	var sum ops.Summary
	err := r.c.call(ctx, "POST", "/v1/workflows/"+url.PathEscape(req.Workflow)+"/instances", body, &sum)
	return sum, err == nil, opsError(err)
}

func (r *remote) Get(ctx context.Context, id string) (ops.Instance, error) {
	var in ops.Instance
	err := r.c.call(ctx, "GET", instancePath(id), nil, &in)
	return in, opsError(err)
}

func (r *remote) History(ctx context.Context, id string) ([]record.Entry, error) {
	var out []record.Entry
	err := r.c.call(ctx, "GET", instancePath(id)+"/history", nil, &out)
	return out, opsError(err)
}

func (r *remote) List(ctx context.Context, q ops.ListQuery) (ops.Page, error) {
	v := url.Values{}
	for k, s := range map[string]string{"workflow": q.Workflow, "status": q.Status, "state": q.State, "cursor": q.Cursor} {
		if s != "" {
			v.Set(k, s)
		}
	}
	if q.Limit != 0 {
		v.Set("limit", fmt.Sprint(q.Limit))
	}
	var page struct {
		Instances []ops.Instance `json:"instances"`
		Next      *string        `json:"next"`
	}
	if err := r.c.call(ctx, "GET", "/v1/instances?"+v.Encode(), nil, &page); err != nil {
		return ops.Page{}, opsError(err)
	}
	out := ops.Page{Instances: page.Instances}
	if page.Next != nil {
		out.Next = *page.Next
	}
	return out, nil
}

func (r *remote) Signal(ctx context.Context, id, name string, data map[string]any) (ops.Summary, error) {
	body := map[string]any{}
	if data != nil {
		body["data"] = data
	}
	var sum ops.Summary
	err := r.c.call(ctx, "POST", instancePath(id)+"/signals/"+url.PathEscape(name), body, &sum)
	return sum, opsError(err)
}

func (r *remote) Cancel(ctx context.Context, id, reason string) (ops.Summary, error) {
	body := map[string]any{}
	if reason != "" {
		body["reason"] = reason
	}
	var sum ops.Summary
	err := r.c.call(ctx, "POST", instancePath(id)+"/cancel", body, &sum)
	return sum, opsError(err)
}

// Workflows lists the server's workflows, each with the YAML of its
// current version, whose input declaration makes its start tool.
func (r *remote) Workflows(ctx context.Context) ([]mcpserver.Workflow, error) {
	var list struct {
		Workflows []mcpserver.Workflow `json:"workflows"`
	}
	if err := r.c.call(ctx, "GET", "/v1/workflows", nil, &list); err != nil {
		return nil, opsError(err)
	}
	for k := range list.Workflows {
		wf := &list.Workflows[k]
		var detail struct {
			File   string `json:"file"`
			Source string `json:"source"`
		}
		if err := r.c.call(ctx, "GET", "/v1/workflows/"+url.PathEscape(wf.Name), nil, &detail); err != nil {
			return nil, opsError(err)
		}
		wf.Source = []byte(detail.Source)
		// A file this binary cannot read (a newer server's) still makes a
		// tool: one with no declared fields.
		if w, err := rules.Parse(detail.File, wf.Source); err == nil {
			wf.Input = w.Input
		}
	}
	return list.Workflows, nil
}

// Wait polls the instance, a little less often each time, until it has
// finished or waits, or ctx ends.
func (r *remote) Wait(ctx context.Context, id string) (ops.Instance, error) {
	delay := 20 * time.Millisecond
	var last ops.Instance
	for {
		in, err := r.Get(ctx, id)
		switch {
		case err != nil && ctx.Err() != nil && last.ID != "":
			return last, nil
		case err != nil:
			return in, err
		case in.Finished() || in.Status == ops.StatusWaiting:
			return in, nil
		}
		last = in
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return in, nil
		case <-t.C:
		}
		delay = min(2*delay, time.Second)
	}
}
