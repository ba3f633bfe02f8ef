package a2aagent

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
)

// MaxBody is the largest answer, in bytes, read from an agent: a card, a
// JSON-RPC answer or one event of a stream.
const MaxBody = 4 << 20

// versionHeader names the protocol version a 1.0 request speaks; a 0.3
// request goes without it (servers that speak both take its absence for
// 0.3).
const versionHeader = "A2A-Version"

// rpcID numbers the calls of all agents, for matching answers to calls.
var rpcID atomic.Int64

// rpcResponse is a JSON-RPC 2.0 response.
type rpcResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result"`
	Error   *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// decodeResponse reads a JSON-RPC response to the call numbered id and
// returns its result, or the agent's *RPCError, or an *AnswerError.
func decodeResponse(method string, id int64, b []byte) (json.RawMessage, error) {
	var r rpcResponse
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, &AnswerError{Method: method, Reason: "not a JSON-RPC response: " + err.Error()}
	}
	if r.Error != nil {
		return nil, &RPCError{Method: method, Code: r.Error.Code, Message: excerpt([]byte(r.Error.Message))}
	}
	// A server that cannot tell which call failed answers with id null;
	// a result belongs to the call with its id only.
	if got := strings.TrimSpace(string(r.ID)); got != strconv.FormatInt(id, 10) {
		return nil, &AnswerError{Method: method, Reason: fmt.Sprintf("answer id is %s, not %d", orNone(got), id)}
	}
	if r.Result == nil || string(r.Result) == "null" {
		return nil, &AnswerError{Method: method, Reason: "neither result nor error"}
	}
	return r.Result, nil
}

func orNone(s string) string {
	if s == "" {
		return "missing"
	}
	return s
}

// request builds a JSON-RPC call to the agent's interface.
func (a *Agent) request(ctx context.Context, ep endpoint, method string, params any) (*http.Request, int64, error) {
	id := rpcID.Add(1)
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if err != nil {
		return nil, 0, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ep.URL, bytes.NewReader(body))
	if err != nil {
		return nil, 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	if ep.Dialect == v10 {
		req.Header.Set(versionHeader, "1.0")
	}
	a.headers(ctx, req)
	return req, id, nil
}

// headers sets what every request carries: the token and the trace.
func (a *Agent) headers(ctx context.Context, req *http.Request) {
	if a.token != "" {
		req.Header.Set("Authorization", "Bearer "+a.token)
	}
	if tp, ok := ctx.Value(traceKey{}).(string); ok && tp != "" {
		req.Header.Set("traceparent", tp)
	}
}

// traceKey carries a run's traceparent to the requests of its calls.
type traceKey struct{}

// call makes one JSON-RPC call, bounded by the call timeout, and returns
// its result.
func (a *Agent) call(ctx context.Context, ep endpoint, method string, params any) (json.RawMessage, error) {
	ctx, cancel := context.WithTimeout(ctx, a.callTimeout)
	defer cancel()
	req, id, err := a.request(ctx, ep, method, params)
	if err != nil {
		return nil, err
	}
	resp, err := a.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := readAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		// A server may put a JSON-RPC error in a 4xx answer: its code
		// says more than the status.
		if res, rerr := decodeResponse(method, id, body); resp.StatusCode < 500 && !unauthorized(resp.StatusCode) && res == nil && isRPC(rerr) {
			return nil, rerr
		}
		return nil, &StatusError{URL: ep.URL, Status: resp.StatusCode, Body: excerpt(body)}
	}
	return decodeResponse(method, id, body)
}

func unauthorized(status int) bool { return status == 401 || status == 403 }

func isRPC(err error) bool {
	var re *RPCError
	return errors.As(err, &re)
}

// get reads a document (the card), bounded by the call timeout.
func (a *Agent) get(ctx context.Context, url string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, a.callTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	// Servers that speak both versions serve the 1.0 card to a client
	// that asks for it, and the 0.3 card otherwise.
	req.Header.Set(versionHeader, "1.0")
	a.headers(ctx, req)
	resp, err := a.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := readAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, &StatusError{URL: url, Status: resp.StatusCode, Body: excerpt(body)}
	}
	return body, nil
}

// errTooLarge is an answer over MaxBody.
var errTooLarge = errors.New("a2aagent: answer larger than 4 MiB")

func readAll(r io.Reader) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, MaxBody+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxBody {
		return nil, errTooLarge
	}
	return b, nil
}

// subscribe follows a task's stream of events until one reports a state
// that settles the run (done says which do; a message does), the stream
// ends, or ctx is done.
// It reports whether such an event came; an error means the agent cannot
// stream this task (the caller polls instead).
func (a *Agent) subscribe(ctx context.Context, ep endpoint, taskID string, done func(*task) bool) (bool, error) {
	method := ep.Dialect.subscribe()
	ctx, cancel := context.WithTimeout(ctx, a.streamTimeout)
	defer cancel()
	req, id, err := a.request(ctx, ep, method, map[string]any{"id": taskID})
	if err != nil {
		return false, err
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := a.client.Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := readAll(resp.Body)
		return false, &StatusError{URL: ep.URL, Status: resp.StatusCode, Body: excerpt(body)}
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "text/event-stream" {
		// A plain JSON answer: an error (the task is over, or the agent
		// does not stream after all).
		body, err := readAll(resp.Body)
		if err != nil {
			return false, err
		}
		if _, err := decodeResponse(method, id, body); err != nil {
			return false, err
		}
		return false, &AnswerError{Method: method, Reason: "a result that is not an event stream"}
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), MaxBody)
	var data bytes.Buffer
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) > 0 {
			if v, ok := bytes.CutPrefix(line, []byte("data:")); ok {
				if data.Len() > 0 {
					data.WriteByte('\n')
				}
				data.Write(bytes.TrimPrefix(v, []byte(" ")))
			}
			continue
		}
		if data.Len() == 0 {
			continue
		}
		res, err := decodeResponse(method, id, data.Bytes())
		data.Reset()
		if err != nil {
			return false, err
		}
		ev, err := decodeEvent(res)
		if err != nil {
			return false, &AnswerError{Method: method, Reason: err.Error()}
		}
		if ev.Message || (ev.Task != nil && ev.Task.ID == taskID && done(ev.Task)) {
			return true, nil
		}
	}
	if err := sc.Err(); err != nil && ctx.Err() == nil {
		return false, err
	}
	return false, nil
}

// excerpt is the start of an answer, printable in a history line.
func excerpt(b []byte) string {
	const n = 200
	s := strings.TrimSpace(string(b))
	if len(s) > n {
		s = s[:n] + "…"
	}
	return strings.ToValidUTF8(s, "")
}

func asStatus(err error, se **StatusError) bool { return errors.As(err, se) }
