package a2aserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
)

// dialect is the protocol version a request speaks, told by its method's
// name: the shapes of messages, tasks and events differ.
type dialect int

const (
	v10 dialect = iota // 1.0: SendMessage, TASK_STATE_WORKING, {"task": …}
	v03                // 0.3: message/send, working, {"kind": "task", …}
)

// op is what a method asks for, whatever its dialect.
type op int

const (
	opSend op = iota
	opStream
	opGet
	opCancel
	opSubscribe
)

// methods are the methods served, in both dialects.
var methods = map[string]struct {
	op op
	d  dialect
}{
	"SendMessage":          {opSend, v10},
	"SendStreamingMessage": {opStream, v10},
	"GetTask":              {opGet, v10},
	"CancelTask":           {opCancel, v10},
	"SubscribeToTask":      {opSubscribe, v10},
	"message/send":         {opSend, v03},
	"message/stream":       {opStream, v03},
	"tasks/get":            {opGet, v03},
	"tasks/cancel":         {opCancel, v03},
	"tasks/resubscribe":    {opSubscribe, v03},
}

// request is a decoded JSON-RPC request.
type request struct {
	// ID is the request's id as sent (a string or a number), echoed in
	// the answer.
	ID     json.RawMessage
	Method string
	Op     op
	D      dialect
	Params json.RawMessage // an object, or nil
}

// nullID is the id of an answer to a request whose id could not be read.
var nullID = json.RawMessage("null")

// decodeRequest reads a JSON-RPC 2.0 request: -32700 for a body that is
// not JSON, -32600 for JSON that is not a request (a batch, a missing or
// wrong jsonrpc, method or id), -32601 for a method not served, -32602
// for params that are not an object. The request's id is returned as soon
// as it is read, so that an error after it answers to it.
func decodeRequest(data []byte) (request, *Error) {
	req := request{ID: nullID}
	if !json.Valid(data) {
		return req, rpcError(CodeParseError, "parse error: the body is not valid JSON")
	}
	var env map[string]json.RawMessage
	if trimmed := bytes.TrimSpace(data); len(trimmed) == 0 || trimmed[0] != '{' || json.Unmarshal(trimmed, &env) != nil {
		return req, rpcError(CodeInvalidRequest, "invalid request: the body must be one JSON-RPC request object (batches are not served)")
	}
	if !validID(env["id"]) {
		return req, rpcError(CodeInvalidRequest, "invalid request: id must be a string or a number (notifications are not served)")
	}
	req.ID = env["id"]
	var version, method string
	if json.Unmarshal(env["jsonrpc"], &version) != nil || version != "2.0" {
		return req, rpcError(CodeInvalidRequest, `invalid request: jsonrpc must be "2.0"`)
	}
	if json.Unmarshal(env["method"], &method) != nil || method == "" {
		return req, rpcError(CodeInvalidRequest, "invalid request: method must be a non-empty string")
	}
	req.Method = method
	m, ok := methods[method]
	if !ok {
		return req, rpcError(CodeMethodNotFound, "method not found: "+quote(method))
	}
	req.Op, req.D = m.op, m.d
	if p := bytes.TrimSpace(env["params"]); len(p) > 0 && !bytes.Equal(p, []byte("null")) {
		if p[0] != '{' {
			return req, invalidParams("params", "invalid params: params must be an object")
		}
		req.Params = p
	}
	return req, nil
}

// validID reports whether id is a JSON string or number.
func validID(id json.RawMessage) bool {
	id = bytes.TrimSpace(id)
	if len(id) == 0 {
		return false
	}
	switch c := id[0]; {
	case c == '"':
		var s string
		return json.Unmarshal(id, &s) == nil
	case c == '-' || c >= '0' && c <= '9':
		var n json.Number
		return json.Unmarshal(id, &n) == nil
	}
	return false
}

// response is a JSON-RPC answer: Result or Error.
type response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   *Error          `json:"error,omitempty"`
}

// decodeParams reads params into v, an error naming the field whose type
// is wrong.
func decodeParams(params json.RawMessage, v any) *Error {
	if params == nil {
		return nil
	}
	if err := json.Unmarshal(params, v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return invalidParams(te.Field, "invalid params: "+te.Field+" must be "+jsonKind(te.Type.Kind().String()))
		}
		return invalidParams("params", "invalid params: "+err.Error())
	}
	return nil
}

func quote(s string) string {
	const most = 100
	if len(s) > most {
		s = s[:most] + "…"
	}
	b, _ := json.Marshal(s)
	return string(b)
}

// jsonKind names a Go kind in JSON's words.
func jsonKind(kind string) string {
	switch {
	case kind == "string":
		return "a string"
	case kind == "bool":
		return "a boolean"
	case kind == "map" || kind == "struct" || kind == "interface":
		return "an object"
	case kind == "slice" || kind == "array":
		return "an array"
	case strings.HasPrefix(kind, "int") || strings.HasPrefix(kind, "uint") || strings.HasPrefix(kind, "float"):
		return "a number"
	}
	return "a " + kind
}
