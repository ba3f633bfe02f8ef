package a2aserver

import (
	"encoding/json"
	"testing"
)

// FuzzDecodeRequest: any body decodes to a request or a JSON-RPC error,
// never a panic; a request has a method served, an id that is a string or
// a number, and params that are an object or none; and its send params,
// read as a send reads them, give content or an error naming a field.
func FuzzDecodeRequest(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {"messageId": "m", "parts": [{"data": {"a": 1}}]}}}`,
		`{"jsonrpc": "2.0", "id": "x", "method": "message/send", "params": {"message": {"messageId": "m", "taskId": "t", "parts": [{"kind": "text", "text": "hi"}]}, "configuration": {"blocking": false}}}`,
		`{"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "t"}}`,
		`{"jsonrpc": "2.0", "id": 1, "method": "tasks/cancel", "params": {"name": "tasks/t"}}`,
		`{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {"messageId": "m", "parts": [{"data": [1]}]}}}`,
		`{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": [1]}`,
		`{"jsonrpc": "2.0", "id": null, "method": "GetTask"}`,
		`[{"jsonrpc": "2.0"}]`, `{"jsonrpc": "2.0", "id": 1, `, ``, `null`, `"x"`, `{"id": 1e400}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		req, e := decodeRequest(data)
		if !json.Valid(req.ID) {
			t.Fatalf("the answer's id %q is not JSON", req.ID)
		}
		if e != nil {
			if e.Code > -32000 || e.Code < -32768 || e.Message == "" {
				t.Fatalf("error %+v", e)
			}
			return
		}
		if _, ok := methods[req.Method]; !ok {
			t.Fatalf("method %q is not served", req.Method)
		}
		if !validID(req.ID) {
			t.Fatalf("id %s", req.ID)
		}
		if req.Params != nil && req.Params[0] != '{' {
			t.Fatalf("params %s", req.Params)
		}
		var p sendParams
		if e := decodeParams(req.Params, &p); e != nil {
			if e.Code != CodeInvalidParams || e.Data["field"] == "" {
				t.Fatalf("params error %+v", e)
			}
			return
		}
		if p.Message != nil {
			c, e := p.Message.read()
			if e != nil {
				if e.Data["field"] == "" {
					t.Fatalf("message error %+v", e)
				}
				return
			}
			if c.value() == nil {
				t.Fatal("a message read gives no value")
			}
		}
	})
}
