package a2aagent

import (
	"encoding/json"
	"testing"
)

// Answers as the official JavaScript SDK's agents write them, in both
// dialects: the seeds of the fuzz tests.
var (
	seedTasks = []string{
		`{"id":"t1","contextId":"i","status":{"state":"TASK_STATE_SUBMITTED","timestamp":"2026-11-27T11:01:15.359Z"},"history":[{"messageId":"k1","contextId":"i","taskId":"t1","role":"ROLE_USER","parts":[{"text":"do it"},{"data":{"input":{"mode":"complete"}}}]}],"metadata":{"usage":{"input_tokens":7,"output_tokens":3,"cost":0.5}}}`,
		`{"id":"t1","contextId":"i","status":{"state":"TASK_STATE_INPUT_REQUIRED","message":{"messageId":"m1","role":"ROLE_AGENT","parts":[{"text":"which year?","mediaType":"text/plain"},{"data":{"choices":[2024,2025]},"mediaType":"application/json"}]}}}`,
		`{"id":"t1","contextId":"i","status":{"state":"TASK_STATE_COMPLETED"},"artifacts":[{"artifactId":"a2","name":"answer","parts":[{"data":{"year":2025,"said":"2025 please"},"mediaType":"application/json"}]}]}`,
		`{"kind":"task","id":"t1","contextId":"i","status":{"state":"completed"},"artifacts":[{"artifactId":"a1","parts":[{"kind":"text","text":"part one"},{"kind":"data","data":{"answer":42}},{"kind":"text","text":"part two"}],"name":"answer"}],"metadata":{"usage":{"input_tokens":7,"output_tokens":3,"cost":0.5}}}`,
		`{"kind":"task","id":"t1","status":{"state":"failed","message":{"kind":"message","messageId":"m","role":"agent","parts":[{"kind":"text","text":"no"}]}}}`,
	}
	seedMessages = []string{
		`{"message":{"messageId":"m","contextId":"i","role":"ROLE_AGENT","parts":[{"text":"hello","mediaType":"text/plain"},{"data":{"echo":{"mode":"message"},"context":null},"mediaType":"application/json"}],"metadata":{"usage":{"input_tokens":7,"output_tokens":3,"cost":0.5}}}}`,
		`{"kind":"message","messageId":"m","role":"agent","parts":[{"kind":"text","text":"hello"},{"kind":"data","data":[1,2]},{"kind":"file","file":{"uri":"http://x"}}],"contextId":"i"}`,
	}
	seedEvents = []string{
		`{"statusUpdate":{"taskId":"t1","status":{"state":"TASK_STATE_CANCELED","timestamp":"2026-11-27T11:04:59.443Z"}}}`,
		`{"artifactUpdate":{"taskId":"t1","artifact":{"artifactId":"a","parts":[{"text":"x"}]}}}`,
		`{"kind":"status-update","taskId":"t1","contextId":"i","status":{"state":"working"},"final":false}`,
		`{"kind":"artifact-update","taskId":"t1","artifact":{"artifactId":"a","parts":[]}}`,
	}
	seedCards = []string{
		`{"name":"peer","supportedInterfaces":[{"url":"http://127.0.0.1:1/rpc","protocolBinding":"JSONRPC","protocolVersion":"1.0","tenant":""}],"version":"1.0.0","capabilities":{"streaming":false,"pushNotifications":false,"extensions":[]}}`,
		`{"name":"peer","url":"http://127.0.0.1:1/rpc","preferredTransport":"JSONRPC","protocolVersion":"0.3.0","version":"1.0.0","capabilities":{"streaming":true}}`,
	}
)

func FuzzDecodeAnswer(f *testing.F) {
	for _, s := range seedTasks {
		f.Add(`{"task":` + s + `}`)
	}
	for _, s := range seedMessages {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ans, err := decodeAnswer([]byte(s))
		if err != nil {
			return
		}
		switch {
		case ans.Task != nil:
			_, _ = taskOutcome(ans.Task)
			_ = settled(ans.Task, "k", pending{TaskID: ans.Task.ID, MessageID: "m"})
		case ans.Message != nil:
			_, _ = messageOutcome(ans.Message)
		default:
			t.Fatalf("decodeAnswer(%s): neither task nor message, and no error", s)
		}
	})
}

func FuzzDecodeTask(f *testing.F) {
	for _, s := range seedTasks {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tk, err := decodeTask([]byte(s))
		if err != nil {
			return
		}
		if tk.ID == "" || tk.State == "" {
			t.Fatalf("decodeTask(%s): got a task without id or state", s)
		}
		out, err := taskOutcome(tk)
		if err == nil && out.Trigger != "completed" && out.Trigger != "input_required" {
			t.Fatalf("decodeTask(%s): got trigger %q", s, out.Trigger)
		}
	})
}

func FuzzDecodeEvent(f *testing.F) {
	for _, s := range seedEvents {
		f.Add(s)
	}
	f.Add(`{"task":` + seedTasks[0] + `}`)
	f.Fuzz(func(t *testing.T, s string) {
		ev, err := decodeEvent([]byte(s))
		if err == nil && ev.Task != nil && ev.Task.State == "" {
			t.Fatalf("decodeEvent(%s): a task event without a state", s)
		}
	})
}

func FuzzDecodeResponse(f *testing.F) {
	f.Add(`{"jsonrpc":"2.0","id":1,"result":{"task":`+seedTasks[0]+`}}`, int64(1))
	f.Add(`{"jsonrpc":"2.0","id":2,"error":{"code":-32001,"message":"Task not found: nope","data":[{"reason":"TASK_NOT_FOUND"}]}}`, int64(2))
	f.Add(`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}`, int64(3))
	f.Fuzz(func(t *testing.T, s string, id int64) {
		res, err := decodeResponse("m", id, []byte(s))
		if err == nil && (res == nil || !json.Valid(res)) {
			t.Fatalf("decodeResponse(%s): no error and result %q", s, res)
		}
	})
}

func FuzzParseCard(f *testing.F) {
	for _, s := range seedCards {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ep, err := parseCard("http://agent.test", []byte(s))
		if err == nil && ep.URL == "" {
			t.Fatalf("parseCard(%s): no error and no URL", s)
		}
	})
}
