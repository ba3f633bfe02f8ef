package mcpagent

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// compileSchema compiles a tool's input schema. It loads nothing: a $ref
// outside the schema fails to compile rather than reading a file or the
// network on a server's word.
func compileSchema(server, tool string, schema any) (*jsonschema.Schema, error) {
	if schema == nil {
		schema = map[string]any{"type": "object"}
	}
	b, err := json.Marshal(schema)
	if err != nil {
		return nil, &ProtocolError{Server: server, Reason: "answered an input schema of " + strconv.Quote(tool) + " that is not JSON"}
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return nil, &ProtocolError{Server: server, Reason: "answered an input schema of " + strconv.Quote(tool) + " that is not JSON"}
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(jsonschema.SchemeURLLoader{})
	c.DefaultDraft(jsonschema.Draft2020)
	const url = "mem:///input.json"
	if err := c.AddResource(url, doc); err != nil {
		return nil, &ProtocolError{Server: server, Reason: "answered an input schema of " + strconv.Quote(tool) + " that does not compile: " + err.Error()}
	}
	s, err := c.Compile(url)
	if err != nil {
		return nil, &ProtocolError{Server: server, Reason: "answered an input schema of " + strconv.Quote(tool) + " that does not compile: " + err.Error()}
	}
	return s, nil
}

// checkArguments encodes the arguments and checks them against the tool's
// input schema; it returns the JSON sent.
func checkArguments(tool string, s *jsonschema.Schema, args map[string]any) (json.RawMessage, error) {
	if args == nil {
		args = map[string]any{}
	}
	b, err := json.Marshal(args)
	if err != nil {
		return nil, &ArgumentsError{Tool: tool, Reason: "not JSON: " + err.Error()}
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return nil, &ArgumentsError{Tool: tool, Reason: "not JSON: " + err.Error()}
	}
	if err := s.Validate(doc); err != nil {
		var ve *jsonschema.ValidationError
		if !errors.As(err, &ve) {
			return nil, &ArgumentsError{Tool: tool, Reason: err.Error()}
		}
		return nil, &ArgumentsError{Tool: tool, Field: field(ve), Reason: reasons(ve)}
	}
	return b, nil
}

// field is the JSON pointer of the first value the schema refused.
func field(ve *jsonschema.ValidationError) string {
	for len(ve.Causes) > 0 {
		ve = ve.Causes[0]
	}
	if len(ve.InstanceLocation) == 0 {
		return ""
	}
	return "/" + strings.Join(ve.InstanceLocation, "/")
}

// reasons is the validator's list of problems on one line: its first line
// names the schema's made-up address, which says nothing to a reader.
func reasons(ve *jsonschema.ValidationError) string {
	var out []string
	for line := range strings.Lines(ve.Error()) {
		if l := strings.TrimSpace(line); strings.HasPrefix(l, "- ") {
			out = append(out, strings.TrimPrefix(l, "- "))
		}
	}
	if len(out) == 0 {
		return strings.TrimSpace(ve.Error())
	}
	return strings.Join(out, "; ")
}
