package mcpagent

import (
	"encoding/json"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/batonhq/baton/registry"
)

// Trigger is the trigger of every run that ends well.
const Trigger = "done"

// outcome maps a tool's answer to the run's outcome: structuredContent as
// the result when it is an object ({value} when it is another JSON value),
// else the text parsed when it is a JSON object, else {text}; isError as a
// failed run of kind tool_error. Usage in _meta.usage counts either way.
func outcome(tool string, r *mcp.CallToolResult) (registry.Outcome, error) {
	var out registry.Outcome
	if r == nil {
		return out, registry.Kind(&ResultError{Tool: tool, Reason: "no result"}, KindInvalidResult)
	}
	usage, err := usageOf(tool, r.Meta)
	if err != nil {
		return out, registry.Kind(err, KindInvalidResult)
	}
	out.Usage = usage
	text := textOf(r.Content)
	if r.IsError {
		if text == "" {
			text = "the tool answered isError with no text"
		}
		return out, registry.Kind(&ToolError{Tool: tool, Message: text}, KindToolError)
	}
	out.Trigger = Trigger
	switch v := r.StructuredContent.(type) {
	case map[string]any:
		out.Result = v
		return out, nil
	case nil:
	default:
		out.Result = map[string]any{"value": v}
		return out, nil
	}
	out.Result = parseText(text)
	return out, nil
}

// parseText is the text as a JSON object when it is one, else {text}; no
// text at all is an empty result.
func parseText(text string) map[string]any {
	if text == "" {
		return map[string]any{}
	}
	if t := strings.TrimSpace(text); strings.HasPrefix(t, "{") {
		var m map[string]any
		if json.Unmarshal([]byte(t), &m) == nil && m != nil {
			return m
		}
	}
	return map[string]any{"text": text}
}

// textOf joins the text parts of the content, a line between two.
func textOf(content []mcp.Content) string {
	var parts []string
	for _, c := range content {
		if t, ok := c.(*mcp.TextContent); ok && t != nil {
			parts = append(parts, t.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// usageOf reads _meta.usage; a result without it used nothing Baton can
// count.
func usageOf(tool string, meta mcp.Meta) (registry.Usage, error) {
	raw, ok := meta["usage"]
	if !ok || raw == nil {
		return registry.Usage{}, nil
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return registry.Usage{}, &ResultError{Tool: tool, Reason: "_meta.usage that is not JSON"}
	}
	var u registry.Usage
	if err := json.Unmarshal(b, &u); err != nil {
		return registry.Usage{}, &ResultError{Tool: tool, Reason: "_meta.usage that is not usage: " + err.Error()}
	}
	return u, nil
}
