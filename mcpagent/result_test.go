package mcpagent

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/batonhq/baton/registry"
)

func TestOutcome_MapsEachShape(t *testing.T) {
	cases := []struct {
		name   string
		answer string
		result map[string]any
		usage  registry.Usage
		kind   string // "" for a run that ends well
	}{
		{"structured wins over text", `{"content":[{"type":"text","text":"{\"a\":1}"}],"structuredContent":{"b":2}}`, map[string]any{"b": 2.0}, registry.Usage{}, ""},
		{"structured array", `{"content":[],"structuredContent":[1,2]}`, map[string]any{"value": []any{1.0, 2.0}}, registry.Usage{}, ""},
		{"text object", `{"content":[{"type":"text","text":" {\"a\": [1]} "}]}`, map[string]any{"a": []any{1.0}}, registry.Usage{}, ""},
		{"text array", `{"content":[{"type":"text","text":"[1]"}]}`, map[string]any{"text": "[1]"}, registry.Usage{}, ""},
		{"text object then more", `{"content":[{"type":"text","text":"{\"a\":1} and more"}]}`, map[string]any{"text": "{\"a\":1} and more"}, registry.Usage{}, ""},
		{"text object closed twice", `{"content":[{"type":"text","text":"{\"a\":1}}"}]}`, map[string]any{"text": "{\"a\":1}}"}, registry.Usage{}, ""},
		{"two texts", `{"content":[{"type":"text","text":"one"},{"type":"image","data":"AA==","mimeType":"image/png"},{"type":"text","text":"two"}]}`, map[string]any{"text": "one\ntwo"}, registry.Usage{}, ""},
		{"no text", `{"content":[{"type":"image","data":"AA==","mimeType":"image/png"}]}`, map[string]any{}, registry.Usage{}, ""},
		{"usage", `{"content":[],"_meta":{"usage":{"input_tokens":3,"output_tokens":4,"cost":0.5,"model":"m"}}}`, map[string]any{}, registry.Usage{InputTokens: 3, OutputTokens: 4, Cost: 0.5, Model: "m"}, ""},
		{"usage with isError", `{"content":[{"type":"text","text":"down"}],"isError":true,"_meta":{"usage":{"cost":1}}}`, nil, registry.Usage{Cost: 1}, KindToolError},
		{"usage not usage", `{"content":[],"_meta":{"usage":{"input_tokens":"many"}}}`, nil, registry.Usage{}, KindInvalidResult},
		{"usage fractional tokens", `{"content":[],"_meta":{"usage":{"input_tokens":1.5}}}`, nil, registry.Usage{}, KindInvalidResult},
		{"isError without text", `{"content":[],"isError":true}`, nil, registry.Usage{}, KindToolError},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var r mcp.CallToolResult
			if err := json.Unmarshal([]byte(c.answer), &r); err != nil {
				t.Fatalf("the answer does not decode: %v", err)
			}
			out, err := outcome("t", &r)
			if got := registry.KindOf(err); got != c.kind {
				t.Fatalf("kind: got %q, want %q (%v)", got, c.kind, err)
			}
			if c.kind == "" && out.Trigger != Trigger {
				t.Errorf("trigger: got %q, want %q", out.Trigger, Trigger)
			}
			if !reflect.DeepEqual(out.Result, c.result) {
				t.Errorf("result: got %#v, want %#v", out.Result, c.result)
			}
			if out.Usage != c.usage {
				t.Errorf("usage: got %+v, want %+v", out.Usage, c.usage)
			}
		})
	}
}

func TestOutcome_NoResult(t *testing.T) {
	_, err := outcome("t", nil)
	var re *ResultError
	if !errors.As(err, &re) || registry.KindOf(err) != KindInvalidResult {
		t.Fatalf("got %v, want a ResultError of kind invalid_result", err)
	}
}

// FuzzOutcome maps any answer the SDK decodes: never a panic, and either a
// run that ends well with a result that encodes, or a typed failure.
func FuzzOutcome(f *testing.F) {
	for _, s := range []string{
		`{"content":[{"type":"text","text":"{\"a\":1}"}],"structuredContent":{"b":2}}`,
		`{"content":[{"type":"text","text":"plain"}]}`,
		`{"content":[],"structuredContent":"s"}`,
		`{"content":[],"structuredContent":null,"isError":true}`,
		`{"content":[{"type":"text","text":"x"}],"_meta":{"usage":{"input_tokens":1,"cost":-1}}}`,
		`{"content":[],"_meta":{"usage":[1]}}`,
		`{"content":[{"type":"text","text":"{\"a\":{\"b\":[null,true,1e308]}}"}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, answer []byte) {
		var r mcp.CallToolResult
		if json.Unmarshal(answer, &r) != nil {
			return
		}
		out, err := outcome("t", &r)
		if err != nil {
			k := registry.KindOf(err)
			switch k {
			case KindToolError, KindInvalidResult:
			default:
				t.Fatalf("kind: got %q, want tool_error or invalid_result (%v)", k, err)
			}
			if r.IsError && k != KindToolError && !errors.As(err, new(*ResultError)) {
				t.Fatalf("isError: got %v", err)
			}
			return
		}
		if r.IsError {
			t.Fatal("isError: got a run that ended well")
		}
		if out.Trigger != Trigger || out.Result == nil {
			t.Fatalf("got trigger %q, result %v; want done with a result", out.Trigger, out.Result)
		}
		if _, err := json.Marshal(out.Result); err != nil {
			t.Fatalf("the result does not encode: %v", err)
		}
	})
}
