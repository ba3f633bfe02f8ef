package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/batonhq/baton/ops"
)

// addTools adds the tools every server has; the start tools follow the
// workflows (Sync).
func (s *Server) addTools() {
	id := describe("string", "the instance's id")
	s.sdk.AddTool(&mcp.Tool{
		Name:         "get_instance",
		Description:  "Returns an instance: its status, state, context, outcome, error and usage.",
		InputSchema:  object(map[string]any{"id": id}, "id"),
		OutputSchema: fullSchema,
	}, s.handle(func(ctx context.Context, a *args) (any, error) {
		id, err := a.str("id", true)
		if err == nil {
			err = a.done()
		}
		if err != nil {
			return nil, err
		}
		return s.back.Get(ctx, id)
	}))
	s.sdk.AddTool(&mcp.Tool{
		Name:        "list_instances",
		Description: "Lists instances, newest first, a page at a time: pass the answer's next as cursor for the next page.",
		InputSchema: object(map[string]any{
			"workflow": describe("string", "only the instances of this workflow"),
			"status":   map[string]any{"type": "string", "enum": ops.Statuses, "description": "only the instances with this status"},
			"state":    describe("string", "only the instances in this state"),
			"limit":    map[string]any{"type": "integer", "minimum": 1, "maximum": ops.MaxLimit, "description": fmt.Sprintf("the page's size (default %d)", ops.DefaultLimit)},
			"cursor":   describe("string", "the next of the previous page"),
		}),
		OutputSchema: pageSchema,
	}, s.handle(s.list))
	s.sdk.AddTool(&mcp.Tool{
		Name:        "signal_instance",
		Description: "Sends a signal, with its data, to an instance that waits for it.",
		InputSchema: object(map[string]any{
			"id":     id,
			"signal": describe("string", "the signal's name, one the instance's wait lists"),
			"data":   describe("object", "the signal's data"),
		}, "id", "signal"),
		OutputSchema: summarySchema,
	}, s.handle(func(ctx context.Context, a *args) (any, error) {
		id, err := a.str("id", true)
		var name string
		var data map[string]any
		if err == nil {
			name, err = a.str("signal", true)
		}
		if err == nil {
			data, err = a.obj("data")
		}
		if err == nil {
			err = a.done()
		}
		if err != nil {
			return nil, err
		}
		return s.back.Signal(ctx, id, name, data)
	}))
	s.sdk.AddTool(&mcp.Tool{
		Name:        "cancel_instance",
		Description: "Cancels an instance that has not finished.",
		InputSchema: object(map[string]any{
			"id":     id,
			"reason": describe("string", "why, kept on the instance"),
		}, "id"),
		OutputSchema: summarySchema,
	}, s.handle(func(ctx context.Context, a *args) (any, error) {
		id, err := a.str("id", true)
		var reason string
		if err == nil {
			reason, err = a.str("reason", false)
		}
		if err == nil {
			err = a.done()
		}
		if err != nil {
			return nil, err
		}
		return s.back.Cancel(ctx, id, reason)
	}))
	s.sdk.AddTool(&mcp.Tool{
		Name:         "list_workflows",
		Description:  "Lists the workflows served and their versions.",
		InputSchema:  object(map[string]any{}),
		OutputSchema: workflowsSchema,
	}, s.handle(func(ctx context.Context, a *args) (any, error) {
		if err := a.done(); err != nil {
			return nil, err
		}
		wfs, err := s.back.Workflows(ctx)
		if err != nil {
			return nil, err
		}
		if wfs == nil {
			wfs = []Workflow{}
		}
		return map[string]any{"workflows": wfs}, nil
	}))
}

func (s *Server) list(ctx context.Context, a *args) (any, error) {
	var q ops.ListQuery
	var err error
	for _, f := range []struct {
		name string
		to   *string
	}{{"workflow", &q.Workflow}, {"status", &q.Status}, {"state", &q.State}, {"cursor", &q.Cursor}} {
		if *f.to, err = a.str(f.name, false); err != nil {
			return nil, err
		}
	}
	limit, given, err := a.num("limit")
	switch {
	case err != nil:
		return nil, err
	case given && (limit != math.Trunc(limit) || limit < 1 || limit > ops.MaxLimit):
		return nil, &ArgumentError{Field: "limit", Reason: fmt.Sprintf("must be a whole number from 1 to %d", ops.MaxLimit)}
	}
	q.Limit = int(limit)
	if err := a.done(); err != nil {
		return nil, err
	}
	page, err := s.back.List(ctx, q)
	if err != nil {
		return nil, err
	}
	var next *string
	if page.Next != "" {
		next = &page.Next
	}
	if page.Instances == nil {
		page.Instances = []ops.Instance{}
	}
	return map[string]any{"instances": page.Instances, "next": next}, nil
}

