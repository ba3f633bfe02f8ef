package mcpagent

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestCompileSchema_LoadsNothing(t *testing.T) {
	file := filepath.Join(t.TempDir(), "s.json")
	if err := os.WriteFile(file, []byte(`{"type":"object"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, ref := range []string{"file://" + file, "http://127.0.0.1:1/s.json"} {
		_, err := compileSchema("srv", "t", map[string]any{"$ref": ref})
		var pe *ProtocolError
		if !errors.As(err, &pe) {
			t.Fatalf("$ref %s: got %v, want a ProtocolError", ref, err)
		}
	}
}

func TestCheckArguments_NoSchemaTakesAnyObject(t *testing.T) {
	s, err := compileSchema("srv", "t", nil)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := checkArguments("t", s, nil)
	if err != nil || string(raw) != "{}" {
		t.Fatalf("got %s, %v; want {}", raw, err)
	}
}

// FuzzCheckArguments checks any arguments against a schema with nested
// constraints: never a panic; either JSON that decodes to the same
// arguments, or an ArgumentsError.
func FuzzCheckArguments(f *testing.F) {
	schema := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"query": map[string]any{"type": "string", "minLength": 1, "pattern": "^[a-z ]+$"},
			"limit": map[string]any{"type": "integer", "minimum": 1, "maximum": 10},
			"tags":  map[string]any{"type": "array", "items": map[string]any{"enum": []any{"a", "b"}}, "uniqueItems": true},
		},
		"required":             []any{"query"},
		"additionalProperties": false,
	}
	s, err := compileSchema("srv", "search", schema)
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range []string{`{"query":"tides","limit":3}`, `{"query":""}`, `{"query":"a","tags":["a","a"]}`, `{"limit":1e400}`, `{}`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var args map[string]any
		if json.Unmarshal(data, &args) != nil {
			return
		}
		raw, err := checkArguments("search", s, args)
		if err != nil {
			var ae *ArgumentsError
			if !errors.As(err, &ae) || ae.Reason == "" {
				t.Fatalf("got %v, want an ArgumentsError with a reason", err)
			}
			return
		}
		var back map[string]any
		if err := json.Unmarshal(raw, &back); err != nil {
			t.Fatalf("sent %s: %v", raw, err)
		}
	})
}