// start is the handler of workflow's start tool: the arguments but the
// id and the wait are the input.
func (s *Server) start(workflow string, sa startArgs) mcp.ToolHandler {
	return s.handle(func(ctx context.Context, a *args) (any, error) {
		req := ops.StartRequest{Workflow: workflow}
		var err error
		if sa.id != "" {
			if req.ID, err = a.str(sa.id, false); err != nil {
				return nil, err
			}
		}
		var wait float64
		if sa.wait != "" {
			var given bool
			wait, given, err = a.num(sa.wait)
			switch {
			case err != nil:
				return nil, err
			case given && (wait < 0 || wait > MaxWait):
				return nil, &ArgumentError{Field: sa.wait, Reason: fmt.Sprintf("must be from 0 to %d seconds", MaxWait)}
			}
		}
		req.Input = a.rest()
		sum, _, err := s.back.Start(ctx, req)
		if err != nil || wait <= 0 {
			return sum, topLevel(err)
		}
		wctx, cancel := context.WithTimeout(ctx, time.Duration(wait*float64(time.Second)))
		defer cancel()
		return s.back.Wait(wctx, sum.ID)
	})
}

// topLevel names an input field as the start tool's argument it is:
// "amount", not "input.amount".
func topLevel(err error) error {
	var oe *ops.Error
	if !errors.As(err, &oe) {
		return err
	}
	field, ok := strings.CutPrefix(oe.Field, "input.")
	if !ok {
		return err
	}
	e := *oe
	e.Field = field
	if rest, ok := strings.CutPrefix(oe.Message, oe.Field); ok {
		e.Message = field + rest
	}
	return &e
}

// handle is a tool's handler: the arguments read, fn called, its answer
// as structured content and as text, a refusal as an isError result.
func (s *Server) handle(fn func(context.Context, *args) (any, error)) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		a, err := parseArgs(req.Params.Arguments)
		var out any
		if err == nil {
			out, err = fn(ctx, a)
		}
		if err != nil {
			return errorResult(err), nil
		}
		data, err := encode(out)
		if err != nil {
			return errorResult(err), nil
		}
		return &mcp.CallToolResult{
			Content:           []mcp.Content{&mcp.TextContent{Text: string(data)}},
			StructuredContent: json.RawMessage(data),
		}, nil
	}
}

// errorResult is err as an isError result whose text is the HTTP API's
// error object.
func errorResult(err error) *mcp.CallToolResult {
	data, _ := encode(map[string]any{"error": apiErrorOf(err)})
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: string(data)}}}
}

// encode is v as the HTTP API writes it: no HTML escaping.
func encode(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("mcpserver: the answer could not be encoded: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// args are a tool call's arguments; each is taken once, and done refuses
// the ones left.
type args struct {
	m map[string]any
}

func parseArgs(raw json.RawMessage) (*args, error) {
	a := &args{m: map[string]any{}}
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return a, nil
	}
	if err := json.Unmarshal(raw, &a.m); err != nil || a.m == nil {
		return nil, &ArgumentError{Field: "arguments", Reason: "must be an object"}
	}
	return a, nil
}

func (a *args) take(name string) (any, bool) {
	v, ok := a.m[name]
	delete(a.m, name)
	return v, ok && v != nil
}

func (a *args) str(name string, required bool) (string, error) {
	v, ok := a.take(name)
	if !ok {
		if required {
			return "", &ArgumentError{Field: name, Reason: "is required"}
		}
		return "", nil
	}
	s, isStr := v.(string)
	switch {
	case !isStr:
		return "", &ArgumentError{Field: name, Reason: "must be a string"}
	case required && s == "":
		return "", &ArgumentError{Field: name, Reason: "is required"}
	}
	return s, nil
}

func (a *args) num(name string) (float64, bool, error) {
	v, ok := a.take(name)
	if !ok {
		return 0, false, nil
	}
	n, isNum := v.(float64)
	if !isNum {
		return 0, false, &ArgumentError{Field: name, Reason: "must be a number"}
	}
	return n, true, nil
}

func (a *args) obj(name string) (map[string]any, error) {
	v, ok := a.take(name)
	if !ok {
		return nil, nil
	}
	m, isMap := v.(map[string]any)
	if !isMap {
		return nil, &ArgumentError{Field: name, Reason: "must be an object"}
	}
	return m, nil
}

// rest takes the arguments left: nil when none.
func (a *args) rest() map[string]any {
	if len(a.m) == 0 {
		return nil
	}
	m := a.m
	a.m = map[string]any{}
	return m
}

// done refuses an argument the tool does not know, the first by name.
func (a *args) done() error {
	if len(a.m) == 0 {
		return nil
	}
	names := make([]string, 0, len(a.m))
	for k := range a.m {
		names = append(names, k)
	}
	slices.Sort(names)
	return &ArgumentError{Field: names[0], Reason: "is not a known argument" + known(names)}
}

func known(names []string) string {
	if len(names) == 1 {
		return ""
	}
	return " (nor " + strings.Join(names[1:], ", ") + ")"
}
